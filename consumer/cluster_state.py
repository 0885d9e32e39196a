"""The cluster's volume state, kept incrementally, and the decision derived from it.

``ClusterState`` holds every broker's newest snapshot, already judged, plus two sorted indexes so
that one new snapshot costs O(volumes + log brokers) and a decision costs O(log brokers + the
reasons it reports), never a rescan of a 10,000-broker cluster:

- ``_breaching``: (factor, broker) for every broker whose newest snapshot is past a limit. The
  first entry is the cluster's smallest factor.
- ``_live_by_time``: (snapshot time, broker) for live brokers, so stale and future-dated ones are
  range queries.

Rules (see docs/decision-rule.md):
- Per broker, the snapshot with the latest ``snapshotAt`` wins; a replayed older one is ignored.
- A snapshot dated beyond the allowed clock skew when it arrives (``received_at``) is never
  taken: it would otherwise stay the broker's newest, lock out every true snapshot until the
  clock reaches it, and then vouch for a state long gone. Its broker is unknown (``future``)
  until a snapshot that is not too far ahead arrives.
- A breach counts until a newer snapshot clears it or the broker is retired with a tombstone, live
  or not, fresh or not: a full broker that restarts, or whose publisher dies, must not release
  the throttle.
- A live broker without a fresh valid snapshot is unknown; with ``on_missing=PAUSE`` any unknown
  broker pauses the cluster, with ``OPEN`` unknown brokers are ignored.
- A non-live broker whose newest snapshot is fine is ignored.

Time is passed in: nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sortedcontainers import SortedList

from consumer.broker_assessment import BrokerAssessment, assess_broker, judge_resolved
from consumer.overrides import in_force, override_reason
from consumer.policy import DecisionPolicy
from consumer.reasons import limit_reason, not_ready_reason, unknown_reason
from schemas.decision import (
    DecisionReason,
    OnMissing,
    QuotaDecision,
    QuotaState,
    ReasonKind,
)
from schemas.override import QuotaOverride
from schemas.snapshot import VolumeSnapshot

_AFTER_EVERY_BROKER = float("inf")


class ClusterState:
    """Every broker's newest judged snapshot, the live broker set, and the decision rule."""

    def __init__(self, policy: DecisionPolicy | None = None) -> None:
        self.policy = policy or DecisionPolicy()
        self._assessments: dict[int, BrokerAssessment] = {}
        self._breaching: SortedList = SortedList()
        self._breaching_volume_count = 0
        self._live: frozenset[int] = frozenset()
        self._live_by_time: SortedList = SortedList()
        self._live_without_snapshot: set[int] = set()
        # Broker -> the date of the newest snapshot refused for being too far ahead on arrival.
        self._future_dated: dict[int, datetime] = {}
        # Building a reason costs ~15 us; a breaching broker keeps its reasons until it changes.
        self._limit_reason_cache: dict[
            int, tuple[BrokerAssessment, bool, tuple[DecisionReason, ...]]
        ] = {}
        # The assembled list too, until a breaching broker changes (most snapshots don't).
        self._limit_reasons: tuple[int, list[DecisionReason]] | None = None

    # -- updates ---------------------------------------------------------------------------------

    def apply_snapshot(self, snapshot: VolumeSnapshot, received_at: datetime | None = None) -> bool:
        """Take ``snapshot`` unless the broker already has a newer one; True when it was taken.

        With ``received_at`` (the reader's clock when the message arrived), a snapshot dated more
        than ``max_clock_skew_seconds`` after it is refused, and its broker is unknown until a
        snapshot that is not too far ahead arrives (see ``future_dated``).
        """
        broker_id = snapshot.broker_id
        moment = snapshot.snapshot_at
        if received_at is not None and (moment - received_at).total_seconds() > (
            self.policy.max_clock_skew_seconds
        ):
            latest = self._future_dated.get(broker_id)
            self._future_dated[broker_id] = moment if latest is None else max(latest, moment)
            return False
        previous = self._assessments.get(broker_id)
        if previous is not None and moment.timestamp() < previous.snapshot_timestamp:
            return False
        self._future_dated.pop(broker_id, None)
        self._replace(broker_id, previous, assess_broker(snapshot))
        return True

    def retire(self, broker_id: int) -> None:
        """Forget a broker (a tombstone on the topic): its last breach no longer counts."""
        self._future_dated.pop(broker_id, None)
        self._replace(broker_id, self._assessments.get(broker_id), None)

    def future_dated(self) -> dict[int, datetime]:
        """Brokers whose newest snapshot was refused for being dated too far ahead on arrival,
        with that snapshot's date."""
        return dict(self._future_dated)

    def set_live_brokers(self, broker_ids: Iterable[int]) -> None:
        """The brokers the cluster says are alive now (from the Admin client)."""
        live = frozenset(broker_ids)
        if live != self._live:
            self._limit_reasons = None
        for broker_id in self._live - live:
            self._live_without_snapshot.discard(broker_id)
            assessment = self._assessments.get(broker_id)
            if assessment is not None:
                self._live_by_time.remove((assessment.snapshot_timestamp, broker_id))
        for broker_id in live - self._live:
            assessment = self._assessments.get(broker_id)
            if assessment is None:
                self._live_without_snapshot.add(broker_id)
            else:
                self._live_by_time.add((assessment.snapshot_timestamp, broker_id))
        self._live = live

    def rebuild(self) -> None:
        """Judge every volume again and rebuild every index from scratch.

        Limits were resolved to free-byte thresholds when each snapshot arrived; everything after
        that (each volume's state and factor, each broker's, the cluster's) is recomputed.
        """
        previous = list(self._assessments.values())
        live = self._live
        self._limit_reasons = None
        self._assessments.clear()
        self._breaching.clear()
        self._breaching_volume_count = 0
        self._live = frozenset()
        self._live_by_time.clear()
        self._live_without_snapshot.clear()
        breaching = []
        for old in previous:
            assessment = judge_resolved(old.snapshot, old.snapshot_timestamp, old.resolved)
            broker_id = assessment.snapshot.broker_id
            self._assessments[broker_id] = assessment
            if assessment.breaches:
                breaching.append((assessment.throttle_factor, broker_id))
                self._breaching_volume_count += len(assessment.breaches)
        self._breaching.update(breaching)
        self._live = live
        assessments = self._assessments
        self._live_by_time.update(
            (assessments[broker_id].snapshot_timestamp, broker_id)
            for broker_id in live
            if broker_id in assessments
        )
        self._live_without_snapshot.update(live.difference(assessments))

    def _replace(
        self, broker_id: int, previous: BrokerAssessment | None, current: BrokerAssessment | None
    ) -> None:
        is_live = broker_id in self._live
        if (previous is not None and previous.breaches) or (
            current is not None and current.breaches
        ):
            self._limit_reasons = None
        if previous is not None:
            if previous.breaches:
                self._breaching.remove((previous.throttle_factor, broker_id))
                self._breaching_volume_count -= len(previous.breaches)
            if is_live:
                self._live_by_time.remove((previous.snapshot_timestamp, broker_id))
        if current is None:
            self._assessments.pop(broker_id, None)
            self._limit_reason_cache.pop(broker_id, None)
            if is_live:
                self._live_without_snapshot.add(broker_id)
            return
        self._assessments[broker_id] = current
        if current.breaches:
            self._breaching.add((current.throttle_factor, broker_id))
            self._breaching_volume_count += len(current.breaches)
        if is_live:
            self._live_by_time.add((current.snapshot_timestamp, broker_id))
            self._live_without_snapshot.discard(broker_id)

    # -- queries ---------------------------------------------------------------------------------

    @property
    def live_brokers(self) -> frozenset[int]:
        return self._live

    def assessment(self, broker_id: int) -> BrokerAssessment | None:
        return self._assessments.get(broker_id)

    def assessments(self) -> list[BrokerAssessment]:
        """A copy, safe to take from another thread (one step under the GIL)."""
        return list(self._assessments.values())

    def snapshot_times(self) -> list[tuple[int, float]]:
        """(broker, snapshot time) for every broker; safe to call from another thread (a copy
        taken in one step under the GIL)."""
        return [
            (broker, assessment.snapshot_timestamp)
            for broker, assessment in list(self._assessments.items())
        ]

    def unknown_brokers(self, now: datetime) -> dict[int, ReasonKind]:
        """Live brokers without a fresh valid snapshot at ``now``, and why each is unknown."""
        moment = now.timestamp()
        stale_cut = moment - self.policy.stale_after_seconds
        future_cut = moment + self.policy.max_clock_skew_seconds
        unknown = dict.fromkeys(self._live_without_snapshot, ReasonKind.MISSING)
        for _, broker_id in self._live_by_time.irange(
            maximum=(stale_cut,), inclusive=(True, False)
        ):
            unknown[broker_id] = ReasonKind.STALE
        for _, broker_id in self._live_by_time.irange(
            minimum=(future_cut, _AFTER_EVERY_BROKER), inclusive=(False, True)
        ):
            unknown[broker_id] = ReasonKind.FUTURE
        for broker_id in self._future_dated:
            if broker_id in self._live:
                unknown[broker_id] = ReasonKind.FUTURE
        return unknown

    def decide(
        self,
        now: datetime,
        not_ready: str | None = None,
        override: QuotaOverride | None = None,
    ) -> QuotaDecision:
        """The cluster decision at ``now``: the worst volume anywhere, and the fail-safe.

        ``not_ready`` says why the caller cannot vouch for its view of the cluster yet (it has
        not read the topic to its end, or never learned the live brokers): the on-missing action
        then applies as if every broker were unknown. An operator's ``override`` in force at
        ``now`` replaces the state; the rule's own reasons follow its reason, and the decision
        is valid no longer than the override.
        """
        decision = self._decide_by_rule(now, not_ready)
        if not in_force(override, now):
            return decision
        assert override is not None  # in_force guarantees it
        kept = decision.reasons[: self.policy.max_reasons - 1]
        return decision.model_copy(
            update={
                "state": override.state,
                "throttle_factor": 1.0 if override.state is QuotaState.OPEN else 0.0,
                "caused_by_missing_data": False,
                "valid_until": min(decision.valid_until, override.expires_at),
                "reasons": [override_reason(override), *kept],
                "reasons_omitted": decision.reasons_omitted + len(decision.reasons) - len(kept),
            }
        )

    def _decide_by_rule(self, now: datetime, not_ready: str | None) -> QuotaDecision:
        policy = self.policy
        state, factor = QuotaState.OPEN, 1.0
        if self._breaching:
            factor = self._breaching[0][0]
            state = QuotaState.PAUSE if factor == 0.0 else QuotaState.THROTTLE
        unknown = self.unknown_brokers(now)
        caused_by_missing_data = False
        if (unknown or not_ready) and policy.on_missing is OnMissing.PAUSE:
            caused_by_missing_data = state is not QuotaState.PAUSE
            state, factor = QuotaState.PAUSE, 0.0
        reasons = self._reasons(unknown, caused_by_missing_data)
        total_reasons = len(unknown) + self._breaching_volume_count
        if not_ready:
            reasons.insert(0, not_ready_reason(not_ready, policy.on_missing))
            total_reasons += 1
            del reasons[policy.max_reasons :]
        return QuotaDecision(
            decided_at=now,
            valid_until=now + timedelta(seconds=policy.decision_lifetime_seconds),
            state=state,
            throttle_factor=factor,
            caused_by_missing_data=caused_by_missing_data,
            unknown_brokers=sorted(unknown),
            reasons=reasons,
            reasons_omitted=total_reasons - len(reasons),
        )

    def _reasons(
        self, unknown: dict[int, ReasonKind], missing_data_first: bool
    ) -> list[DecisionReason]:
        """The drivers of the decision, most severe first, at most ``policy.max_reasons``."""
        limit = self.policy.max_reasons
        unknown_state = (
            QuotaState.PAUSE if self.policy.on_missing is OnMissing.PAUSE else QuotaState.OPEN
        )
        unknown_reasons = [
            unknown_reason(
                broker_id,
                kind,
                unknown_state,
                self._assessments.get(broker_id),
                self.policy,
                refused_future_at=self._future_dated.get(broker_id),
            )
            for broker_id, kind in sorted(unknown.items())[:limit]
        ]
        limit_reasons = self._limit_reasons_worst_first(limit)
        ordered = (
            unknown_reasons + limit_reasons
            if missing_data_first
            else limit_reasons + unknown_reasons
        )
        return ordered[:limit]

    def _limit_reasons_worst_first(self, limit: int) -> list[DecisionReason]:
        """Reasons for breached volumes: brokers by their worst factor, then their volumes."""
        if self._limit_reasons is not None and self._limit_reasons[0] == limit:
            return list(self._limit_reasons[1])
        reasons: list[DecisionReason] = []
        for _, broker_id in self._breaching:
            reasons.extend(self._limit_reasons_of(broker_id, limit - len(reasons)))
            if len(reasons) >= limit:
                break
        self._limit_reasons = (limit, reasons)
        return list(reasons)

    def _limit_reasons_of(self, broker_id: int, limit: int) -> tuple[DecisionReason, ...]:
        assessment = self._assessments[broker_id]
        live = broker_id in self._live
        cached = self._limit_reason_cache.get(broker_id)
        if (
            cached is not None
            and cached[0] is assessment
            and cached[1] == live
            and len(cached[2]) >= min(limit, len(assessment.breaches))
        ):
            return cached[2][:limit]
        reasons = tuple(
            limit_reason(broker_id, verdict, live) for verdict in assessment.breaches[:limit]
        )
        self._limit_reason_cache[broker_id] = (assessment, live, reasons)
        return reasons
