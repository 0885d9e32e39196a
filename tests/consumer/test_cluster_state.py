from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consumer.cluster_state import ClusterState
from consumer.policy import DecisionPolicy
from schemas.decision import OnMissing, QuotaState, ReasonKind
from tests.snapshot_factory import NOON, make_snapshot, volume

SOON = NOON + timedelta(seconds=5)


def fine(broker_id: int, at_seconds: float = 0) -> object:
    return make_snapshot(
        broker_id=broker_id,
        volumes=[volume("v", 1000, 100)],
        at=NOON + timedelta(seconds=at_seconds),
    )


def filling(broker_id: int, free: int, at_seconds: float = 0) -> object:
    return make_snapshot(
        broker_id=broker_id,
        volumes=[volume("v", 1000, 1000 - free)],
        at=NOON + timedelta(seconds=at_seconds),
    )


def cluster(
    *snapshots: object, live: tuple[int, ...] = (0, 1, 2), **policy: object
) -> ClusterState:
    state = ClusterState(DecisionPolicy(**policy))  # type: ignore[arg-type]
    for snapshot in snapshots:
        state.apply_snapshot(snapshot)  # type: ignore[arg-type]
    state.set_live_brokers(live)
    return state


def test_all_fine_is_open() -> None:
    decision = cluster(fine(0), fine(1), fine(2)).decide(SOON)
    assert (decision.state, decision.throttle_factor) == (QuotaState.OPEN, 1.0)
    assert decision.reasons == []
    assert not decision.caused_by_missing_data


def test_one_volume_in_the_soft_zone_throttles_the_whole_cluster() -> None:
    decision = cluster(fine(0), fine(1), filling(2, free=150)).decide(SOON)
    assert decision.state is QuotaState.THROTTLE
    assert decision.throttle_factor == pytest.approx(0.5)
    driver = decision.reasons[0]
    assert (driver.kind, driver.broker_id, driver.volume_name) == (ReasonKind.LIMIT, 2, "v")
    assert driver.free_bytes == 150


def test_the_smallest_factor_wins() -> None:
    decision = cluster(filling(0, free=180), fine(1), filling(2, free=130)).decide(SOON)
    assert decision.throttle_factor == pytest.approx(0.3)
    assert [reason.broker_id for reason in decision.reasons] == [2, 0]


def test_any_hard_breach_pauses() -> None:
    decision = cluster(filling(0, free=150), fine(1), filling(2, free=50)).decide(SOON)
    assert (decision.state, decision.throttle_factor) == (QuotaState.PAUSE, 0.0)
    assert not decision.caused_by_missing_data


def test_live_broker_without_snapshot_pauses_by_default_and_says_why() -> None:
    decision = cluster(fine(0), fine(1)).decide(SOON)
    assert decision.state is QuotaState.PAUSE
    assert decision.caused_by_missing_data
    assert decision.unknown_brokers == [2]
    assert decision.reasons[0].kind is ReasonKind.MISSING


def test_on_missing_open_ignores_unknown_brokers() -> None:
    decision = cluster(fine(0), fine(1), on_missing=OnMissing.OPEN).decide(SOON)
    assert decision.state is QuotaState.OPEN
    assert decision.unknown_brokers == [2]
    assert not decision.caused_by_missing_data


def test_staleness_is_strictly_older_than_stale_after() -> None:
    state = cluster(fine(0), fine(1), fine(2), stale_after_seconds=60)
    assert state.decide(NOON + timedelta(seconds=60)).state is QuotaState.OPEN
    late = state.decide(NOON + timedelta(seconds=60.001))
    assert late.state is QuotaState.PAUSE
    assert late.unknown_brokers == [0, 1, 2]
    assert {reason.kind for reason in late.reasons} == {ReasonKind.STALE}


