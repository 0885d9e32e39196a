from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from publisher.topic_requirements import seconds_to_milliseconds
from volume_quota.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10", 10.0),
        ("0.5", 0.5),
        ("500ms", 0.5),
        ("1s", 1.0),
        ("5m", 300.0),
        ("5min", 300.0),
        ("24h", 86400.0),
        ("7d", 604800.0),
        (" 2 H ", 7200.0),
        (".25s", 0.25),
    ],
)
def test_parses_durations(text: str, seconds: float) -> None:
    assert math.isclose(parse_duration(text), seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not a duration"),
        ("fast", "not a duration"),
        ("5y", "unknown unit 'y'"),
        ("-1s", "not a duration"),
    ],
)
def test_refuses_non_durations(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_duration(text)


@given(st.integers(min_value=0, max_value=10**9))
def test_milliseconds_and_seconds_agree(milliseconds: int) -> None:
    assert seconds_to_milliseconds(parse_duration(f"{milliseconds}ms")) == milliseconds
