"""The publisher's main loop: sample every ``sample_interval``, publish when the policy says so.

Each tick: reload the producer if the TLS files changed, measure the volumes, build a snapshot,
ask the publication policy whether to publish, and send when the delivery pacing allows. Between
ticks the loop serves the producer's delivery reports. It never raises for Kafka trouble: a
failure is counted, logged, reflected in readiness and retried with backoff.

Everything outside (volumes, sink, clock, metrics) is passed in, so unit tests drive it with fakes.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from confluent_kafka import KafkaError

from consumer.clock import Clock
from publisher.delivery_pacing import DeliveryState, retry_delay
from publisher.health import HealthInputs
from publisher.kafka_sink import ClientErrorCallback, SendError, SnapshotSink
from publisher.publication_policy import (
    Publication,
    PublicationPolicy,
    PublicationReason,
    decide_publication,
)
from publisher.publisher_metrics import PublisherMetrics
from publisher.repeat_suppression import RepeatSuppressor
from publisher.snapshot_building import build_snapshot
from publisher.volumes import Volume, VolumeMeasurement
from schemas.snapshot import Limit, VolumeSnapshot, snapshot_key
from volume_quota.certificate_files import TlsFileWatch, check_tls_files
from volume_quota.certificate_inspection import (
    CertificateError,
    CertificateSummary,
    seconds_until_expiry,
)
from volume_quota.logging_setup import get_logger

log = get_logger("volume_quota.publisher")

Measure = Callable[[Sequence[Volume]], list[VolumeMeasurement]]
SinkFactory = Callable[[ClientErrorCallback], SnapshotSink]
"""Builds the sink, given the loop's handler for client errors (the producer's ``error_cb``)."""

DISCONNECTING_ERRORS = frozenset(
    {KafkaError._ALL_BROKERS_DOWN, KafkaError._AUTHENTICATION, KafkaError._SSL}
)
"""Client errors after which Kafka counts as unreachable until a delivery succeeds."""

REBUILD_FLUSH_SECONDS = 1.0
POLL_SLICE_SECONDS = 0.25
"""Longest single wait inside the producer, so a stop request is seen within this time."""


@dataclass(frozen=True, slots=True)
class LoopSettings:
    broker_id: int
    soft_limit: Limit
    hard_limit: Limit
    policy: PublicationPolicy
    sample_interval_seconds: float = 1.0
    delivery_timeout_seconds: float = 15.0


class PublicationLoop:
    def __init__(
        self,
        settings: LoopSettings,
        *,
        volumes: Sequence[Volume],
        measure: Measure,
        sink_factory: SinkFactory,
        clock: Clock,
        metrics: PublisherMetrics,
        topic_ready: Callable[[], bool] = lambda: True,
        topic_problem: Callable[[], str | None] = lambda: None,
        tls_watch: TlsFileWatch | None = None,
    ) -> None:
        self._settings = settings
        self._volumes = list(volumes)
        self._measure = measure
        self._clock = clock
        self._metrics = metrics
        self._topic_ready = topic_ready
        self._topic_problem = topic_problem
        self._tls_watch = tls_watch
        self._key = snapshot_key(settings.broker_id)
        self._delivery = DeliveryState()
        self._last_sent: Publication | None = None
        self._started_at = clock.monotonic()
        self._last_sample_at: float | None = None
        self._last_delivery_at: float | None = None
        self._connected = False
        self._rejected_tls_fingerprint: tuple[str, ...] | None = None
        self._certificate: CertificateSummary | None = None
        self._client_error_log = RepeatSuppressor(window_seconds=60.0)
        self._fatal_rebuilds = 0
        self._next_rebuild_at = -math.inf
        if tls_watch is not None:
            self._certificate = check_tls_files(tls_watch.files)
        metrics.kafka_connected.set(0)
        self._sink = sink_factory(self.on_client_error)

    # -- state for health and tests ---------------------------------------------------------

    def health_inputs(self) -> HealthInputs:
        return HealthInputs(
            started_at=self._started_at,
            last_sample_at=self._last_sample_at,
            last_delivery_at=self._last_delivery_at,
            kafka_connected=self._connected,
            topic_ready=self._topic_ready(),
            topic_problem=self._topic_problem(),
        )

    @property
    def last_sent_snapshot(self) -> VolumeSnapshot | None:
        return self._last_sent.snapshot if self._last_sent is not None else None

    # -- the loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Tick every ``sample_interval`` until ``stop`` is set."""
        interval = self._settings.sample_interval_seconds
        next_tick = self._clock.monotonic()
        while not stop.is_set():
            self._tick_surviving_bugs()
            next_tick += interval
            now = self._clock.monotonic()
            if next_tick < now:  # fell behind (slow filesystem, long rebuild): do not burst
                next_tick = now + interval
            self.serve_until(next_tick, stop)

    def _tick_surviving_bugs(self) -> None:
        """One tick; an unexpected exception is logged and the loop goes on (liveness and
        readiness report it if it keeps happening), rather than silently ending publication."""
        try:
            self.tick()
        except Exception as error:
            with contextlib.suppress(Exception):  # even the log may be broken (closed stderr)
                log.exception("unexpected error in the publication loop", error=repr(error))

    def serve_until(self, deadline: float, stop: threading.Event) -> None:
        """Serve delivery reports until the monotonic ``deadline`` or ``stop``."""
        while not stop.is_set():
            remaining = deadline - self._clock.monotonic()
            if remaining <= 0:
                return
            self._sink.poll(min(remaining, POLL_SLICE_SECONDS))

    def tick(self) -> None:
        self._reload_certificates_if_changed()
        now = self._clock.monotonic()
        self._rebuild_after_fatal_error(now)
        wall = self._clock.wall()
        self._record_certificate_expiry(wall)
        try:
            measurements = self._measure(self._volumes)
        except OSError as error:
            log.error("cannot measure volumes", error=str(error))
            return
        self._last_sample_at = now
        self._metrics.last_sample.set(wall.timestamp())
        self._metrics.record_volumes(self._settings.broker_id, measurements)
        snapshot = build_snapshot(
            self._settings.broker_id,
            measurements,
            self._settings.soft_limit,
            self._settings.hard_limit,
            wall,
        )
        decision = decide_publication(self._last_sent, snapshot, now, self._settings.policy)
        if decision.reason is not None:
            if decision.reason is not PublicationReason.HEARTBEAT:
                log.info("publication due", reason=decision.reason.value, detail=decision.detail)
            self._delivery = self._delivery.request(decision.reason)
        self._expire_unanswered(now)
        # Sending does not wait for the topic check: the producer never auto-creates topics, so
        # a missing topic is a counted, retried failure, and an unreachable cluster at start
        # shows in the error counter like any other outage.
        if self._delivery.may_send(now):
            self._send(snapshot, now)

    def _rebuild_after_fatal_error(self, now: float) -> None:
        """A producer in a fatal state (e.g. refused an idempotent producer id) is replaced, with
        a backoff: a refusal that persists must not make a new connection every second."""
        if not self._sink.needs_rebuild or now < self._next_rebuild_at:
            return
        self._fatal_rebuilds += 1
        delay = retry_delay(self._fatal_rebuilds, base_seconds=1.0, cap_seconds=60.0)
        self._next_rebuild_at = now + delay
        log.warning(
            "rebuilding the producer after a fatal client error",
            rebuilds_in_a_row=self._fatal_rebuilds,
            next_rebuild_in_seconds=delay,
        )
        self._sink.rebuild(REBUILD_FLUSH_SECONDS)

    def flush(self, timeout_seconds: float) -> int:
        """Deliver what is outstanding, for at most ``timeout_seconds``; returns what is left."""
        return self._sink.flush(timeout_seconds)

    # -- sending ----------------------------------------------------------------------------

    def _send(self, snapshot: VolumeSnapshot, now: float) -> None:
        reason = self._delivery.due
        assert reason is not None  # may_send guarantees it
        message_id = self._delivery.next_message_id
        self._delivery = self._delivery.sent(now)
        self._last_sent = Publication(snapshot, now)
        sent_at = snapshot.snapshot_at

        def on_result(error: str | None) -> None:
            self._on_delivery(message_id, reason, sent_at, error)

        try:
            self._sink.send(self._key, snapshot.to_json_bytes(), on_result)
        except SendError as error:
            self._on_delivery(message_id, reason, sent_at, f"refused by the producer: {error}")

    def _on_delivery(
        self,
        message_id: int,
        reason: PublicationReason,
        snapshot_at: datetime,
        error: str | None,
    ) -> None:
        now = self._clock.monotonic()
        if error is None:
            self._fatal_rebuilds = 0
            self._delivery = self._delivery.delivered(message_id)
            self._last_delivery_at = now
            self._set_connected(True)
            self._metrics.publications.labels(reason.value).inc()
            self._metrics.last_publication.set(self._clock.wall().timestamp())
            log.debug("snapshot delivered", reason=reason.value, snapshot_at=str(snapshot_at))
            return
        if self._delivery.in_flight is None or self._delivery.in_flight.message_id != message_id:
            return  # already counted (expired while unanswered)
        self._delivery = self._delivery.failed(message_id, now)
        self._metrics.publication_errors.inc()
        self._set_connected(False)
        log.warning(
            "snapshot not delivered",
            error=error,
            consecutive_failures=self._delivery.consecutive_failures,
            retry_in_seconds=round(max(0.0, self._delivery.not_before - now), 3),
        )

    def _expire_unanswered(self, now: float) -> None:
        """A delivery report that never comes must not block publication forever."""
        limit = self._settings.delivery_timeout_seconds + 5.0
        in_flight = self._delivery.in_flight
        if in_flight is not None and self._delivery.overdue(now, limit):
            self._on_delivery(
                in_flight.message_id,
                in_flight.reason,
                self._clock.wall(),
                f"no delivery report within {limit:g}s",
            )

    def on_client_error(self, error: KafkaError) -> None:
        """The producer's ``error_cb``: connection, TLS and authentication trouble."""
        self._metrics.kafka_client_errors.labels(error.name()).inc()
        if error.code() in DISCONNECTING_ERRORS:
            self._set_connected(False)
        suppressed = self._client_error_log.admit(error.name(), self._clock.monotonic())
        if suppressed is not None:
            log.warning(
                "kafka client error",
                code=error.name(),
                error=error.str(),
                fatal=error.fatal(),
                repeats_not_logged=suppressed,
            )

    def _set_connected(self, connected: bool) -> None:
        self._connected = connected
        self._metrics.kafka_connected.set(1 if connected else 0)

    # -- certificates -----------------------------------------------------------------------

    def _reload_certificates_if_changed(self) -> None:
        if self._tls_watch is None:
            return
        changed = self._tls_watch.changed()
        if changed is None or changed == self._rejected_tls_fingerprint:
            return
        try:
            summary = check_tls_files(self._tls_watch.files)
        except (CertificateError, OSError) as error:
            self._rejected_tls_fingerprint = changed
            log.warning(
                "TLS files changed but are not usable yet; keeping the current producer",
                error=str(error),
            )
            return
        abandoned = self._sink.rebuild(REBUILD_FLUSH_SECONDS)
        self._tls_watch.accept(changed)
        self._rejected_tls_fingerprint = None
        self._certificate = summary
        self._metrics.certificate_reloads.inc()
        log.info(
            "TLS files changed: producer rebuilt",
            subject=summary.subject,
            not_after=summary.not_after.isoformat(),
            abandoned_messages=abandoned,
        )

    def _record_certificate_expiry(self, wall: datetime) -> None:
        if self._certificate is None:
            return
        self._metrics.certificate_expiry.set(self._certificate.not_after.timestamp())
        self._metrics.certificate_remaining.set(seconds_until_expiry(self._certificate, wall))