def test_snapshot_from_the_future_beyond_skew_is_not_trusted() -> None:
    state = cluster(fine(0), fine(1), fine(2, at_seconds=20), max_clock_skew_seconds=5)
    decision = state.decide(NOON + timedelta(seconds=10))
    assert decision.unknown_brokers == [2]
    assert decision.reasons[0].kind is ReasonKind.FUTURE
    assert state.decide(NOON + timedelta(seconds=15)).state is QuotaState.OPEN


def test_a_snapshot_too_far_ahead_on_arrival_is_refused_and_its_broker_unknown() -> None:
    state = cluster(fine(0), fine(1), filling(2, free=50), max_clock_skew_seconds=5)
    # Broker 2's publisher runs five minutes ahead and says all is fine: refused on arrival.
    ahead = fine(2, at_seconds=300)
    assert state.apply_snapshot(ahead, received_at=NOON + timedelta(seconds=1)) is False  # type: ignore[arg-type]
    assert state.future_dated() == {2: NOON + timedelta(seconds=300)}
    decision = state.decide(NOON + timedelta(seconds=2))
    assert decision.state is QuotaState.PAUSE
    assert decision.unknown_brokers == [2]
    future = [reason for reason in decision.reasons if reason.kind is ReasonKind.FUTURE]
    assert future[0].snapshot_at == NOON + timedelta(seconds=300)


def test_a_refused_future_snapshot_never_masks_the_breach_when_its_date_comes() -> None:
    state = cluster(fine(0), fine(1), filling(2, free=50), max_clock_skew_seconds=5)
    state.apply_snapshot(fine(2, at_seconds=300), received_at=NOON)  # type: ignore[arg-type]
    # The clock is put right; the true snapshots still report the breach.
    true_snapshot = filling(2, free=50, at_seconds=290)
    state.apply_snapshot(true_snapshot, received_at=NOON + timedelta(seconds=290))  # type: ignore[arg-type]
    state.apply_snapshot(fine(0, at_seconds=299), received_at=NOON + timedelta(seconds=299))  # type: ignore[arg-type]
    state.apply_snapshot(fine(1, at_seconds=299), received_at=NOON + timedelta(seconds=299))  # type: ignore[arg-type]
    decision = state.decide(NOON + timedelta(seconds=299))
    assert decision.unknown_brokers == []
    assert decision.state is QuotaState.PAUSE
    assert decision.reasons[0].kind is ReasonKind.LIMIT


def test_a_corrected_clock_is_trusted_at_its_next_snapshot() -> None:
    state = cluster(fine(0), fine(1), fine(2), max_clock_skew_seconds=5)
    state.apply_snapshot(fine(2, at_seconds=300), received_at=NOON)  # type: ignore[arg-type]
    assert state.decide(NOON + timedelta(seconds=1)).unknown_brokers == [2]
    assert state.apply_snapshot(fine(2, at_seconds=2), received_at=NOON + timedelta(seconds=2))  # type: ignore[arg-type]
    assert state.future_dated() == {}
    assert state.decide(NOON + timedelta(seconds=3)).state is QuotaState.OPEN


def test_a_tombstone_clears_a_refused_future_snapshot() -> None:
    state = cluster(fine(0), fine(1), fine(2), max_clock_skew_seconds=5)
    state.apply_snapshot(fine(2, at_seconds=300), received_at=NOON)  # type: ignore[arg-type]
    state.retire(2)
    assert state.future_dated() == {}


def test_a_snapshot_within_the_skew_on_arrival_is_taken() -> None:
    state = cluster(fine(0), fine(1), filling(2, free=50), max_clock_skew_seconds=5)
    assert state.apply_snapshot(fine(2, at_seconds=5), received_at=NOON)  # type: ignore[arg-type]
    assert state.decide(NOON + timedelta(seconds=5)).state is QuotaState.OPEN


def test_replayed_older_snapshot_never_overwrites_newer_state() -> None:
    state = cluster(filling(2, free=50, at_seconds=10), fine(0), fine(1))
    assert state.apply_snapshot(fine(2, at_seconds=0)) is False  # type: ignore[arg-type]
    assert state.decide(NOON + timedelta(seconds=11)).state is QuotaState.PAUSE


