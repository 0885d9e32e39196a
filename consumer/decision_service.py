"""The consumer loop: read the topic, learn the live brokers, decide, hand the decision on.

An imperative shell around ``ClusterState``: the Kafka reader, the live-broker source, the clock
and the decision sink are passed in, so the loop runs the same against a real cluster and in
unit tests with fakes. One thread runs ``run``; any thread may read ``current.decision``.

This is the one consumer loop: ``volume-quota decide`` and ``sidecar`` run it until stopped
(swapping the Kafka clients when certificates rotate, through ``between_steps``), and
``volume-quota status`` runs it until ready or a timeout.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import structlog

from consumer.clock import Clock
from consumer.cluster_state import ClusterState
from consumer.consumer_metrics import ConsumerMetrics
from consumer.current_decision import CurrentDecision, material
from consumer.override_follower import OverrideFollower
from consumer.signatures import SignatureMode, SignatureTrust, check_signature
from consumer.snapshot_topic_reader import SnapshotSource, TopicRecord
from consumer.topic_messages import Retirement, interpret_message
from consumer.usage_follower import UsageFollower
from schemas.decision import QuotaDecision
from schemas.snapshot import VolumeSnapshot

log = structlog.get_logger("volume_quota.consumer")


LOOKUP_TIMEOUT_SECONDS = 2.0
"""The longest a metadata lookup (assigning the topic, the live brokers) may block the loop.

