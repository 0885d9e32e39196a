from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.snapshot import (
    ConsumedSpaceLimit,
    LimitType,
    MinFreeBytesLimit,
    MinFreePercentageLimit,
)
from volume_quota.limit_parsing import (
    format_limit,
    parse_limit,
    parse_volume_limit_override,
    volume_limit_overrides_from_config,
)


def test_parses_each_limit_type() -> None:
    assert parse_limit("MinFreePercentage:15") == MinFreePercentageLimit(
        type=LimitType.MIN_FREE_PERCENTAGE, level=15.0
    )
    assert parse_limit("MinFreeBytes:5GiB") == MinFreeBytesLimit(
        type=LimitType.MIN_FREE_BYTES, level=5 * 1024**3
    )
    assert parse_limit("ConsumedSpace:900GB") == ConsumedSpaceLimit(
        type=LimitType.CONSUMED_SPACE, level=900 * 10**9
    )


def test_type_names_ignore_case_and_percent_sign_is_allowed() -> None:
    assert parse_limit("minfreepercentage: 12.5%").level == 12.5
    assert parse_limit("MINFREEBYTES:1024").level == 1024


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("MinFreePercentage", "expected TYPE:LEVEL"),
        ("MinFreePercentage:", "expected TYPE:LEVEL"),
        ("MaxUsed:15", "unknown limit type 'MaxUsed'"),
        ("MinFreePercentage:150", "between 0 and 100"),
        ("MinFreePercentage:-1", "between 0 and 100"),
        ("MinFreePercentage:nan", "between 0 and 100"),
        ("MinFreePercentage:lots", "not a percentage"),
        ("MinFreeBytes:5 apples", "unknown unit 'apples'"),
        ("MinFreeBytes:9EiB", "unknown unit"),
        ("MinFreeBytes:16PiB", None),
        ("ConsumedSpace:9223372036854775808", "out of range"),
    ],
)
def test_refuses_bad_limits(text: str, message: str | None) -> None:
    if message is None:
        assert parse_limit(text).level == 16 * 1024**5
        return
    with pytest.raises(ValueError, match=message):
        parse_limit(text)


@given(st.floats(min_value=0, max_value=100, allow_nan=False))
def test_percentages_round_trip(level: float) -> None:
    limit = parse_limit(f"MinFreePercentage:{level!r}")
    assert limit.level == level
    assert parse_limit(format_limit(limit)) == limit


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_byte_levels_round_trip(level: int) -> None:
    limit = parse_limit(f"MinFreeBytes:{level}")
    assert parse_limit(format_limit(limit)) == limit


def test_format_uses_binary_units_where_exact() -> None:
    assert format_limit(parse_limit("MinFreeBytes:5GiB")) == "MinFreeBytes:5GiB"
    assert format_limit(parse_limit("ConsumedSpace:1000")) == "ConsumedSpace:1000B"
    assert format_limit(parse_limit("MinFreePercentage:15")) == "MinFreePercentage:15"
    assert format_limit(parse_limit("MinFreePercentage:12.5")) == "MinFreePercentage:12.5"


def test_parses_volume_overrides() -> None:
    override = parse_volume_limit_override("/mnt/data0:soft=MinFreePercentage:20")
    assert override.volume == "/mnt/data0"
    assert override.soft_limit == parse_limit("MinFreePercentage:20")
    assert override.hard_limit is None
    both = parse_volume_limit_override(
        "/dev/nvme1n1:soft=MinFreePercentage:20,hard=MinFreeBytes:1GiB"
    )
    assert both.volume == "/dev/nvme1n1"
    assert both.hard_limit == parse_limit("MinFreeBytes:1GiB")


def test_a_volume_path_may_contain_colons() -> None:
    override = parse_volume_limit_override("/mnt/a:b:hard=MinFreeBytes:1")
    assert override.volume == "/mnt/a:b"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("/mnt/data0", "is not a volume limit"),
        ("/mnt/data0:medium=MinFreeBytes:1", "is not a volume limit"),
        ("/mnt/data0:soft=MinFreeBytes:1,soft=MinFreeBytes:2", "sets the soft limit twice"),
        ("/mnt/data0:soft=MinFreeBytes:1,warm=MinFreeBytes:2", "neither soft nor hard"),
        ("/mnt/data0:soft=Nope:1", "unknown limit type"),
    ],
)
def test_refuses_bad_overrides(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_volume_limit_override(text)


def test_overrides_from_each_config_shape() -> None:
    from_env = volume_limit_overrides_from_config(
        "/a:soft=MinFreePercentage:20; /b:hard=MinFreeBytes:1GiB;"
    )
    assert [override.volume for override in from_env] == ["/a", "/b"]
    from_list = volume_limit_overrides_from_config(["/a:soft=MinFreePercentage:20"])
    assert from_list[0].soft_limit == parse_limit("MinFreePercentage:20")
    from_table = volume_limit_overrides_from_config(
        {"/a": {"soft": "MinFreePercentage:20", "hard": "MinFreeBytes:1GiB"}}
    )
    assert from_table[0].hard_limit == parse_limit("MinFreeBytes:1GiB")
    assert volume_limit_overrides_from_config(from_list) == from_list


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (42, "not a list of volume limits"),
        ([42], "is not a volume limit"),
        ({"/a": "MinFreeBytes:1"}, "expected a table"),
        ({"/a": {"warm": "MinFreeBytes:1"}}, "expected a table"),
        ({"/a": {"soft": 5}}, "must be text"),
    ],
)
def test_refuses_bad_override_config(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        volume_limit_overrides_from_config(value)
