"""``volume-quota publish`` as a long-running daemon: the wiring of the imperative shell.

Discovers the volumes, builds the producer, starts the HTTP endpoints and the topic guard, runs
the publication loop until stopped (SIGTERM/SIGINT or a ``threading.Event``), then flushes for at
most ``shutdown_timeout`` and exits. Usable in-process::

    daemon = PublisherDaemon(settings)      # validates; binds the HTTP port
    daemon.run(stop_event)                  # blocks until stop_event is set
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from prometheus_client import CollectorRegistry

from consumer.clock import Clock, SystemClock
from publisher.health import HealthLimits, HealthVerdict, assess_liveness, assess_readiness
from publisher.kafka_sink import KafkaSnapshotSink
from publisher.limit_feasibility import limit_problems
from publisher.log_dir_survey import LogDirAdmin, LogDirSurvey
from publisher.publication_loop import (
    LoopSettings,
    Measure,
    PublicationLoop,
    SinkFactory,
    measuring,
)
from publisher.publication_policy import PublicationPolicy
from publisher.publisher_metrics import PublisherMetrics
from publisher.topic_config_share import ClusterView, SharedTopicConfigs
from publisher.topic_requirements import TopicRequirements
from publisher.topic_setup import TopicGuard, new_admin_client
from publisher.topic_usage import summarize_volumes
from publisher.topic_usage_walk import walk_volumes
from publisher.usage_publication import UsagePublisher, UsageSchedule
from publisher.volume_discovery import VolumeDiscoveryError, discover_volumes
from publisher.volume_measurement import measure_volumes
from publisher.volumes import Volume
from volume_quota.certificate_files import TlsCredentials
from volume_quota.certificate_inspection import CertificateError
from volume_quota.config import PublishSettings, describe_setting
from volume_quota.config.concerns import HttpSettings
from volume_quota.daemons.agent_usage import AgentUsagePublication, agent_usage_publication
from volume_quota.daemons.topic_configs import topic_config_reader
from volume_quota.errors import UsageError
from volume_quota.http_endpoints import EndpointServer, HealthCheck
from volume_quota.kafka_client_config import (
    KafkaConnection,
    admin_config,
    kafka_python_admin_config,
    producer_config,
)
from volume_quota.limit_parsing import format_limit
from volume_quota.logging_setup import get_logger, with_client_logger

log = get_logger("volume_quota.publisher")

LIVENESS_GRACE_SECONDS = 30.0
AGENT_CLIENT = "cluster"
"""The client-id suffix of a cluster-level publisher (it speaks for no single broker)."""


def check_limits_against_capacity(settings: PublishSettings, volumes: list[Volume]) -> None:
    """Refuse limits no volume can ever meet (one line each); warn about those that can never
    trigger."""
    try:
        measured = measure_volumes(volumes)
    except OSError:
        return  # the loop reports an unreadable volume as it does at any time
    errors, warnings = limit_problems(measured, settings.soft_limit, settings.hard_limit)
    for warning in warnings:
        log.warning("limit can never trigger", detail=warning)
    if errors:
        raise UsageError(*errors)


def discover_configured_volumes(settings: PublishSettings) -> list[Volume]:
    try:
        return discover_volumes(settings.required_log_dirs(), settings.volume_limits)
    except VolumeDiscoveryError as error:
        raise UsageError(str(error)) from None


class UsagePublication:
    """The topic usage document's own topic check and publisher (``publisher.usage_publication``):
    started after the snapshot loop's, and never able to stop or delay it."""

    def __init__(
        self,
        settings: PublishSettings,
        broker_id: int,
        volumes: list[Volume],
        *,
        clock: Clock,
        metrics: PublisherMetrics,
    ) -> None:
        connection = settings.required_kafka_connection()
        producer_settings = with_client_logger(
            producer_config(connection, broker_id, settings.delivery_timeout)
        )
        requirements = settings.usage_topic_requirements()
        self.guard = TopicGuard(
            lambda: new_admin_client(with_client_logger(admin_config(connection, broker_id))),
            requirements,
            create=settings.create_topic,
            timeout_seconds=min(10.0, settings.delivery_timeout),
            recheck_seconds=settings.topic_recheck_interval,
        )
        tls = settings.client_tls_files()
        top = settings.usage_top_topics
        fixed = list(volumes)
        config_admin = admin_config(connection, broker_id)
        self.topic_configs = SharedTopicConfigs(
            topic_config_reader(
                lambda: new_admin_client(with_client_logger(config_admin)),
                min(10.0, settings.delivery_timeout),
            ),
            settings.topic_configs_interval,
            clock=clock,
            metrics=metrics,
        )
        """Until a decider's view is attached (``PublisherDaemon.attach_cluster_view``), this
        publisher reads the configs as if alone (``volume-quota publish``)."""
        self.publisher = UsagePublisher(
            UsageSchedule(broker_id, settings.usage_interval, settings.delivery_timeout),
            survey=lambda: summarize_volumes(walk_volumes(fixed), top),
            sink_factory=lambda on_client_issue: KafkaSnapshotSink(
                producer_settings, settings.usage_topic, on_client_issue=on_client_issue
            ),
            clock=clock,
            metrics=metrics,
            topic_ready=self.guard.ready.is_set,
            credentials=None if tls is None else TlsCredentials(tls),
            topic_configs=self.topic_configs,
        )

    def start(self) -> None:
        self.guard.start()
        self.publisher.start()

    def stop(self) -> None:
        self.guard.stop()
        self.publisher.stop()


