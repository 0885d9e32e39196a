from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consumer.limits import free_bytes_threshold, judge_free_space, judge_volume
from schemas.decision import QuotaState
from schemas.snapshot import (
    ConsumedSpaceLimit,
    LimitType,
    MinFreeBytesLimit,
    MinFreePercentageLimit,
    VolumeUsage,
)

GIB = 1024**3


def test_each_limit_type_becomes_a_free_bytes_threshold() -> None:
    capacity = 100 * GIB
    consumed_limit = ConsumedSpaceLimit(type=LimitType.CONSUMED_SPACE, level=90 * GIB)
    assert free_bytes_threshold(consumed_limit, capacity) == 10 * GIB
    bytes_limit = MinFreeBytesLimit(type=LimitType.MIN_FREE_BYTES, level=5 * GIB)
    assert free_bytes_threshold(bytes_limit, capacity) == 5 * GIB
    percent_limit = MinFreePercentageLimit(type=LimitType.MIN_FREE_PERCENTAGE, level=15)
    assert free_bytes_threshold(percent_limit, capacity) == pytest.approx(15 * GIB)


@pytest.mark.parametrize(
    ("free", "expected_state", "expected_factor"),
    [
        (1000, QuotaState.OPEN, 1.0),
        (201, QuotaState.OPEN, 1.0),
        (200, QuotaState.THROTTLE, 1.0),  # at the soft threshold: throttled, not yet slowed
        (150, QuotaState.THROTTLE, 0.5),
        (101, QuotaState.THROTTLE, 0.01),
        (100, QuotaState.PAUSE, 0.0),  # at the hard threshold: paused
        (0, QuotaState.PAUSE, 0.0),
    ],
)
def test_free_space_against_soft_200_and_hard_100(
    free: int, expected_state: QuotaState, expected_factor: float
) -> None:
    state, factor = judge_free_space(free, soft_threshold=200, hard_threshold=100)
    assert state is expected_state
    assert factor == pytest.approx(expected_factor)


def test_soft_not_above_hard_means_no_throttle_zone() -> None:
    assert judge_free_space(150, soft_threshold=100, hard_threshold=100) == (QuotaState.OPEN, 1.0)
    assert judge_free_space(150, soft_threshold=50, hard_threshold=160)[0] is QuotaState.PAUSE


def test_volume_override_beats_broker_limit() -> None:
    broker_soft = MinFreePercentageLimit(type=LimitType.MIN_FREE_PERCENTAGE, level=20)
    broker_hard = MinFreePercentageLimit(type=LimitType.MIN_FREE_PERCENTAGE, level=10)
    strict_volume = VolumeUsage.model_validate(
        {
            "volumeName": "v",
            "capacity": 1000,
            "consumed": 700,
            "hardLimit": {"type": "MinFreeBytes", "level": 300},
        }
    )
    verdict = judge_volume(strict_volume, broker_soft, broker_hard)
    assert verdict.state is QuotaState.PAUSE
    assert verdict.hard_threshold == 300
    assert verdict.soft_threshold == pytest.approx(200)


thresholds = st.floats(min_value=0, max_value=1e15, allow_nan=False)


@given(free=thresholds, soft=thresholds, hard=thresholds)
def test_factor_is_within_zero_and_one_and_matches_the_state(
    free: float, soft: float, hard: float
) -> None:
    state, factor = judge_free_space(free, soft, hard)
    assert 0.0 <= factor <= 1.0
    assert (state is QuotaState.PAUSE) == (factor == 0.0)
    if state is QuotaState.OPEN:
        assert factor == 1.0


@given(soft=thresholds, hard=thresholds, a=thresholds, b=thresholds)
def test_less_free_space_never_loosens_the_quota(
    soft: float, hard: float, a: float, b: float
) -> None:
    lower, higher = sorted((a, b))
    severity = {QuotaState.OPEN: 0, QuotaState.THROTTLE: 1, QuotaState.PAUSE: 2}
    low_state, low_factor = judge_free_space(lower, soft, hard)
    high_state, high_factor = judge_free_space(higher, soft, hard)
    assert low_factor <= high_factor
    assert severity[low_state] >= severity[high_state]


@given(
    hard=st.integers(0, 2**50),
    zone=st.integers(1, 2**40),
    data=st.data(),
)
def test_throttle_factor_is_the_share_of_the_zone_left(
    hard: int, zone: int, data: st.DataObject
) -> None:
    bytes_above_hard = data.draw(st.integers(1, zone))
    state, factor = judge_free_space(hard + bytes_above_hard, hard + zone, hard)
    assert state is QuotaState.THROTTLE
    assert factor == pytest.approx(bytes_above_hard / zone, rel=1e-9)