def test_newer_snapshot_clears_a_breach() -> None:
    state = cluster(filling(2, free=50), fine(0), fine(1))
    state.apply_snapshot(fine(2, at_seconds=1))  # type: ignore[arg-type]
    assert state.decide(SOON).state is QuotaState.OPEN


def test_full_broker_that_drops_out_keeps_pausing_until_cleared() -> None:
    state = cluster(fine(0), fine(1), filling(2, free=50))
    state.set_live_brokers([0, 1])  # broker 2 restarts: it leaves describeCluster
    decision = state.decide(NOON + timedelta(hours=3))
    assert decision.state is QuotaState.PAUSE
    assert decision.reasons[0].broker_live is False
    state.set_live_brokers([0, 1, 2])
    assert state.decide(NOON).reasons[0].broker_live is True
    state.apply_snapshot(fine(2, at_seconds=3 * 3600))  # type: ignore[arg-type]
    assert state.decide(NOON + timedelta(hours=3)).state is QuotaState.PAUSE  # 0 and 1 are stale


def test_non_live_broker_whose_last_snapshot_was_fine_is_ignored() -> None:
    state = cluster(fine(0), fine(1), fine(9), live=(0, 1))
    assert state.decide(SOON).state is QuotaState.OPEN


def test_tombstone_retires_a_broker_and_its_breach() -> None:
    state = cluster(fine(0), fine(1), filling(9, free=10), live=(0, 1))
    assert state.decide(SOON).state is QuotaState.PAUSE
    state.retire(9)
    assert state.decide(SOON).state is QuotaState.OPEN


def test_tombstone_for_a_live_broker_makes_it_unknown() -> None:
    state = cluster(fine(0), fine(1), fine(2))
    state.retire(2)
    assert state.decide(SOON).unknown_brokers == [2]


def test_stale_breach_still_counts_when_unknown_brokers_are_ignored() -> None:
    state = cluster(fine(0, 100), fine(1, 100), filling(2, free=150), on_missing=OnMissing.OPEN)
    decision = state.decide(NOON + timedelta(seconds=100))
    assert decision.unknown_brokers == [2]
    assert decision.state is QuotaState.THROTTLE


def test_not_ready_applies_the_on_missing_action_and_says_why() -> None:
    state = cluster(fine(0), fine(1), fine(2))
    decision = state.decide(SOON, not_ready="still reading the snapshot topic")
    assert (decision.state, decision.caused_by_missing_data) == (QuotaState.PAUSE, True)
    assert decision.reasons[0].kind is ReasonKind.NOT_READY
    assert decision.reasons[0].broker_id is None
    assert "still reading" in decision.reasons[0].detail
    relaxed = cluster(fine(0), filling(1, free=150), on_missing=OnMissing.OPEN, live=(0, 1))
    decision = relaxed.decide(SOON, not_ready="no live broker list yet")
    assert decision.state is QuotaState.THROTTLE, "known breaches still count under OPEN"
    assert decision.reasons[0].kind is ReasonKind.NOT_READY


def test_reasons_follow_the_newest_snapshot() -> None:
    state = cluster(fine(0), fine(1), filling(2, free=150))
    assert state.decide(SOON).reasons[0].free_bytes == 150
    state.apply_snapshot(filling(2, free=120, at_seconds=1))  # type: ignore[arg-type]
    assert state.decide(SOON).reasons[0].free_bytes == 120


def test_reasons_are_capped_and_the_rest_counted() -> None:
    snapshots = [filling(broker_id, free=150) for broker_id in range(30)]
    decision = cluster(*snapshots, live=tuple(range(30)), max_reasons=5).decide(SOON)
    assert len(decision.reasons) == 5
    assert decision.reasons_omitted == 25


def test_decision_is_valid_for_the_configured_lifetime() -> None:
    decision = cluster(fine(0), fine(1), fine(2), valid_for_seconds=7).decide(SOON)
    assert decision.valid_until - decision.decided_at == timedelta(seconds=7)


