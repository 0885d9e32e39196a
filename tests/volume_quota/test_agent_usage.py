"""The cluster agent's topic usage: one document per live broker from DescribeLogDirs, each
with its own growth history; a broker or a cluster that does not answer is counted, never
raised, and never stops the other brokers' documents."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from publisher.publisher_metrics import PublisherMetrics
from schemas.decode import decode_usage
from schemas.usage import TopicUsageDocument
from tests.publisher.test_usage_publication import FakeCredentials, FakeSink, StepClock
from volume_quota.daemons.agent_usage import AgentUsagePublication, AgentUsageSchedule


def log_dir(path: str, *partitions: tuple[str, int, int]) -> dict[str, Any]:
    """A log dir as kafka-python answers it, with ``(topic, partition, size)`` partitions."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, partition, size in partitions:
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "partition_size": size, "is_future_key": False}
        )
    return {
        "error_code": 0,
        "log_dir": path,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
        "total_bytes": 10**9,
        "usable_bytes": 10**8,
    }


@dataclass
class FakeCluster:
    answers: dict[int, list[dict[str, Any]]]
    reachable: bool = True
    failing: set[int] = field(default_factory=set)
    clients: int = 0
    closed: int = 0

    def client(self) -> FakeLogDirs:
        self.clients += 1
        return FakeLogDirs(self)


@dataclass
class FakeLogDirs:
    cluster: FakeCluster

    def live_brokers(self) -> list[int]:
        if not self.cluster.reachable:
            raise ConnectionError("no broker answers")
        return sorted(self.cluster.answers)

    def log_dirs(self, broker_id: int) -> list[dict[str, Any]]:
        if broker_id in self.cluster.failing:
            raise TimeoutError(f"broker {broker_id} did not answer")
        return self.cluster.answers[broker_id]

    def close(self) -> None:
        self.cluster.closed += 1


@dataclass
class FakeGuard:
    ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> FakeGuard:
        return self

    def stop(self) -> None:
        pass


def make(cluster: FakeCluster) -> tuple[AgentUsagePublication, FakeSink, PublisherMetrics]:
    sink = FakeSink(StepClock())
    metrics = PublisherMetrics()
    publication = AgentUsagePublication(
        AgentUsageSchedule(interval_seconds=60.0, delivery_timeout_seconds=2.0, top_topics=20),
        log_dirs_factory=cluster.client,
        sink_factory=lambda _issue: sink,
        guard=FakeGuard(),
        clock=sink.clock,
        metrics=metrics,
        credentials_factory=FakeCredentials,
    )
    return publication, sink, metrics


def documents(sink: FakeSink) -> list[TopicUsageDocument]:
    found = []
    for key, value, _headers in sink.sent:
        assert value is not None
        document = decode_usage(value, key)
        assert isinstance(document, TopicUsageDocument), document
        found.append(document)
    return found


def failures(metrics: PublisherMetrics, stage: str) -> float:
    return float(metrics.usage_failures.labels(stage)._value.get())


def test_every_live_broker_gets_its_document_keyed_and_signed_as_its_sidecar_would() -> None:
    cluster = FakeCluster(
        {
            1: [log_dir("/var/lib/kafka/data-0", ("orders", 0, 5000), ("clicks", 0, 700))],
            2: [log_dir("/var/lib/kafka/data-0", ("orders", 1, 4000))],
        }
    )
    publication, sink, _metrics = make(cluster)
    assert publication.publish_once() == 2
    assert [(key, headers) for key, _value, headers in sink.sent] == [
        (b"1", [("vq-signature", b"sig:1")]),
        (b"2", [("vq-signature", b"sig:2")]),
    ]
    first, second = documents(sink)
    assert first.broker_id == 1
    (volume,) = first.volumes
    assert volume.volume_name == "/var/lib/kafka/data-0"
    assert [(t.topic, t.bytes, t.partitions) for t in volume.topics] == [
        ("orders", 5000, 1),
        ("clicks", 700, 1),
    ]
    assert [(t.topic, t.bytes) for t in second.volumes[0].topics] == [("orders", 4000)]


def test_each_broker_keeps_its_own_growth_history() -> None:
    cluster = FakeCluster(
        {
            1: [log_dir("/d", ("orders", 0, 5000))],
            2: [log_dir("/d", ("orders", 1, 4000))],
        }
    )
    publication, sink, _metrics = make(cluster)
    publication.publish_once()
    sink.clock.seconds += 60
    cluster.answers = {
        1: [log_dir("/d", ("orders", 0, 6000))],
        2: [log_dir("/d", ("orders", 1, 4500))],
    }
    publication.publish_once()
    growth = {
        document.broker_id: document.volumes[0].topics[0].growth_15m
        for document in documents(sink)[2:]
    }
    assert growth[1] is not None
    assert growth[2] is not None
    assert (growth[1].bytes, growth[2].bytes) == (1000, 500)


def test_a_broker_that_does_not_answer_is_counted_and_the_others_are_published() -> None:
    cluster = FakeCluster(
        {1: [log_dir("/d", ("a", 0, 10))], 2: [log_dir("/d", ("b", 0, 20))]}, failing={1}
    )
    publication, sink, metrics = make(cluster)
    assert publication.publish_once() == 1
    assert [document.broker_id for document in documents(sink)] == [2]
    assert failures(metrics, "survey") == 1
    # It may have restarted: the next round asks with a new client.
    assert cluster.closed == 1
    cluster.failing.clear()
    assert publication.publish_once() == 2
    assert cluster.clients == 2


def test_an_unreachable_cluster_is_counted_and_nothing_is_sent() -> None:
    cluster = FakeCluster({1: [log_dir("/d", ("a", 0, 10))]}, reachable=False)
    publication, sink, metrics = make(cluster)
    assert publication.publish_once() == 0
    assert sink.sent == []
    assert failures(metrics, "survey") == 1
    cluster.reachable = True
    assert publication.publish_once() == 1


def test_a_log_dir_without_sizes_is_a_failed_survey_of_that_broker_only() -> None:
    unsized = {**log_dir("/d", ("a", 0, 10)), "total_bytes": -1, "usable_bytes": -1}
    cluster = FakeCluster({1: [unsized], 2: [log_dir("/d", ("b", 0, 20))]})
    publication, sink, metrics = make(cluster)
    assert publication.publish_once() == 1
    assert [document.broker_id for document in documents(sink)] == [2]
    assert failures(metrics, "survey") == 1


def test_it_publishes_on_its_timer_once_the_usage_topic_is_verified_and_stops() -> None:
    cluster = FakeCluster({1: [log_dir("/d", ("a", 0, 10))]})
    publication, sink, _metrics = make(cluster)
    guard = publication.guard
    assert isinstance(guard, FakeGuard)
    publication.start()
    try:
        guard.ready.set()
        deadline = threading.Event()
        for _ in range(100):
            if sink.sent:
                break
            deadline.wait(0.05)
        assert [key for key, _value, _headers in sink.sent] == [b"1"]
    finally:
        publication.stop()
    assert not publication._thread.is_alive()
