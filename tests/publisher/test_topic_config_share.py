"""Sidecars sharing the reading of topic configs through the usage topic: one reader per
cluster in steady state, the next one taking over when it stops, never all at once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from consumer.topic_config_reads import newest
from consumer.topic_status import TopicConfigs
from publisher.publisher_metrics import PublisherMetrics
from publisher.topic_config_share import OwnView, SharedTopicConfigs
from schemas.usage import TopicConfigsSection
from tests.publisher.test_upload_backlog_metrics import described

INTERVAL = 300.0
USAGE_INTERVAL = 60.0
BROKERS = (0, 1, 2)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 27, tzinfo=UTC)

    def wall(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return self.now.timestamp()


class Kafka:
    """DescribeConfigs, counting calls; ``refuse`` answers as without the ACL."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.refuse: set[int] = set()

    def reader(self, broker: int) -> SharedReader:
        return SharedReader(self, broker)


class SharedReader:
    def __init__(self, kafka: Kafka, broker: int) -> None:
        self.kafka, self.broker = kafka, broker

    def __call__(self, topics: Sequence[str]) -> TopicConfigs:
        self.kafka.calls.append([f"by {self.broker}", *topics])
        if self.broker in self.kafka.refuse:
            return dict.fromkeys(topics, "not authorized to describe configs")
        return {topic: described() for topic in topics}


class UsageTopic:
    """The latest document of each broker, as every decider follows it."""

    def __init__(self) -> None:
        self.sections: dict[int, TopicConfigsSection | None] = {}


class View:
    def __init__(self, topic: UsageTopic, live: set[int] | None) -> None:
        self.topic, self.live = topic, live

    def live_brokers(self) -> frozenset[int] | None:
        return None if self.live is None else frozenset(self.live)

    def newest_section(self) -> TopicConfigsSection | None:
        return newest(*self.topic.sections.values())

    def cluster_topics(self) -> list[str]:
        return ["orders", "clicks"]


class Cluster:
    def __init__(self, live_known: bool = True) -> None:
        self.clock = Clock()
        self.kafka = Kafka()
        self.topic = UsageTopic()
        self.running = set(BROKERS)
        self.views = {b: View(self.topic, set(BROKERS) if live_known else None) for b in BROKERS}
        self.metrics = {broker: PublisherMetrics() for broker in BROKERS}
        self.shares = {
            broker: SharedTopicConfigs(
                self.kafka.reader(broker),
                INTERVAL,
                clock=self.clock,
                metrics=self.metrics[broker],
                view=self.views[broker],
            )
            for broker in BROKERS
        }
        self.known: dict[int, TopicConfigs] = {}

    def run(self, seconds: float) -> None:
        """Every running sidecar publishes every usage interval for ``seconds``."""
        for _ in range(round(seconds / USAGE_INTERVAL)):
            for broker in sorted(self.running):
                configs, section = self.shares[broker].configs_for(broker, ["orders"])
                self.known[broker] = configs
                self.topic.sections[broker] = section
            self.clock.now += timedelta(seconds=USAGE_INTERVAL)

    def readers(self) -> list[str]:
        return sorted({call[0] for call in self.kafka.calls})

    def reads(self, broker: int) -> float:
        value = self.metrics[broker].registry.get_sample_value(
            "volume_quota_topic_config_reads_total"
        )
        assert value is not None
        return value


def test_in_steady_state_the_lowest_live_broker_reads_once_an_interval_for_everyone() -> None:
    cluster = Cluster()
    cluster.run(3600)
    assert cluster.readers() == ["by 0"]
    assert len(cluster.kafka.calls) == 12  # one an interval, for the whole cluster
    assert cluster.kafka.calls[0][1:] == ["orders", "clicks"]
    assert [cluster.reads(broker) for broker in BROKERS] == [12, 0, 0]
    for broker in BROKERS:  # every sidecar judges its topics by the same configs
        assert set(cluster.known[broker]) == {"orders", "clicks"}
    carried = {broker for broker, section in cluster.topic.sections.items() if section}
    assert carried == {0}
    age = cluster.metrics[2].registry.get_sample_value("volume_quota_topic_configs_age_seconds")
    assert age is not None
    assert age < INTERVAL + USAGE_INTERVAL


def test_when_the_reader_stops_the_next_takes_over_after_two_intervals_and_hands_back() -> None:
    cluster = Cluster()
    cluster.run(INTERVAL)
    cluster.running.discard(0)  # broker 0's sidecar stops; its last section stays on the topic
    cluster.run(INTERVAL)
    assert cluster.reads(1) == 0  # the section is not two intervals old yet
    cluster.run(INTERVAL + USAGE_INTERVAL)
    assert cluster.reads(1) == 1
    assert cluster.reads(2) == 0
    cluster.run(3 * INTERVAL)
    assert 3 <= cluster.reads(1) <= 4  # now every interval
    assert cluster.reads(2) == 0
    assert cluster.topic.sections[1] is not None
    cluster.running.add(0)
    before = cluster.reads(1)
    cluster.run(2 * INTERVAL)
    assert cluster.reads(1) == before  # broker 0's sections are the newest again
    assert cluster.topic.sections[1] is None
    assert cluster.topic.sections[0] is not None


def test_a_reader_without_the_acl_is_replaced_and_retries_once_an_interval() -> None:
    cluster = Cluster()
    cluster.kafka.refuse.add(0)
    cluster.run(3 * INTERVAL)
    assert cluster.reads(0) == 3  # once an interval, not every usage interval
    assert cluster.reads(1) >= 1
    assert cluster.reads(2) == 0
    assert set(cluster.known[2]) == {"orders", "clicks"}


def test_nobody_reads_before_its_decider_knows_the_live_brokers() -> None:
    cluster = Cluster(live_known=False)
    cluster.run(3 * INTERVAL)
    assert cluster.kafka.calls == []
    for view in cluster.views.values():
        view.live = set(BROKERS)
    cluster.run(USAGE_INTERVAL)
    assert cluster.readers() == ["by 0"]


def test_the_agent_reads_once_an_interval_and_its_lowest_broker_carries_the_section() -> None:
    clock, kafka = Clock(), Kafka()
    brokers = frozenset({4, 7, 9})
    share = SharedTopicConfigs(
        kafka.reader(-1),
        INTERVAL,
        clock=clock,
        metrics=PublisherMetrics(),
        view=OwnView(lambda: brokers),
    )
    carried: dict[int, bool] = {}
    for _ in range(10):  # 10 usage intervals: two config intervals
        for broker in sorted(brokers):
            _configs, section = share.configs_for(broker, [f"topic-{broker}"])
            carried[broker] = section is not None
        clock.now += timedelta(seconds=USAGE_INTERVAL)
    assert len(kafka.calls) == 2
    assert kafka.calls[0][1:] == ["topic-4"]  # at the start, only the first broker's are known
    assert kafka.calls[1][1:] == ["topic-4", "topic-7", "topic-9"]
    assert carried == {4: True, 7: False, 9: False}
