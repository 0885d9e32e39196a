from __future__ import annotations

import pytest

from consumer.broker_assessment import assess_broker
from schemas.decision import QuotaState
from tests.snapshot_factory import make_snapshot, volume


def test_a_broker_with_every_volume_fine_is_open() -> None:
    assessment = assess_broker(
        make_snapshot(volumes=[volume("a", 1000, 100), volume("b", 1000, 0)])
    )
    assert assessment.state is QuotaState.OPEN
    assert assessment.throttle_factor == 1.0
    assert assessment.breaches == ()


def test_the_worst_volume_sets_the_broker_and_breaches_are_worst_first() -> None:
    snapshot = make_snapshot(
        volumes=[
            volume("fine", 1000, 100),
            volume("mild", 1000, 820),  # 180 free: factor (180-100)/(200-100) = 0.8
            volume("bad", 1000, 870),  # 130 free: factor 0.3
        ]
    )
    assessment = assess_broker(snapshot)
    assert assessment.state is QuotaState.THROTTLE
    assert assessment.throttle_factor == pytest.approx(0.3)
    assert [verdict.volume.volume_name for verdict in assessment.breaches] == ["bad", "mild"]


def test_one_paused_volume_pauses_the_broker_even_if_others_are_fine() -> None:
    snapshot = make_snapshot(volumes=[volume("fine", 1000, 0), volume("full", 1000, 950)])
    assessment = assess_broker(snapshot)
    assert assessment.state is QuotaState.PAUSE
    assert assessment.throttle_factor == 0.0


def test_limits_are_per_volume_never_a_broker_sum() -> None:
    # Together the two volumes have 55 % free, yet one of them is full: it must pause.
    snapshot = make_snapshot(volumes=[volume("empty", 1000, 0), volume("full", 1000, 1000)])
    assert assess_broker(snapshot).state is QuotaState.PAUSE
