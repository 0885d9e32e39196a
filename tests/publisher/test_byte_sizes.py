from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from volume_quota.byte_sizes import format_byte_size, parse_byte_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("1073741824", 1073741824),
        ("512B", 512),
        ("5GiB", 5 * 1024**3),
        ("5gib", 5 * 1024**3),
        ("5Gi", 5 * 1024**3),
        ("1.5GiB", 3 * 1024**3 // 2),
        ("500MB", 500_000_000),
        ("500M", 500_000_000),
        ("2 TiB", 2 * 1024**4),
        ("1kB", 1000),
        ("16Mi", 16 * 1024**2),
        (" 3PB ", 3 * 1000**5),
    ],
)
def test_parses_sizes(text: str, expected: int) -> None:
    assert parse_byte_size(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not a byte size"),
        ("GiB", "not a byte size"),
        ("-5GiB", "not a byte size"),
        ("5XB", "unknown unit 'XB'"),
        ("0.1KiB", "not a whole number of bytes"),
        ("1.5", "not a whole number of bytes"),
        ("5 G i B", "not a byte size"),
        ("1e9", "not a byte size"),
    ],
)
def test_refuses_non_sizes(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_byte_size(text)


units = st.sampled_from(
    [
        ("KiB", 1024),
        ("MiB", 1024**2),
        ("GiB", 1024**3),
        ("TiB", 1024**4),
        ("KB", 1000),
        ("GB", 10**9),
    ]
)


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_plain_integers_are_bytes(size: int) -> None:
    assert parse_byte_size(str(size)) == size
    assert parse_byte_size(f"{size}B") == size


@given(st.integers(min_value=0, max_value=10**6), units)
def test_units_multiply(count: int, unit: tuple[str, int]) -> None:
    name, multiplier = unit
    assert parse_byte_size(f"{count}{name}") == count * multiplier
    assert parse_byte_size(f"{count}{name.lower()}") == count * multiplier


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_format_round_trips(size: int) -> None:
    text = format_byte_size(size)
    assert parse_byte_size(text) == size
    assert len(text) <= len(str(size)) + 1


def test_format_picks_the_largest_exact_unit() -> None:
    assert format_byte_size(5 * 1024**3) == "5GiB"
    assert format_byte_size(1536) == "1536B"
    assert format_byte_size(3 * 1024**2) == "3MiB"
    assert format_byte_size(0) == "0B"
    with pytest.raises(ValueError, match="negative"):
        format_byte_size(-1)
