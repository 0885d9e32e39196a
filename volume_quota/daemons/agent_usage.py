"""The topic usage documents of a cluster-level publisher (``cluster-agent``): one per broker.

Every ``usage_interval`` it asks the cluster for its live brokers, then each broker for its log
dirs with their partitions (DescribeLogDirs), and publishes each broker's document as that
broker's sidecar would (``publisher.log_dir_usage`` turns the answer into the sidecar's
summaries; ``publisher.usage_publication.UsagePublisher`` builds, signs and sends the document
and keeps the growth history, one per broker). Like the sidecar's, it has its own thread,
topic check and producers: it never delays a snapshot nor fails ``/readyz``; every failure is
logged and counted (``volume_quota_usage_failures_total{stage}``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from consumer.clock import Clock
from consumer.topic_config_reads import DEFAULT_TOPIC_CONFIGS_INTERVAL_SECONDS
from publisher.kafka_sink import KafkaSnapshotSink
from publisher.log_dir_usage import log_dir_contents, usage_from_log_dirs
from publisher.publication_loop import Credentials
from publisher.publisher_metrics import PublisherMetrics
from publisher.topic_config_share import OwnView, SharedTopicConfigs, TopicConfigReader
from publisher.topic_setup import TopicGuard, new_admin_client
from publisher.topic_usage import VolumeTopicUsage
from publisher.usage_publication import (
    UsagePublisher,
    UsageSchedule,
    UsageSinkFactory,
    wait_for_usage_topic,
)
from volume_quota.certificate_files import TlsCredentials
from volume_quota.config import PublishSettings
from volume_quota.daemons.topic_configs import topic_config_reader
from volume_quota.kafka_client_config import admin_config, producer_config
from volume_quota.logging_setup import get_logger, with_client_logger

log = get_logger("volume_quota.publisher")


class BrokerLogDirs(Protocol):
    """The two questions the agent asks the cluster for topic usage."""

    def live_brokers(self) -> list[int]: ...

    def log_dirs(self, broker_id: int) -> list[dict[str, Any]]:
        """The broker's log dirs with every partition in them, as kafka-python answers them."""
        ...

    def close(self) -> None: ...


class KafkaPythonLogDirs:
    """``BrokerLogDirs`` through kafka-python's ``KafkaAdminClient`` (librdkafka has no
    DescribeLogDirs)."""

    def __init__(self, admin: Any) -> None:
        self._admin = admin

    def live_brokers(self) -> list[int]:
        cluster: dict[str, Any] = self._admin.describe_cluster()
        return sorted(
            int(broker["broker_id"])
            for broker in cluster.get("brokers", [])
            if not broker.get("is_fenced", False)
        )

    def log_dirs(self, broker_id: int) -> list[dict[str, Any]]:
        """The public ``describe_log_dirs`` first lists the topics to ask about through
        Metadata, which names only the topics the principal may DESCRIBE: the agent may describe
        the cluster, not every topic. DescribeLogDirs with no topic list (null: every topic)
        needs DESCRIBE on the cluster only, so this sends that request through the client's own
        coroutine (kafka-python 3.x; ``tests/real_broker/test_agent_usage.py`` runs it)."""
        admin = self._admin
        (answer,) = admin._manager.run(admin._async_describe_log_dirs, None, [broker_id])
        log_dirs: list[dict[str, Any]] = answer["log_dirs"]
        return log_dirs

    def close(self) -> None:
        self._admin.close()


class TopicCheck(Protocol):
    """What is used of ``publisher.topic_setup.TopicGuard``."""

    @property
    def ready(self) -> threading.Event: ...

    def start(self) -> object: ...

    def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class AgentUsageSchedule:
    interval_seconds: float
    delivery_timeout_seconds: float
    top_topics: int


