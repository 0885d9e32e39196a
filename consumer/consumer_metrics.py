"""Prometheus metrics of the consumer: what it decided, and how much it could see."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from schemas.decision import QuotaDecision, QuotaState, ReasonKind


class ConsumerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.state = Gauge(
            "volume_quota_decision_state",
            "1 for the cluster decision's current state, 0 for the others.",
            ["state"],
            registry=registry,
        )
        self.throttle_factor = Gauge(
            "volume_quota_throttle_factor",
            "Multiplier on every producer's base quota: 1 OPEN, 0 PAUSE.",
            registry=registry,
        )
        self.unknown_brokers = Gauge(
            "volume_quota_unknown_brokers",
            "Live brokers without a fresh valid snapshot.",
            registry=registry,
        )
        self.stale_snapshots = Gauge(
            "volume_quota_stale_snapshots",
            "Live brokers whose newest snapshot is stale or dated in the future.",
            registry=registry,
        )
        self.throttling_for_missing_data = Gauge(
            "volume_quota_throttling_for_missing_data",
            "1 when the on-missing action, not a measured volume, set the decision.",
            registry=registry,
        )
        self.caught_up = Gauge(
            "volume_quota_consumer_caught_up",
            "1 once the snapshot topic was read to the end offsets seen at start.",
            registry=registry,
        )
        self.messages = Counter(
            "volume_quota_snapshot_messages_total",
            "Messages read from the snapshot topic, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.invalid_messages = Counter(
            "volume_quota_invalid_messages_total",
            "Messages skipped because they could not be used, by reason.",
            ["reason"],
            registry=registry,
        )
        self.signature_checks = Counter(
            "volume_quota_snapshot_signature_checks_total",
            "Signature checks of snapshot messages, by outcome (valid, unsigned, bad_signature, "
            "untrusted_certificate, expired_certificate, wrong_identity, malformed).",
            ["outcome"],
            registry=registry,
        )
        self.reader_reconnects = Counter(
            "volume_quota_snapshot_reader_reconnects_total",
            "Times the snapshot reader read nothing for half of stale-after and rebuilt its "
            "consumer through another broker.",
            registry=registry,
        )
        self.live_broker_errors = Counter(
            "volume_quota_live_broker_refresh_errors_total",
            "Failed attempts to learn the live brokers from the Admin client.",
            registry=registry,
        )
        self.decision_writes = Counter(
            "volume_quota_decision_file_writes_total",
            "Decisions written to the decision file.",
            registry=registry,
        )
        self.decision_write_errors = Counter(
            "volume_quota_decision_file_write_errors_total",
            "Failed writes of the decision file.",
            registry=registry,
        )
        self.read_errors = Counter(
            "volume_quota_snapshot_topic_errors_total",
            "Failures to read the snapshot topic (it is retried).",
            registry=registry,
        )

    def observe_decision(self, decision: QuotaDecision) -> None:
        for state in QuotaState:
            self.state.labels(state=state.value).set(1 if decision.state is state else 0)
        self.throttle_factor.set(decision.throttle_factor)
        self.unknown_brokers.set(len(decision.unknown_brokers))
        self.throttling_for_missing_data.set(1 if decision.caused_by_missing_data else 0)
        stale = sum(
            1 for reason in decision.reasons if reason.kind in (ReasonKind.STALE, ReasonKind.FUTURE)
        )
        self.stale_snapshots.set(stale)


class SnapshotAgeCollector(Collector):
    """``volume_quota_snapshot_age_seconds{broker}``, computed at scrape time, not per update."""

    def __init__(
        self,
        snapshot_times: Callable[[], Iterable[tuple[int, float]]],
        clock: Callable[[], datetime],
    ) -> None:
        self._snapshot_times = snapshot_times
        self._clock = clock

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "volume_quota_snapshot_age_seconds",
            "Age of each broker's newest valid snapshot.",
            labels=["broker"],
        )
        now = self._clock().timestamp()
        for broker_id, snapshot_timestamp in self._snapshot_times():
            family.add_metric([str(broker_id)], now - snapshot_timestamp)
        yield family
