"""The thin loop that drives the publication core: measure, tell the core, carry out its actions.

Every ``sample_interval`` it picks up rotated TLS credentials, measures the volumes, builds a
snapshot and hands it to :class:`~publisher.publication_core.PublisherCore`; between ticks it
serves the producer's delivery reports. What the core answers (send, rebuild the producer,
connectivity, counts) becomes calls to the sink, metrics and log lines here. It never raises for
Kafka trouble, and an unexpected exception in one tick is logged and the loop goes on.

Everything outside (volumes, sink, clock, metrics, credentials) is passed in, so unit tests drive
it with fakes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import structlog

from consumer.clock import Clock
from publisher.health import HealthInputs
from publisher.kafka_sink import ClientIssueCallback, SendError, SnapshotSink
from publisher.publication_core import (
    Action,
    ClientIssue,
    ClientIssueSeen,
    ClientTrouble,
    ConnectivityChanged,
    CoreSettings,
    DeliveryReported,
    ProducerUnusable,
    PublicationDelivered,
    PublicationDue,
    PublicationFailed,
    PublisherCore,
    RebuildProducer,
    SampleFailed,
    SampleLost,
    SampleTaken,
    Send,
)
from publisher.publication_policy import PublicationPolicy, PublicationReason
from publisher.publisher_metrics import PublisherMetrics
from publisher.snapshot_building import build_snapshot
from publisher.volumes import Volume, VolumeMeasurement
from schemas.snapshot import Limit, VolumeSnapshot, snapshot_key

log = structlog.get_logger(logger_name="volume_quota.publisher")

BrokerMeasurements = Mapping[int, Sequence[VolumeMeasurement]]
"""Each broker's measured volumes: one broker for a sidecar, every broker for a cluster-level
publisher (a broker that could not be measured is left out and gets no snapshot)."""
Measure = Callable[[], BrokerMeasurements]


def measuring(
    broker_id: int,
    volumes: Sequence[Volume],
    measure: Callable[[Sequence[Volume]], list[VolumeMeasurement]],
) -> Measure:
    """A sidecar's measurement: this broker's ``volumes``, by ``measure`` (statvfs)."""
    fixed = list(volumes)
    return lambda: {broker_id: measure(fixed)}


SinkFactory = Callable[[ClientIssueCallback], SnapshotSink]
"""Builds the sink, given the loop's handler for client trouble (the producer's ``error_cb``)."""

REBUILD_FLUSH_SECONDS = 1.0
POLL_SLICE_SECONDS = 0.25
"""Longest single wait inside the producer, so a stop request is seen within this time."""


class Credentials(Protocol):
    """The client's TLS files: when they expire, and whether a usable new set arrived."""

    @property
    def not_after(self) -> datetime: ...

    @property
    def last_problem(self) -> str | None: ...

    def rotated(self, now: datetime) -> object | None: ...

    def sign(self, key: bytes, value: bytes | None) -> list[tuple[str, bytes]]:
        """The record headers that sign this message (``schemas.signature``)."""
        ...


