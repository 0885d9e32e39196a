"""The sidecar's upload backlog series: after each usage document it reads the configs of the
topics it names (one call) and exports the backlog of every tiered one and each volume's total;
configs it cannot read are counted and leave the series out, never failing the publication."""

from __future__ import annotations

from collections.abc import Sequence

from consumer.topic_status import NOT_AUTHORIZED, TopicConfigs
from publisher.publisher_metrics import PublisherMetrics
from publisher.topic_config_share import SharedTopicConfigs
from publisher.topic_usage import OtherTopics, TopicTotals, VolumeTopicUsage
from publisher.upload_backlogs import document_topics, document_upload_backlogs
from publisher.usage_document import build_usage_document
from publisher.usage_history import UsageHistory
from publisher.usage_publication import UsagePublisher, UsageSchedule
from tests.publisher.test_usage_publication import (
    START,
    FakeCredentials,
    FakeSink,
    StepClock,
    failures,
)

MIB = 2**20


def described(**values: str) -> dict[str, str | None]:
    """A topic's configs as DescribeConfigs answers them: every name, Kafka's defaults but
    ``values`` (``retention_ms="-1"`` sets ``retention.ms``)."""
    defaults = {
        "cleanup.policy": "delete",
        "retention.ms": "604800000",
        "retention.bytes": "-1",
        "segment.bytes": "1073741824",
        "segment.ms": "604800000",
        "remote.storage.enable": "false",
        "local.retention.ms": "-2",
        "local.retention.bytes": "-2",
    }
    return {**defaults, **{name.replace("_", "."): value for name, value in values.items()}}


TIERED = described(remote_storage_enable="true", segment_bytes=str(MIB), local_retention_bytes="0")
CONFIGS: TopicConfigs = {
    "events": TIERED,  # 2 partitions: keeps a segment each, 2 MiB; holds 10 MiB
    "audit": TIERED,  # holds 2 MiB: nothing waits
    "clicks": described(retention_ms="-1"),
}


def summaries() -> list[VolumeTopicUsage]:
    topics = (
        TopicTotals("events", 10 * MIB, 2, MIB, 0, None),
        TopicTotals("audit", 2 * MIB, 2, MIB, 0, None),
        TopicTotals("clicks", MIB, 1, MIB, 0, None),
    )
    total = sum(topic.bytes for topic in topics) + 100
    return [VolumeTopicUsage("/dev/a", total, topics, OtherTopics(1, 90, 1, 5, 0), 10)]


class Configs:
    def __init__(self, answer: TopicConfigs | Exception) -> None:
        self.answer = answer
        self.asked: list[list[str]] = []

    def __call__(self, topics: Sequence[str]) -> TopicConfigs:
        self.asked.append(list(topics))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def publish(configs: Configs | None) -> PublisherMetrics:
    sink = FakeSink(StepClock())
    metrics = PublisherMetrics()
    publisher = UsagePublisher(
        UsageSchedule(broker_id=5, interval_seconds=60.0, delivery_timeout_seconds=2.0),
        survey=summaries,
        sink_factory=lambda _issue: sink,
        clock=sink.clock,
        metrics=metrics,
        credentials=FakeCredentials(),
        topic_configs=None
        if configs is None
        else SharedTopicConfigs(configs, 300.0, clock=sink.clock, metrics=metrics),
    )
    assert publisher.publish_once()
    return metrics


def sample(metrics: PublisherMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"broker": "5", "volume": "/dev/a", **labels})


def test_tiered_topics_get_their_backlog_and_the_volume_the_total() -> None:
    configs = Configs(CONFIGS)
    metrics = publish(configs)
    assert configs.asked == [["audit", "clicks", "events"]]
    backlog = "volume_quota_topic_upload_backlog_bytes"
    assert sample(metrics, backlog, topic="events") == 8 * MIB
    assert sample(metrics, backlog, topic="audit") == 0
    assert sample(metrics, backlog, topic="clicks") is None  # not tiered: no series
    assert sample(metrics, "volume_quota_volume_upload_backlog_bytes") == 8 * MIB
    assert failures(metrics, "configs") == 0


def test_a_topic_whose_configs_are_refused_is_counted_and_left_out() -> None:
    metrics = publish(Configs({**CONFIGS, "events": NOT_AUTHORIZED}))
    assert sample(metrics, "volume_quota_topic_upload_backlog_bytes", topic="events") is None
    assert sample(metrics, "volume_quota_topic_upload_backlog_bytes", topic="audit") == 0
    assert sample(metrics, "volume_quota_volume_upload_backlog_bytes") == 0
    assert failures(metrics, "configs") == 1


def test_no_config_read_at_all_no_backlog_series_and_the_document_still_published() -> None:
    metrics = publish(Configs(RuntimeError("cannot reach Kafka")))
    assert sample(metrics, "volume_quota_volume_upload_backlog_bytes") is None
    assert sample(metrics, "volume_quota_topic_bytes", topic="events") == 10 * MIB
    assert failures(metrics, "configs") == 1
    without = publish(None)
    assert sample(without, "volume_quota_volume_upload_backlog_bytes") is None


def test_the_backlogs_of_a_document_are_keyed_by_volume_and_topic() -> None:
    document = build_usage_document(5, START, 0.1, summaries(), UsageHistory.empty())
    assert document_topics(document) == ["audit", "clicks", "events"]
    assert document_upload_backlogs(document, CONFIGS) == {
        ("/dev/a", "events"): 8 * MIB,
        ("/dev/a", "audit"): 0,
    }


def test_the_agent_keeps_every_brokers_series_replacing_only_the_publishing_brokers() -> None:
    """The cluster agent records one document per broker into the same metrics."""
    metrics = PublisherMetrics()
    for broker_id in (0, 1):
        document = build_usage_document(broker_id, START, 0.1, summaries(), UsageHistory.empty())
        metrics.record_topic_usage(document, document_upload_backlogs(document, CONFIGS))

    def of(broker: str, name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(
            name, {"broker": broker, "volume": "/dev/a", **labels}
        )

    for broker in ("0", "1"):
        assert of(broker, "volume_quota_topic_bytes", topic="events") == 10 * MIB
        assert of(broker, "volume_quota_topic_upload_backlog_bytes", topic="events") == 8 * MIB
        assert of(broker, "volume_quota_volume_upload_backlog_bytes") == 8 * MIB
        assert of(broker, "volume_quota_other_topics_bytes") == 90
    # Broker 1's next document no longer names "events": only its own series go.
    smaller = [
        VolumeTopicUsage(
            "/dev/a", 2 * MIB + 100, summaries()[0].topics[1:2], OtherTopics(0, 0, 0, 0, 0), 100
        )
    ]
    document = build_usage_document(1, START, 0.1, smaller, UsageHistory.empty())
    metrics.record_topic_usage(document, document_upload_backlogs(document, CONFIGS))
    assert of("1", "volume_quota_topic_bytes", topic="events") is None
    assert of("1", "volume_quota_topic_upload_backlog_bytes", topic="events") is None
    assert of("1", "volume_quota_volume_upload_backlog_bytes") == 0
    assert of("0", "volume_quota_topic_upload_backlog_bytes", topic="events") == 8 * MIB