class PublisherDaemon:
    def __init__(
        self,
        settings: PublishSettings,
        clock: Clock | None = None,
        sink_factory: SinkFactory | None = None,
        *,
        serve_http: bool = True,
    ) -> None:
        self._settings = settings
        self._clock = clock or SystemClock()
        connection = settings.required_kafka_connection()
        self._tls = settings.client_tls_files()
        """The client certificate that signs snapshots; None (unsigned) with SASL_SSL alone."""
        self.broker_id: int | None = None
        self.volumes: list[Volume] = []
        self._survey: LogDirSurvey | None = None
        if settings.source == "admin":
            self._survey = LogDirSurvey(
                lambda: _kafka_python_admin(connection), settings.volume_limits
            )
            self._measure: Measure = self._survey.measure
            self._interval = settings.survey_interval
        else:
            self.broker_id = settings.required_broker_id()
            self.volumes = discover_configured_volumes(settings)
            check_limits_against_capacity(settings, self.volumes)
            self._measure = measuring(self.broker_id, self.volumes, measure_volumes)
            self._interval = settings.sample_interval
        client = AGENT_CLIENT if self.broker_id is None else self.broker_id
        self._requirements: TopicRequirements = settings.topic_requirements()
        self.metrics = PublisherMetrics()
        self._topic_guard = TopicGuard(
            lambda: new_admin_client(with_client_logger(admin_config(connection, client))),
            self._requirements,
            create=settings.create_topic,
            timeout_seconds=min(10.0, settings.delivery_timeout),
            recheck_seconds=settings.topic_recheck_interval,
        )
        guard = self._topic_guard
        self.metrics.topic_misconfigured.set_function(lambda: float(guard.misconfigured_now))
        producer_settings = with_client_logger(
            producer_config(connection, client, settings.delivery_timeout)
        )
        self._sink_factory: SinkFactory = sink_factory or (
            lambda on_client_issue: KafkaSnapshotSink(
                producer_settings, settings.topic, on_client_issue=on_client_issue
            )
        )
        self._usage = self._usage_publication()
        self._loop: PublicationLoop | None = None
        self._health_limits = HealthLimits(
            liveness_max_age_seconds=max(LIVENESS_GRACE_SECONDS, 10 * self._interval),
            readiness_max_age_seconds=settings.readiness_max_age,
        )
        self._server = (
            serve_endpoints(settings, self.metrics.registry, self.liveness, self.readiness)
            if serve_http
            else None
        )

    def _usage_publication(self) -> UsagePublication | AgentUsagePublication | None:
        """The topic usage publication: of the sidecar's own broker, or of every broker for a
        cluster-level publisher (``source=admin``)."""
        if not self._settings.publish_usage:
            return None
        if self.broker_id is None:
            connection = self._settings.required_kafka_connection()
            return agent_usage_publication(
                self._settings,
                lambda: _kafka_python_admin(connection),
                AGENT_CLIENT,
                clock=self._clock,
                metrics=self.metrics,
            )
        return UsagePublication(
            self._settings, self.broker_id, self.volumes, clock=self._clock, metrics=self.metrics
        )

    def attach_cluster_view(self, view: ClusterView) -> None:
        """Share the reading of topic configs with the other brokers' sidecars, through what
        ``view`` (this process's decider) knows of them (``publisher.topic_config_share``)."""
        if isinstance(self._usage, UsagePublication):
            self._usage.topic_configs.attach(view)

    @property
    def http_port(self) -> int:
        if self._server is None:
            raise RuntimeError("this daemon serves no HTTP endpoints (serve_http=False)")
        return self._server.port

    def liveness(self) -> HealthVerdict:
        if self._loop is None:
            return HealthVerdict(False, ("starting",))
        return assess_liveness(
            self._loop.health_inputs(), self._clock.monotonic(), self._health_limits
        )

    def readiness(self) -> HealthVerdict:
        if self._loop is None:
            return HealthVerdict(False, ("starting",))
        return assess_readiness(
            self._loop.health_inputs(), self._clock.monotonic(), self._health_limits
        )

    def run(self, stop: threading.Event) -> int:
        """Publish until ``stop`` is set; 0 on a clean stop. A misconfigured topic raises
        ``UsageError`` (exit status 2)."""
        settings = self._settings
        loop: PublicationLoop | None = None
        if self._server is not None:
            self._server.start()
        try:
            loop = self._build_loop()
            self._loop = loop
            log.info(
                "publisher started",
                source=settings.source,
                broker_id=self.broker_id,
                volumes=[
                    {
                        "name": volume.name,
                        "mount_point": volume.mount_point,
                        "log_dirs": volume.log_dirs,
                    }
                    for volume in self.volumes
                ],
                soft_limit=format_limit(settings.soft_limit),
                hard_limit=format_limit(settings.hard_limit),
                topic=settings.topic,
                security_protocol=settings.security_protocol,
                snapshots_signed=self._tls is not None,
                http_port=None if self._server is None else self.http_port,
            )
            self._topic_guard.start()
            if self._usage is not None:
                self._usage.start()
            misconfiguration = self._run_loop(loop, stop)
            if misconfiguration is not None:
                raise UsageError(misconfiguration)
            return 0
        finally:
            self._topic_guard.stop()
            if self._usage is not None:
                self._usage.stop()
            if self._survey is not None:
                self._survey.close()
            if loop is not None:
                pending = loop.flush(settings.shutdown_timeout)
                log.info("publisher stopped", undelivered_messages=pending)
            if self._server is not None:
                self._server.stop()

    def _build_loop(self) -> PublicationLoop:
        try:
            return self._new_loop()
        except (CertificateError, OSError) as error:  # the files changed since validation
            raise UsageError(f"{describe_setting('tls_cert_file')}: {error}") from None

    def _new_loop(self) -> PublicationLoop:
        settings = self._settings
        loop_settings = LoopSettings(
            soft_limit=settings.soft_limit,
            hard_limit=settings.hard_limit,
            policy=PublicationPolicy(
                heartbeat_interval_seconds=settings.heartbeat_interval,
                change_threshold_percent=settings.change_threshold_percent,
            ),
            sample_interval_seconds=self._interval,
            delivery_timeout_seconds=settings.delivery_timeout,
        )
        return PublicationLoop(
            loop_settings,
            measure=self._measure,
            sink_factory=self._sink_factory,
            clock=self._clock,
            metrics=self.metrics,
            topic_ready=self._topic_guard.ready.is_set,
            topic_problem=lambda: self._topic_guard.problem,
            credentials=None if self._tls is None else TlsCredentials(self._tls),
        )

    def _run_loop(self, loop: PublicationLoop, stop: threading.Event) -> str | None:
        """Run the loop, and stop it when the topic guard finds the topic misconfigured."""
        watcher_stop = threading.Event()

        def watch_topic() -> None:
            while not watcher_stop.wait(0.5):
                if self._topic_guard.misconfiguration is not None:
                    stop.set()
                    return

        watcher = threading.Thread(target=watch_topic, name="volume-quota-topic-watch", daemon=True)
        watcher.start()
        try:
            loop.run(stop)
        finally:
            watcher_stop.set()
            watcher.join(timeout=2)
        return self._topic_guard.misconfiguration


def serve_endpoints(
    settings: HttpSettings,
    registry: CollectorRegistry,
    liveness: HealthCheck,
    readiness: HealthCheck,
) -> EndpointServer:
    """Bind /metrics, /healthz and /readyz; a busy port is a one-line configuration error."""
    try:
        return EndpointServer(
            settings.metrics_host, settings.metrics_port, registry, liveness, readiness
        )
    except OSError as error:
        raise UsageError(
            f"{describe_setting('metrics_port')}: cannot listen on "
            f"{settings.metrics_host}:{settings.metrics_port}: "
            f"{os.strerror(error.errno) if error.errno else error}"
        ) from None


def _kafka_python_admin(connection: KafkaConnection) -> LogDirAdmin:
    # Imported here: kafka-python loads its protocol tables when imported, which only the
    # cluster-level publisher needs, not every `volume-quota` command.
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415

    admin: LogDirAdmin = KafkaAdminClient(**kafka_python_admin_config(connection, AGENT_CLIENT))
    return admin


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Set ``stop`` on SIGTERM or SIGINT while inside; only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        log.info("stop requested", signal=signal.Signals(signum).name)
        stop.set()

    previous = {
        signum: signal.signal(signum, request_stop) for signum in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
