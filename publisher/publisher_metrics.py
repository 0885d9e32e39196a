"""The publisher's Prometheus metrics, in a registry of their own (one per daemon).

Names follow Prometheus conventions: ``volume_quota_`` prefix, base units (bytes, seconds),
``_total`` for counters, ``_timestamp_seconds`` for Unix times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

from prometheus_client import CollectorRegistry, Counter, Gauge, ProcessCollector

from publisher.volumes import VolumeMeasurement
from schemas.usage import TopicUsageDocument

VOLUME_LABELS = ("broker", "volume")
UploadBacklogs: TypeAlias = Mapping[tuple[str, str], int]
"""Per (volume name, topic): the tiered topic's upload backlog (``consumer.upload_backlog``)."""


class PublisherMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.kafka_connected = Gauge(
            "volume_quota_publisher_kafka_connected",
            "1 when the last exchange with Kafka succeeded, 0 when it failed or none happened yet.",
            registry=self.registry,
        )
        self.topic_misconfigured = Gauge(
            "volume_quota_publisher_topic_misconfigured",
            "1 when the last periodic check of the running publisher found the snapshot topic "
            "misconfigured (cleanup.policy not compact); publication goes on meanwhile.",
            registry=self.registry,
        )
        self.publication_errors = Counter(
            "volume_quota_publication_errors",
            "Snapshots that could not be published (delivery failed, timed out or was refused).",
            registry=self.registry,
        )
        self.publications = Counter(
            "volume_quota_publications",
            "Snapshots delivered to Kafka, by the reason they were published.",
            ["reason"],
            registry=self.registry,
        )
        self.kafka_client_errors = Counter(
            "volume_quota_publisher_kafka_client_errors",
            "Errors reported by the Kafka client (connection, TLS, authentication...), by code.",
            ["code"],
            registry=self.registry,
        )
        self.last_publication = Gauge(
            "volume_quota_last_successful_publication_timestamp_seconds",
            "Unix time of the last snapshot delivered to Kafka.",
            registry=self.registry,
        )
        self.last_sample = Gauge(
            "volume_quota_publisher_last_sample_timestamp_seconds",
            "Unix time of the last volume measurement.",
            registry=self.registry,
        )
        self.volume_capacity = Gauge(
            "volume_quota_volume_capacity_bytes",
            "Filesystem size of a broker volume.",
            VOLUME_LABELS,
            registry=self.registry,
        )
        self.volume_consumed = Gauge(
            "volume_quota_volume_consumed_bytes",
            "Bytes of a broker volume an unprivileged writer cannot use (capacity - f_bavail).",
            VOLUME_LABELS,
            registry=self.registry,
        )
        self.certificate_expiry = Gauge(
            "volume_quota_client_certificate_expiry_timestamp_seconds",
            "Unix time at which the publisher's client certificate expires.",
            registry=self.registry,
        )
        self.certificate_remaining = Gauge(
            "volume_quota_client_certificate_remaining_seconds",
            "Seconds until the publisher's client certificate expires (negative once expired; "
            "divide by 86400 for days).",
            registry=self.registry,
        )
        self.certificate_reloads = Counter(
            "volume_quota_publisher_certificate_reloads",
            "Times the producer was rebuilt because the TLS files changed on disk.",
            registry=self.registry,
        )
        self.usage_survey_duration = Gauge(
            "volume_quota_usage_survey_duration_seconds",
            "Wall time of the last walk of the log dirs for the topic usage document.",
            registry=self.registry,
        )
        self.usage_last_success = Gauge(
            "volume_quota_usage_last_success_timestamp_seconds",
            "Unix time of the last topic usage document delivered to Kafka.",
            registry=self.registry,
        )
        self.usage_failures = Counter(
            "volume_quota_usage_failures",
            "Topic usage documents not published, by stage: survey (the walk failed), publish "
            "(not sent or not delivered), topic (the usage topic was not ready); configs: the "
            "topics' configs were not all read (published, without their upload backlog).",
            ["stage"],
            registry=self.registry,
        )
        self.topic_config_reads = Counter(
            "volume_quota_topic_config_reads",
            "DescribeConfigs calls this process made for the cluster's topic configs: one "
            "process per cluster reads them every topic_configs_interval "
            "(consumer.topic_config_reads), the others only when its configs grow old.",
            registry=self.registry,
        )
        self.topic_configs_age = Gauge(
            "volume_quota_topic_configs_age_seconds",
            "Age of the newest topic configs this process knows (its own read, or one published "
            "on the usage topic); NaN while it knows none.",
            registry=self.registry,
        )
        self.topic_configs_age.set(float("nan"))
        topic_labels = (*VOLUME_LABELS, "topic")
        self.topic_bytes = Gauge(
            "volume_quota_topic_bytes",
            "Bytes of a topic on a broker volume, for the largest usage_top_topics topics of each "
            "volume (the topic usage document's; a topic that leaves the top is dropped).",
            topic_labels,
            registry=self.registry,
        )
        self.topic_growth = Gauge(
            "volume_quota_topic_growth_bytes_per_second",
            "Net growth of a topic on a broker volume over the window (15m or 24h; over less "
            "while the sidecar has not run that long), same topics as volume_quota_topic_bytes.",
            (*topic_labels, "window"),
            registry=self.registry,
        )
        self.other_topics_bytes = Gauge(
            "volume_quota_other_topics_bytes",
            "Bytes of the topics of a broker volume outside the largest usage_top_topics.",
            VOLUME_LABELS,
            registry=self.registry,
        )
        self.topic_upload_backlog = Gauge(
            "volume_quota_topic_upload_backlog_bytes",
            "Bytes of a tiered topic on a broker volume beyond what local retention keeps: "
            "segments waiting for the remote store, which no local retention can free. Only "
            "tiered topics among volume_quota_topic_bytes' whose configs could be read.",
            topic_labels,
            registry=self.registry,
        )
        self.volume_upload_backlog = Gauge(
            "volume_quota_volume_upload_backlog_bytes",
            "The upload backlog of a broker volume: volume_quota_topic_upload_backlog_bytes "
            "summed over its topics (0 when none).",
            VOLUME_LABELS,
            registry=self.registry,
        )
        self._volume_labels: set[tuple[str, str]] = set()
        self._topic_series: dict[str, list[tuple[Gauge, tuple[str, ...]]]] = {}
        """Per broker: the per-topic series its last usage document set."""

    def record_volumes(self, measured: Mapping[int, Sequence[VolumeMeasurement]]) -> None:
        """Every broker's volumes as just measured; volumes no longer measured are dropped."""
        current = set()
        for broker_id, measurements in measured.items():
            for measurement in measurements:
                labels = (str(broker_id), measurement.volume.name)
                current.add(labels)
                self.volume_capacity.labels(*labels).set(measurement.capacity_bytes)
                self.volume_consumed.labels(*labels).set(measurement.consumed_bytes)
        for labels in self._volume_labels - current:
            self.volume_capacity.remove(*labels)
            self.volume_consumed.remove(*labels)
        self._volume_labels = current

    def record_topic_usage(
        self, document: TopicUsageDocument, backlogs: UploadBacklogs | None = None
    ) -> None:
        """The topics of the document just published, and the upload backlogs of its tiered
        topics (``backlogs``; None: not known, no backlog series). The series of the same
        broker's previous document are replaced, so the cardinality stays at usage_top_topics
        per volume; other brokers' (the cluster agent records every broker here) stay."""
        broker = str(document.broker_id)
        for gauge, labels in self._topic_series.pop(broker, []):
            gauge.remove(*labels)
        series: list[tuple[Gauge, tuple[str, ...]]] = []

        def put(gauge: Gauge, labels: tuple[str, ...], value: float) -> None:
            gauge.labels(*labels).set(value)
            series.append((gauge, labels))

        for volume in document.volumes:
            put(self.other_topics_bytes, (broker, volume.volume_name), volume.other.bytes)
            total = 0
            for topic in volume.topics:
                labels = (broker, volume.volume_name, topic.topic)
                put(self.topic_bytes, labels, topic.bytes)
                for window, growth in (("15m", topic.growth_15m), ("24h", topic.growth_24h)):
                    if growth is not None and growth.seconds > 0:
                        put(self.topic_growth, (*labels, window), growth.bytes / growth.seconds)
                backlog = (
                    None if backlogs is None else backlogs.get((volume.volume_name, topic.topic))
                )
                if backlog is not None:
                    total += backlog
                    put(self.topic_upload_backlog, labels, backlog)
            if backlogs is not None:
                put(self.volume_upload_backlog, (broker, volume.volume_name), total)
        self._topic_series[broker] = series