class AgentUsagePublication:
    """Every live broker's topic usage, published under the agent's identity."""

    def __init__(
        self,
        schedule: AgentUsageSchedule,
        *,
        log_dirs_factory: Callable[[], BrokerLogDirs],
        sink_factory: UsageSinkFactory,
        guard: TopicCheck,
        clock: Clock,
        metrics: PublisherMetrics,
        credentials_factory: Callable[[], Credentials | None] = lambda: None,
        topic_configs: TopicConfigReader | None = None,
        topic_configs_interval: float = DEFAULT_TOPIC_CONFIGS_INTERVAL_SECONDS,
    ) -> None:
        self._schedule = schedule
        self._log_dirs_factory = log_dirs_factory
        self._client: BrokerLogDirs | None = None
        self._sink_factory = sink_factory
        self.guard = guard
        self._clock = clock
        self._metrics = metrics
        self._credentials_factory = credentials_factory
        self._topic_configs = (
            None
            if topic_configs is None
            else SharedTopicConfigs(
                topic_configs,
                topic_configs_interval,
                clock=clock,
                metrics=metrics,
                view=OwnView(lambda: frozenset(self.publishers)),
            )
        )
        """One read of the cluster's topic configs per interval, for every broker's document;
        the lowest broker's document carries them."""
        self.publishers: dict[int, UsagePublisher] = {}
        """One per broker ever surveyed: its producer and its growth history."""
        self._failing = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="volume-quota-agent-usage", daemon=True
        )

    def start(self) -> None:
        self.guard.start()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.guard.stop()
        for publisher in list(self.publishers.values()):
            publisher.stop()  # ends a delivery wait; flushes its producer for at most 1 s
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        self._drop_client()

    def _run(self) -> None:
        interval = self._schedule.interval_seconds
        while not self._stop.is_set():
            started = self._clock.monotonic()
            if self._wait_for_topic(started + interval):
                self.publish_once()
            elapsed = self._clock.monotonic() - started
            self._stop.wait(max(0.0, interval - elapsed))

    def _wait_for_topic(self, deadline: float) -> bool:
        return wait_for_usage_topic(
            self.guard.ready.is_set, self._stop, self._clock, deadline, self._metrics
        )

    def publish_once(self) -> int:
        """One document per live broker; how many were delivered. Never raises."""
        brokers = self._live_brokers()
        if brokers is None:
            return 0
        delivered = 0
        for broker_id in brokers:
            if self._stop.is_set():
                break
            delivered += self._publisher(broker_id).publish_once()
        if self._failing:
            # A broker that failed may have restarted: start from fresh metadata next time.
            self._drop_client()
        return delivered

    def _live_brokers(self) -> list[int] | None:
        try:
            return self._log_dirs().live_brokers()
        except Exception as error:
            self._metrics.usage_failures.labels("survey").inc()
            log.warning("topic usage survey failed", error=f"{type(error).__name__}: {error}")
            self._drop_client()
            return None

    def _publisher(self, broker_id: int) -> UsagePublisher:
        publisher = self.publishers.get(broker_id)
        if publisher is None:
            schedule = self._schedule
            publisher = UsagePublisher(
                UsageSchedule(
                    broker_id, schedule.interval_seconds, schedule.delivery_timeout_seconds
                ),
                survey=lambda: self._survey(broker_id),
                sink_factory=self._sink_factory,
                clock=self._clock,
                metrics=self._metrics,
                credentials=self._credentials_factory(),
                topic_configs=self._topic_configs,
            )
            self.publishers[broker_id] = publisher
        return publisher

    def _survey(self, broker_id: int) -> list[VolumeTopicUsage]:
        try:
            answer = self._log_dirs().log_dirs(broker_id)
        except Exception:
            self._failing = True
            raise
        contents = [log_dir_contents(entry) for entry in answer]
        return usage_from_log_dirs(contents, self._schedule.top_topics)

    def _log_dirs(self) -> BrokerLogDirs:
        if self._client is None:
            self._client = self._log_dirs_factory()
        return self._client

    def _drop_client(self) -> None:
        self._failing = False
        if self._client is not None:
            try:
                self._client.close()
            except Exception as error:  # a broken client is dropped either way
                log.debug("closing the admin client failed", error=str(error))
            self._client = None


def agent_usage_publication(
    settings: PublishSettings,
    admin_factory: Callable[[], Any],
    client_id: str,
    *,
    clock: Clock,
    metrics: PublisherMetrics,
) -> AgentUsagePublication:
    """The agent's usage publication from its settings: the usage topic checked (and created)
    like the sidecar's, one producer per broker, each document signed with the agent's
    certificate (a cluster signer under ``snapshot_signatures=require``)."""
    connection = settings.required_kafka_connection()
    producer_settings = with_client_logger(
        producer_config(connection, client_id, settings.delivery_timeout)
    )
    guard = TopicGuard(
        lambda: new_admin_client(with_client_logger(admin_config(connection, client_id))),
        settings.usage_topic_requirements(),
        create=settings.create_topic,
        timeout_seconds=min(10.0, settings.delivery_timeout),
        recheck_seconds=settings.topic_recheck_interval,
    )
    tls = settings.client_tls_files()
    return AgentUsagePublication(
        AgentUsageSchedule(
            settings.usage_interval, settings.delivery_timeout, settings.usage_top_topics
        ),
        log_dirs_factory=lambda: KafkaPythonLogDirs(admin_factory()),
        sink_factory=lambda on_client_issue: KafkaSnapshotSink(
            producer_settings, settings.usage_topic, on_client_issue=on_client_issue
        ),
        guard=guard,
        clock=clock,
        metrics=metrics,
        credentials_factory=lambda: None if tls is None else TlsCredentials(tls),
        topic_configs=topic_config_reader(
            lambda: new_admin_client(with_client_logger(admin_config(connection, client_id))),
            min(10.0, settings.delivery_timeout),
        ),
        topic_configs_interval=settings.topic_configs_interval,
    )
