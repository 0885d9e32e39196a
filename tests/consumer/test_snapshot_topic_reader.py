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


def test_empty_topic_is_caught_up_at_once() -> None:
    reader, _ = reader_over({0: (0, 0)})
    reader.assign_from_beginning()
    assert reader.caught_up


def test_missing_topic_is_a_clear_error() -> None:
    reader, _ = reader_over({})
    with pytest.raises(TopicUnavailableError, match="'snapshots' is not readable"):
        reader.assign_from_beginning()