def test_rebuild_reproduces_the_incremental_decision() -> None:
    state = cluster(filling(0, free=180), fine(1), filling(2, free=130))
    before = state.decide(SOON)
    state.rebuild()
    assert state.decide(SOON) == before


# --- property: the incremental state agrees with a from-scratch reading of the rule ---

STALE_AFTER = 60.0
SKEW = 5.0


@dataclass(frozen=True)
class Publish:
    broker: int
    at_seconds: int
    frees: list[int]  # capacity 1000 each: soft limit = 200 free, hard = 100 free


@dataclass(frozen=True)
class Retire:
    broker: int


@dataclass(frozen=True)
class Live:
    brokers: frozenset[int]


Operation = Publish | Retire | Live
brokers = st.integers(0, 5)
operations = st.lists(
    st.one_of(
        st.builds(
            Publish, brokers, st.integers(-120, 30), st.lists(st.integers(0, 1000), max_size=3)
        ),
        st.builds(Retire, brokers),
        st.builds(Live, st.frozensets(brokers)),
    ),
    max_size=30,
)


def _oracle(ops: list[Operation], on_missing: OnMissing) -> tuple[QuotaState, float, list[int]]:
    """The rule as the issue states it, computed naively from every broker's newest snapshot."""
    newest: dict[int, Publish] = {}
    live: frozenset[int] = frozenset()
    for op in ops:
        if isinstance(op, Publish):
            if op.broker not in newest or op.at_seconds >= newest[op.broker].at_seconds:
                newest[op.broker] = op
        elif isinstance(op, Retire):
            newest.pop(op.broker, None)
        else:
            live = op.brokers
    factor, paused, throttled = 1.0, False, False
    for publication in newest.values():
        for free in publication.frees:
            if free <= 100:
                paused, factor = True, 0.0
            elif free <= 200:
                throttled, factor = True, min(factor, (free - 100) / 100)
    unknown = sorted(
        broker
        for broker in live
        if broker not in newest or not -STALE_AFTER <= newest[broker].at_seconds <= SKEW
    )
    if unknown and on_missing is OnMissing.PAUSE:
        return QuotaState.PAUSE, 0.0, unknown
    state = QuotaState.PAUSE if paused else QuotaState.THROTTLE if throttled else QuotaState.OPEN
    return state, factor, unknown


@settings(max_examples=300, deadline=None)
@given(ops=operations, on_missing=st.sampled_from(OnMissing))
def test_incremental_state_matches_the_rule_from_scratch(
    ops: list[Operation], on_missing: OnMissing
) -> None:
    policy = DecisionPolicy(
        stale_after_seconds=STALE_AFTER, max_clock_skew_seconds=SKEW, on_missing=on_missing
    )
    state = ClusterState(policy)
    for op in ops:
        if isinstance(op, Publish):
            volumes = [
                volume(f"v{index}", 1000, 1000 - free) for index, free in enumerate(op.frees)
            ]
            at = NOON + timedelta(seconds=op.at_seconds)
            state.apply_snapshot(make_snapshot(broker_id=op.broker, at=at, volumes=volumes))
        elif isinstance(op, Retire):
            state.retire(op.broker)
        else:
            state.set_live_brokers(op.brokers)
    expected_state, expected_factor, expected_unknown = _oracle(ops, on_missing)
    decision = state.decide(NOON)
    assert decision.state is expected_state
    assert decision.throttle_factor == pytest.approx(expected_factor)
    assert decision.unknown_brokers == expected_unknown
    fresh = ClusterState(policy)  # the same newest snapshots, applied once: same reasons too
    for assessment in state.assessments():
        fresh.apply_snapshot(assessment.snapshot)
    fresh.set_live_brokers(state.live_brokers)
    assert fresh.decide(NOON) == decision
    state.rebuild()
    assert state.decide(NOON) == decision
