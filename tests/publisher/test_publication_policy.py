from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consumer.limits import judge_volume
from publisher.publication_policy import (
    Publication,
    PublicationPolicy,
    PublicationReason,
    decide_publication,
    free_space_moved,
)
from tests.publisher.publisher_samples import GIB, HARD, SOFT, snapshot
from volume_quota.limit_parsing import parse_limit

POLICY = PublicationPolicy(heartbeat_interval_seconds=10.0, change_threshold_percent=1.0)
CAPACITY = 100 * GIB


def decide(
    previous_frees: tuple[int, ...], frees: tuple[int, ...], elapsed: float
) -> PublicationReason | None:
    previous = Publication(snapshot(*previous_frees), at=100.0)
    return decide_publication(previous, snapshot(*frees), 100.0 + elapsed, POLICY).reason


def test_publishes_first_snapshot() -> None:
    decision = decide_publication(None, snapshot(50 * GIB), 0.0, POLICY)
    assert decision.publish
    assert decision.reason is PublicationReason.FIRST


def test_quiet_volume_waits_for_the_heartbeat() -> None:
    assert decide((50 * GIB,), (50 * GIB,), 9.99) is None
    assert decide((50 * GIB,), (50 * GIB,), 10.0) is PublicationReason.HEARTBEAT


def test_small_moves_wait_and_large_moves_publish() -> None:
    one_percent = CAPACITY // 100
    assert decide((50 * GIB,), (50 * GIB - one_percent,), 1.0) is None
    assert decide((50 * GIB,), (50 * GIB - one_percent - 1,), 1.0) is (
        PublicationReason.FREE_SPACE_MOVED
    )
    assert decide((50 * GIB,), (50 * GIB + one_percent + 1,), 1.0) is (
        PublicationReason.FREE_SPACE_MOVED
    )


def test_state_change_publishes_even_for_a_tiny_move() -> None:
    soft_threshold = CAPACITY * 20 // 100  # MinFreePercentage:20
    decision = decide_publication(
        Publication(snapshot(soft_threshold + 1), at=0.0), snapshot(soft_threshold), 0.5, POLICY
    )
    assert decision.reason is PublicationReason.STATE_CHANGED
    assert decision.detail == "/dev/sd0: OPEN -> THROTTLE"


def test_volume_layout_changes_publish() -> None:
    assert decide((50 * GIB,), (50 * GIB, 50 * GIB), 0.1) is PublicationReason.VOLUMES_CHANGED
    grown = decide_publication(
        Publication(snapshot(50 * GIB), at=0.0), snapshot(50 * GIB, capacity=200 * GIB), 0.1, POLICY
    )
    assert grown.reason is PublicationReason.VOLUMES_CHANGED
    assert "capacity" in grown.detail


def test_limit_changes_publish() -> None:
    before = snapshot(50 * GIB)
    after = before.model_copy(update={"soft_limit": parse_limit("MinFreePercentage:30")})
    decision = decide_publication(Publication(before, 0.0), after, 0.1, POLICY)
    assert decision.reason is PublicationReason.VOLUMES_CHANGED
    volume = before.volumes[0].model_copy(update={"hard_limit": parse_limit("MinFreeBytes:1")})
    overridden = before.model_copy(update={"volumes": [volume]})
    assert decide_publication(Publication(before, 0.0), overridden, 0.1, POLICY).reason is (
        PublicationReason.VOLUMES_CHANGED
    )


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="heartbeat"):
        PublicationPolicy(heartbeat_interval_seconds=0)
    with pytest.raises(ValueError, match="percentage"):
        PublicationPolicy(change_threshold_percent=101)


frees = st.integers(min_value=0, max_value=CAPACITY)


@given(before=frees, after=frees, elapsed=st.floats(min_value=0, max_value=100))
def test_a_state_change_is_always_published(before: int, after: int, elapsed: float) -> None:
    old, new = snapshot(before), snapshot(after)
    old_state = judge_volume(old.volumes[0], SOFT, HARD).state
    new_state = judge_volume(new.volumes[0], SOFT, HARD).state
    reason = decide_publication(Publication(old, 0.0), new, elapsed, POLICY).reason
    if old_state is not new_state:
        assert reason is PublicationReason.STATE_CHANGED
    else:
        assert reason is not PublicationReason.STATE_CHANGED


@given(
    before=frees,
    after=frees,
    elapsed=st.floats(min_value=0, max_value=100),
    threshold=st.floats(min_value=0, max_value=100),
)
def test_silence_means_nothing_noteworthy_happened(
    before: int, after: int, elapsed: float, threshold: float
) -> None:
    """No publication implies: same state, a move within the threshold, heartbeat not due."""
    policy = PublicationPolicy(heartbeat_interval_seconds=10.0, change_threshold_percent=threshold)
    old, new = snapshot(before), snapshot(after)
    decision = decide_publication(Publication(old, 0.0), new, elapsed, policy)
    moved = abs(after - before) * 100 > threshold * CAPACITY
    if not decision.publish:
        assert elapsed < 10.0
        assert not moved
        assert (
            judge_volume(old.volumes[0], SOFT, HARD).state
            is judge_volume(new.volumes[0], SOFT, HARD).state
        )
    elif decision.reason is PublicationReason.FREE_SPACE_MOVED:
        assert moved
    elif decision.reason is PublicationReason.HEARTBEAT:
        assert elapsed >= 10.0


@given(
    frees=st.lists(frees, min_size=1, max_size=200),
    heartbeat=st.integers(min_value=1, max_value=30),
)
def test_gap_between_publications_never_exceeds_the_heartbeat(
    frees: list[int], heartbeat: int
) -> None:
    """Sampling once a second, whatever the measurements, publications are at most a heartbeat
    apart."""
    policy = PublicationPolicy(heartbeat_interval_seconds=float(heartbeat))
    previous: Publication | None = None
    for second, free in enumerate(frees):
        candidate = snapshot(free)
        decision = decide_publication(previous, candidate, float(second), policy)
        if previous is not None:
            assert second - previous.at <= heartbeat
        if decision.publish:
            previous = Publication(candidate, float(second))


@given(before=frees, after=frees, threshold=st.floats(min_value=0, max_value=100))
def test_free_space_moved_is_symmetric(before: int, after: int, threshold: float) -> None:
    old, new = snapshot(before).volumes[0], snapshot(after).volumes[0]
    assert free_space_moved(old, new, threshold) == free_space_moved(new, old, threshold)
    assert free_space_moved(old, old, threshold) is False
