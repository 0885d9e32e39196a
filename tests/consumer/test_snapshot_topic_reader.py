"""The reader's bookkeeping against a fake librdkafka consumer (the real one: tests/real_broker)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from consumer.snapshot_topic_reader import SnapshotTopicReader, TopicUnavailableError


@dataclass
class FakeMessage:
    key_: bytes
    value_: bytes | None
    partition_: int
    offset_: int
    timestamp_: tuple[int, int] = (0, 0)

    def error(self) -> None:
        return None

    def key(self) -> bytes:
        return self.key_

    def value(self) -> bytes | None:
        return self.value_

    def headers(self) -> None:
        return None

    def partition(self) -> int:
        return self.partition_

    def offset(self) -> int:
        return self.offset_

    def timestamp(self) -> tuple[int, int]:
        return self.timestamp_


@dataclass
class FakeConsumer:
    config: Mapping[str, Any]
    watermarks: dict[int, tuple[int, int]]
    queued: list[FakeMessage] = field(default_factory=list)
    assignment: list[TopicPartition] = field(default_factory=list)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        if not self.watermarks:
            return SimpleNamespace(topics={})
        partitions = {partition: object() for partition in self.watermarks}
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions=partitions)})

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        return self.watermarks[partition.partition]

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assignment = partitions

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[FakeMessage]:
        batch, self.queued = self.queued[:num_messages], self.queued[num_messages:]
        return batch

    def close(self) -> None:
        pass


def reader_over(watermarks: dict[int, tuple[int, int]]) -> tuple[SnapshotTopicReader, FakeConsumer]:
    made: list[FakeConsumer] = []

    def factory(config: Mapping[str, Any]) -> FakeConsumer:
        made.append(FakeConsumer(config, watermarks))
        return made[0]

    reader = SnapshotTopicReader(factory, {"bootstrap.servers": "x:1"}, "snapshots")
    return reader, made[0]


def test_every_partition_is_read_from_the_beginning_without_committing() -> None:
    reader, consumer = reader_over({0: (0, 2), 1: (5, 6)})
    reader.assign_from_beginning()
    assert [(tp.partition, tp.offset) for tp in consumer.assignment] == [
        (0, OFFSET_BEGINNING),
        (1, OFFSET_BEGINNING),
    ]
    assert consumer.config["enable.auto.commit"] is False


def test_caught_up_only_past_the_end_offsets_seen_at_start() -> None:
    reader, consumer = reader_over({0: (0, 2), 1: (5, 6)})
    assert not reader.caught_up
    reader.assign_from_beginning()
    consumer.queued = [FakeMessage(b"1", b"a", 0, 0), FakeMessage(b"2", b"b", 0, 1)]
    assert [record.offset for record in reader.poll(0)] == [0, 1]
    assert not reader.caught_up, "partition 1 still has offset 5 unread"
    consumer.queued = [FakeMessage(b"3", None, 1, 5)]
    assert [record.value for record in reader.poll(0)] == [None]
    assert reader.caught_up


def test_records_carry_their_kafka_timestamp_and_whether_the_broker_set_it() -> None:
    reader, consumer = reader_over({0: (0, 3)})
    reader.assign_from_beginning()
    consumer.queued = [
        FakeMessage(b"cluster", b"a", 0, 0, (2, 1_700_000_000_000)),  # LogAppendTime
        FakeMessage(b"cluster", b"b", 0, 1, (1, 1_700_000_000_500)),  # CreateTime
        FakeMessage(b"cluster", b"c", 0, 2, (0, -1)),  # not available
    ]
    assert [(record.timestamp_ms, record.log_append_time) for record in reader.poll(0)] == [
        (1_700_000_000_000, True),
        (1_700_000_000_500, False),
        (None, False),
    ]


def test_empty_topic_is_caught_up_at_once() -> None:
    reader, _ = reader_over({0: (0, 0)})
    reader.assign_from_beginning()
    assert reader.caught_up


def test_missing_topic_is_a_clear_error() -> None:
    reader, _ = reader_over({})
    with pytest.raises(TopicUnavailableError, match="'snapshots' is not readable"):
        reader.assign_from_beginning()


@dataclass
class ClusterView:
    """What a (fake) consumer's metadata answer says: brokers and the partition leader."""

    brokers: dict[int, str]
    leader: int


def reconnecting_reader(
    view: ClusterView,
) -> tuple[SnapshotTopicReader, list[FakeConsumer]]:
    made: list[FakeConsumer] = []

    class ViewConsumer(FakeConsumer):
        def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
            brokers = {
                broker_id: SimpleNamespace(host=address.split(":")[0], port=address.split(":")[1])
                for broker_id, address in view.brokers.items()
            }
            partitions = {0: SimpleNamespace(leader=view.leader)}
            topic_metadata = SimpleNamespace(error=None, partitions=partitions)
            return SimpleNamespace(brokers=brokers, topics={topic: topic_metadata})

    def factory(config: Mapping[str, Any]) -> FakeConsumer:
        made.append(ViewConsumer(config, {0: (0, 3)}))
        return made[-1]

    config = {"bootstrap.servers": "b0:9093,b1:9093,b2:9093", "ssl.ca.location": "ca.pem"}
    return SnapshotTopicReader(factory, config, "snapshots"), made


def test_a_reconnect_resumes_from_a_broker_that_did_not_lead_in_turn() -> None:
    view = ClusterView({0: "b0:9093", 1: "b1:9093", 2: "b2:9093"}, leader=1)
    reader, made = reconnecting_reader(view)
    reader.assign_from_beginning()
    made[0].queued = [FakeMessage(b"0", b"a", 0, 0), FakeMessage(b"1", b"b", 0, 1)]
    assert [record.offset for record in reader.poll(0)] == [0, 1]

    assert reader.reconnect(1.0) == "b0:9093"
    assert len(made) == 2
    fresh = made[1]
    assert fresh.config["bootstrap.servers"] == "b0:9093"
    assert fresh.config["ssl.ca.location"] == "ca.pem"
    assert fresh.config["enable.auto.commit"] is False
    assert [(tp.partition, tp.offset) for tp in fresh.assignment] == [(0, 2)]
    made[0].queued = [FakeMessage(b"9", b"stale", 0, 9)]  # the old consumer is not read
    fresh.queued = [FakeMessage(b"2", b"c", 0, 2)]
    assert [record.offset for record in reader.poll(0)] == [2]

    # The next reconnect tries the next broker that did not lead, then starts over.
    assert reader.reconnect(1.0) == "b2:9093"
    assert reader.reconnect(1.0) == "b0:9093"
    assert [(tp.partition, tp.offset) for tp in made[-1].assignment] == [(0, 3)]


def test_a_reconnect_before_assignment_does_nothing() -> None:
    view = ClusterView({0: "b0:9093"}, leader=0)
    reader, made = reconnecting_reader(view)
    assert reader.reconnect(1.0) is None
    assert len(made) == 1


def test_a_single_broker_cluster_reconnects_to_its_only_broker() -> None:
    view = ClusterView({0: "b0:9093"}, leader=0)
    reader, made = reconnecting_reader(view)
    reader.assign_from_beginning()
    assert reader.reconnect(1.0) == "b0:9093"
    assert made[-1].config["bootstrap.servers"] == "b0:9093"