@dataclass(frozen=True, slots=True)
class LoopSettings:
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
        measure: Measure,
        sink_factory: SinkFactory,
        clock: Clock,
        metrics: PublisherMetrics,
        topic_ready: Callable[[], bool] = lambda: True,
        topic_problem: Callable[[], str | None] = lambda: None,
        credentials: Credentials | None = None,
    ) -> None:
        self._settings = settings
        self._measure = measure
        self._clock = clock
        self._metrics = metrics
        self._topic_ready = topic_ready
        self._topic_problem = topic_problem
        self._credentials = credentials
        self._core = PublisherCore(
            CoreSettings(settings.policy, settings.delivery_timeout_seconds), clock.monotonic()
        )
        metrics.kafka_connected.set(0)
        self._sink = sink_factory(self.on_client_issue)

    def health_inputs(self) -> HealthInputs:
        return self._core.health_inputs(
            topic_ready=self._topic_ready(), topic_problem=self._topic_problem()
        )

    @property
    def last_sent_snapshot(self) -> VolumeSnapshot | None:
        return self._core.last_sent_snapshot

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
        self._take_rotated_credentials()
        now = self._clock.monotonic()
        wall = self._clock.wall()
        if self._sink.needs_rebuild:
            self._carry_out(self._core.handle(ProducerUnusable(now)))
        if self._credentials is not None:
            expiry = self._credentials.not_after
            self._metrics.certificate_expiry.set(expiry.timestamp())
            self._metrics.certificate_remaining.set((expiry - wall).total_seconds())
        try:
            measured = self._measure()
        except OSError as error:
            self._carry_out(self._core.handle(SampleFailed(str(error), now)))
            return
        self._metrics.last_sample.set(wall.timestamp())
        self._metrics.record_volumes(measured)
        for broker_id, measurements in sorted(measured.items()):
            snapshot = build_snapshot(
                broker_id, measurements, self._settings.soft_limit, self._settings.hard_limit, wall
            )
            self._carry_out(self._core.handle(SampleTaken(snapshot, now)))

    def flush(self, timeout_seconds: float) -> int:
        """Deliver what is outstanding, for at most ``timeout_seconds``; returns what is left."""
        return self._sink.flush(timeout_seconds)

    def on_client_issue(self, issue: ClientIssue) -> None:
        """The producer's ``error_cb``, classified by the sink."""
        self._carry_out(self._core.handle(ClientTrouble(issue, self._clock.monotonic())))

    # -- carrying out the core's actions ----------------------------------------------------

    def _carry_out(self, actions: list[Action]) -> None:
        for action in actions:
            match action:
                case Send():
                    self._send(action)
                case RebuildProducer():
                    self._sink.rebuild(REBUILD_FLUSH_SECONDS, elsewhere=True)
                    log.warning(
                        "producer rebuilt after a fatal client error or failed deliveries",
                        rebuilds_in_a_row=action.rebuilds_in_a_row,
                        next_rebuild_in_seconds=action.next_rebuild_in_seconds,
                        bootstrap=self._sink.bootstrap_servers,
                    )
                case PublicationDue() if action.reason is not PublicationReason.HEARTBEAT:
                    log.info("publication due", reason=action.reason.value, detail=action.detail)
                case PublicationDelivered():
                    self._metrics.publications.labels(action.reason.value).inc()
                    self._metrics.last_publication.set(self._clock.wall().timestamp())
                    log.debug("snapshot delivered", reason=action.reason.value)
                case PublicationFailed():
                    self._metrics.publication_errors.inc()
                    log.warning(
                        "snapshot not delivered",
                        error=action.error,
                        consecutive_failures=action.consecutive_failures,
                        retry_in_seconds=action.retry_in_seconds,
                    )
                case ConnectivityChanged():
                    self._metrics.kafka_connected.set(1 if action.connected else 0)
                case ClientIssueSeen():
                    self._client_issue_seen(action)
                case SampleLost():
                    log.error("cannot measure volumes", error=action.error)

    def _send(self, action: Send) -> None:
        def on_result(error: str | None) -> None:
            report = DeliveryReported(action.message_id, error, self._clock.monotonic())
            self._carry_out(self._core.handle(report))

        key = snapshot_key(action.snapshot.broker_id)
        value = action.snapshot.to_json_bytes()
        headers = self._credentials.sign(key, value) if self._credentials else []
        try:
            self._sink.send(key, value, on_result, headers)
        except SendError as error:
            on_result(f"refused by the producer: {error}")

    def _client_issue_seen(self, action: ClientIssueSeen) -> None:
        self._metrics.kafka_client_errors.labels(action.issue.name).inc()
        if action.log:
            log.warning(
                "kafka client error",
                code=action.issue.name,
                error=action.issue.detail,
                fatal=action.issue.fatal,
                repeats_not_logged=action.repeats_not_logged,
            )

    def _take_rotated_credentials(self) -> None:
        if self._credentials is None:
            return
        rotation = self._credentials.rotated(self._clock.wall())
        if rotation is None:
            if self._credentials.last_problem is not None:
                log.warning(
                    "TLS files changed but are not usable; keeping the current producer",
                    error=self._credentials.last_problem,
                )
            return
        abandoned = self._sink.rebuild(REBUILD_FLUSH_SECONDS)
        self._metrics.certificate_reloads.inc()
        log.info(
            "TLS files changed: producer rebuilt",
            not_after=self._credentials.not_after.isoformat(),
            abandoned_messages=abandoned,
        )