The loop is one thread: while Kafka refuses this client (an expired certificate) or a broker
hangs, every lookup runs to its timeout, one after another, and the decision is rewritten only
between them. With 10 s and 5 s lookups a turn took 16-25 s, longer than a 10 s validity, so
the decider's own decision expired (tests/faults/test_certificate_faults.py). A failed lookup
is retried a ``retry_seconds`` later."""


@dataclass(frozen=True, slots=True)
class LoopTiming:
    poll_timeout_seconds: float = 0.1
    lookup_timeout_seconds: float = LOOKUP_TIMEOUT_SECONDS
    live_broker_refresh_seconds: float = 5.0
    decision_refresh_seconds: float = 10.0
    """Rewrite an unchanged decision this often, so its validUntil keeps moving forward."""
    retry_seconds: float = 2.0
    between_steps_seconds: float = 1.0
    """How often ``run`` calls its ``between_steps`` hook (certificate checks)."""
    reconnect_when_quiet_seconds: float | None = None
    """Once caught up, rebuild the reader through another broker after this long without a
    record (None: never). Publishers send a heartbeat at least every heartbeat interval, so a
    silent topic means either no publisher can write, or this reader fetches from a broker
    that no longer leads the partition (tests/faults, a broker cut off from its peers). The
    decider sets half of stale-after, so a reconnect comes before its peers go stale."""


@dataclass(frozen=True)
class SignaturePolicy:
    """Whether and how to check who signed each message (see ``consumer.signatures``)."""

    mode: SignatureMode = SignatureMode.ACCEPT
    trust: SignatureTrust | None = None


class DecisionService:
    def __init__(
        self,
        state: ClusterState,
        *,
        source: SnapshotSource,
        live_brokers: Callable[[], frozenset[int]],
        clock: Clock,
        sink: Callable[[QuotaDecision], None],
        metrics: ConsumerMetrics,
        timing: LoopTiming = LoopTiming(),
        signatures: SignaturePolicy = SignaturePolicy(),
        overrides: OverrideFollower | None = None,
        usage: UsageFollower | None = None,
    ) -> None:
        self.state = state
        self._source = source
        self._live_brokers = live_brokers
        self._clock = clock
        self._sink = sink
        self._metrics = metrics
        self._timing = timing
        self._signatures = signatures
        self._overrides = overrides
        self._usage = usage
        self._live_known = False
        self._next_live_refresh = 0.0
        self._next_assign_attempt = 0.0
        self._last_written: tuple[object, ...] | None = None
        self._last_written_at = float("-inf")
        self._sink_healthy = False
        self._next_write_attempt = 0.0
        self._caught_up_once = False
        self._quiet_since: float | None = None
        """When the reader last read a record or was reconnected; None until the first step
        caught up on the current source."""
        self.last_step_at: float | None = None
        self.current = CurrentDecision(state.decide(clock.wall(), not_ready="starting"))

    @property
    def live_known(self) -> bool:
        """The live brokers were learned at least once (``state.live_brokers``)."""
        return self._live_known

    @property
    def ready(self) -> bool:
        """Caught up with the topic, knows the live brokers, and the last write succeeded."""
        overrides_settled = self._overrides is None or self._overrides.settled
        return (
            self._caught_up
            and self._live_known
            and self._sink_healthy
            and overrides_settled
            and self.override_problem is None
        )

    @property
    def override_problem(self) -> str | None:
        """Why the operator's override topic cannot be followed (it fails readiness, never the
        decision: the rule decides meanwhile)."""
        return None if self._overrides is None else self._overrides.problem

    @property
    def _caught_up(self) -> bool:
        # Once caught up, a new source (after a certificate rotation) replaying the topic from
        # the beginning cannot make the state older: stale replays are ignored per broker.
        if not self._caught_up_once and self._source.caught_up:
            self._caught_up_once = True
            # What the catch-up built (every broker's state) lives as long as the process: keep
            # the cyclic collector from scanning it again and again (about 2x faster decoding,
            # benchmarks/decision_speed.py).
            gc.freeze()
        return self._caught_up_once

    def replace_source(
        self,
        source: SnapshotSource,
        live_brokers: Callable[[], frozenset[int]],
        overrides_source: SnapshotSource | None = None,
    ) -> None:
        """Swap the Kafka clients (new certificates) without losing the cluster state."""
        self._source = source
        if self._overrides is not None and overrides_source is not None:
            self._overrides.replace_source(overrides_source)
        self._live_brokers = live_brokers
        self._next_live_refresh = 0.0
        self._next_assign_attempt = 0.0
        self._quiet_since = None

    def replace_signatures(self, signatures: SignaturePolicy) -> None:
        """Trust the CA bundle as it is now (a rotation adds the new CA before any certificate
        of it is used); call it before ``replace_source``, whose replay then judges every
        snapshot again under the new trust."""
        self._signatures = signatures

    def not_ready_reason(self) -> str | None:
        if self._caught_up:
            return None if self._live_known else self._live_unknown_reason
        if not self._source.assigned:
            return "the snapshot topic is not assigned yet"
        return "still reading the snapshot topic up to its end offsets seen at start"

    _live_unknown_reason = "the live brokers are not known yet (Admin describe cluster)"

    def step(self) -> QuotaDecision:
        """One turn of the loop: read what arrived, refresh what is due, decide, hand on."""
        moment = self._clock.monotonic()
        self._ensure_assigned(moment)
        if self._source.assigned:
            self._read_available(moment)
            self._reconnect_if_quiet(moment)
        self._metrics.caught_up.set(1 if self._caught_up else 0)
        if moment >= self._next_live_refresh:
            self._refresh_live_brokers(moment)
        now = self._clock.wall()
        override = self._overrides.current(moment, now) if self._overrides else None
        decision = self.state.decide(now, not_ready=self.not_ready_reason(), override=override)
        decision = self._usage.explain(decision, now) if self._usage else decision
        self.current.replace(decision)
        self._metrics.observe_decision(decision)
        # Judge whether a rewrite is due by the clock after the lookups above, which may each
        # block for their timeout (a hung broker answers no metadata request until the client's
        # socket times out): judged by the step's start, a loop blocked 5 s a step rewrote an
        # unchanged decision every other step and let it expire (tests/faults, a hung broker).
        self._hand_on(decision, self._clock.monotonic())
        if self._usage is not None:  # after the hand-on: it only explains the next decisions
            self._usage.follow(self._clock.monotonic(), self._clock.wall())
        self.last_step_at = moment
        return decision

    def run(
        self,
        stop: threading.Event,
        *,
        until_ready: bool = False,
        timeout_seconds: float | None = None,
        between_steps: Callable[[], None] | None = None,
    ) -> bool:
        """Step until ``stop`` is set, or (``until_ready``) until ready, or ``timeout_seconds``
        have passed; call ``between_steps`` about every ``between_steps_seconds``. Returns
        whether the service is ready."""
        started = self._clock.monotonic()
        next_hook = started + self._timing.between_steps_seconds
        while not stop.is_set():
            self.step()
            now = self._clock.monotonic()
            if until_ready and self.ready:
                break
            if timeout_seconds is not None and now - started >= timeout_seconds:
                break
            if between_steps is not None and now >= next_hook:
                next_hook = now + self._timing.between_steps_seconds
                between_steps()
            if not self._source.assigned:  # nothing to wait on in poll(): do not spin
                stop.wait(max(self._timing.poll_timeout_seconds, 0.05))
        return self.ready

    def _ensure_assigned(self, moment: float) -> None:
        if self._source.assigned or moment < self._next_assign_attempt:
            return
        try:
            self._source.assign_from_beginning(self._timing.lookup_timeout_seconds)
        except Exception as error:  # the cluster may be down: retry, never crash
            self._metrics.read_errors.inc()
            # Counted from the failure's end: a lookup that timed out must not be retried at once.
            self._next_assign_attempt = self._clock.monotonic() + self._timing.retry_seconds
            log.warning("snapshot topic not readable yet", error=str(error))

    def _reconnect_if_quiet(self, moment: float) -> None:
        quiet_limit = self._timing.reconnect_when_quiet_seconds
        if quiet_limit is None or not self._caught_up:
            return
        if self._quiet_since is None:
            self._quiet_since = moment
            return
        if moment - self._quiet_since < quiet_limit:
            return
        self._quiet_since = moment
        try:
            address = self._source.reconnect(self._timing.lookup_timeout_seconds)
        except Exception as error:  # a new client could not be made: try again after a while
            self._metrics.read_errors.inc()
            log.warning("reconnecting the snapshot reader failed", error=str(error))
            return
        if address is not None:
            self._metrics.reader_reconnects.inc()
            log.warning(
                "no snapshot read for a while: snapshot reader reconnected through another broker",
                quiet_seconds=quiet_limit,
                bootstrap=address,
            )
            for follower in (self._overrides, self._usage):  # no heartbeat: rebuilt alongside
                if follower is not None:
                    follower.reconnect()

    def _read_available(self, moment: float) -> None:
        # While catching up, every object made is kept (the cluster state) or freed by
        # reference counting: pausing the cyclic collector halves the cold start (10,000
        # brokers, docs/reliability.md).
        paused = not self._caught_up_once and gc.isenabled()
        if paused:
            gc.disable()
        try:
            for record in self._source.poll(self._timing.poll_timeout_seconds):
                self._quiet_since = moment
                self._apply(record)
        except Exception as error:  # transport trouble: counted, retried next turn
            self._metrics.read_errors.inc()
            log.warning("reading the snapshot topic failed", error=str(error))
        finally:
            if paused:
                gc.enable()

    def _apply(self, record: TopicRecord) -> None:
        event = interpret_message(record.key, record.value)
        signed_at = event.snapshot_at if isinstance(event, VolumeSnapshot) else None
        if not self._signed_well_enough(record, signed_at):
            return
        if isinstance(event, VolumeSnapshot):
            received_at = self._clock.wall()
            if self.state.apply_snapshot(event, received_at):
                outcome = "applied"
            elif event.snapshot_at == self.state.future_dated().get(event.broker_id):
                outcome = "future_dated"
                log.warning(
                    "snapshot dated too far ahead refused; its broker is unknown until a snapshot "
                    "that is not arrives",
                    broker=event.broker_id,
                    snapshot_at=event.snapshot_at.isoformat(),
                    received_at=received_at.isoformat(),
                )
            else:
                outcome = "superseded"
            self._metrics.messages.labels(outcome=outcome).inc()
        elif isinstance(event, Retirement):
            self.state.retire(event.broker_id)
            self._metrics.messages.labels(outcome="retired").inc()
            log.info("broker retired by tombstone", broker=event.broker_id)
        else:
            self._metrics.messages.labels(outcome="invalid").inc()
            self._metrics.invalid_messages.labels(reason=event.reason.value).inc()
            log.warning(
                "invalid snapshot message skipped",
                partition=record.partition,
                offset=record.offset,
                reason=event.describe(),
            )

    def _signed_well_enough(self, record: TopicRecord, signed_at: datetime | None) -> bool:
        """Check the signature unless the mode is ACCEPT; False rejects the record (REQUIRE)."""
        policy = self._signatures
        if policy.mode is SignatureMode.ACCEPT or policy.trust is None:
            return True
        check = check_signature(
            record.key,
            record.value,
            record.headers,
            policy.trust,
            self._clock.wall(),
            signed_at=signed_at,
        )
        self._metrics.signature_checks.labels(outcome=check.outcome.value).inc()
        if check.trusted:
            return True
        rejected = policy.mode is SignatureMode.REQUIRE
        log.warning(
            "snapshot rejected: signature check failed"
            if rejected
            else "snapshot used although its signature check failed (snapshot_signatures=warn)",
            key=(record.key or b"")[:20].decode("ascii", "replace"),
            offset=record.offset,
            outcome=check.outcome.value,
            detail=check.detail,
            signer=check.signer,
        )
        if rejected:
            self._metrics.messages.labels(outcome="invalid").inc()
            self._metrics.invalid_messages.labels(reason="signature").inc()
        return not rejected

    def _refresh_live_brokers(self, moment: float) -> None:
        try:
            live = self._live_brokers()
        except Exception as error:  # keep the last known set; staleness still protects us
            self._metrics.live_broker_errors.inc()
            # Counted from the failure's end: a lookup that timed out must not be retried at once.
            self._next_live_refresh = self._clock.monotonic() + self._timing.retry_seconds
            log.warning("could not learn the live brokers", error=str(error))
            return
        if live != self.state.live_brokers:
            log.info("live brokers changed", live=sorted(live))
        self.state.set_live_brokers(live)
        self._live_known = True
        self._next_live_refresh = moment + self._timing.live_broker_refresh_seconds

    def _hand_on(self, decision: QuotaDecision, moment: float) -> None:
        key = material(decision)
        due = moment - self._last_written_at >= self._timing.decision_refresh_seconds
        if key == self._last_written and not due and self._sink_healthy:
            return
        if not self._sink_healthy and moment < self._next_write_attempt:
            return  # a failing sink is retried every retry_seconds, not every turn
        try:
            self._sink(decision)
        except OSError as error:
            if self._sink_healthy or self._last_written is None:
                log.error("could not write the decision", error=str(error))
            self._sink_healthy = False
            self._next_write_attempt = moment + self._timing.retry_seconds
            self._metrics.decision_write_errors.inc()
            return
        if not self._sink_healthy and self._last_written is not None:
            log.info("the decision is written again")
        if key != self._last_written:
            log.info(
                "decision changed",
                state=decision.state.value,
                throttle_factor=decision.throttle_factor,
                unknown_brokers=decision.unknown_brokers,
                caused_by_missing_data=decision.caused_by_missing_data,
                driver=decision.reasons[0].detail if decision.reasons else None,
            )
        self._sink_healthy = True
        self._last_written = key
        self._last_written_at = moment
        self._metrics.decision_writes.inc()
