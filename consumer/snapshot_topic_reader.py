"""Reading the whole snapshot topic, then following it (shell: wraps a Kafka consumer).

No consumer group offsets: every instance needs every broker's latest snapshot, so it assigns
every partition from the beginning on start. It remembers the end offsets it saw at start and
is *caught up* once it has read past them on every partition; until then the caller must not
vouch for its view of the cluster.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    KafkaError,
    TopicPartition,
)

from consumer.bootstrap_rotation import ClusterView, cluster_view, next_bootstrap


class KafkaMessage(Protocol):
    def error(self) -> Any: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def headers(self) -> Any: ...
    def timestamp(self) -> tuple[int, int]: ...


class KafkaConsumer(Protocol):
    def list_topics(self, topic: str | None = ..., timeout: float = ...) -> Any: ...
    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = ..., cached: bool = ...
    ) -> tuple[int, int]: ...
    def assign(self, partitions: list[TopicPartition]) -> None: ...
    def consume(self, num_messages: int = ..., timeout: float = ...) -> Sequence[KafkaMessage]: ...
    def close(self) -> None: ...


class SnapshotSource(Protocol):
    """Where the consumer loop reads records: this reader, or a fake in unit tests."""

    @property
    def assigned(self) -> bool: ...
    @property
    def caught_up(self) -> bool: ...
    def assign_from_beginning(self, timeout_seconds: float = ...) -> None: ...
    def poll(self, timeout_seconds: float, max_records: int = ...) -> Iterator[TopicRecord]: ...
    def reconnect(self, timeout_seconds: float = ...) -> str | None: ...


SOCKET_TIMEOUT_MS = 10_000
"""How long the reader waits for a broker's answer (librdkafka's default is 60 s).

A broker that hangs (a stopped JVM) keeps its connections open: a reader fetching from it as the
snapshot partition's leader reads nothing until the request times out, even after the controller
moved the leadership, and every snapshot goes stale (the fail-safe PAUSE on every broker).
Measured on a real cluster with that leader SIGSTOPped: readers with the default read nothing
for over 60 s, readers with 10 s followed the new leader within 15 s
(tests/faults/test_process_faults.py, the hung broker)."""


class TopicUnavailableError(Exception):
    """The snapshot topic does not exist or its metadata cannot be read."""


class TopicAccessDeniedError(TopicUnavailableError):
    """Kafka refused this principal the topic (TOPIC_AUTHORIZATION_FAILED). Kafka says so whether
    or not the topic exists, so it tells nothing about what is on it: a missing ACL, not an
    empty topic."""


@dataclass(frozen=True, slots=True)
class TopicRecord:
    key: bytes | None
    value: bytes | None
    partition: int
    offset: int
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None
    """The record's Kafka timestamp (ms since the epoch); None when Kafka gave none."""
    log_append_time: bool = False
    """The timestamp is the broker's (``message.timestamp.type=LogAppendTime``), not the
    producer's own claim."""


class SnapshotTopicReader:
    def __init__(
        self,
        consumer_factory: Callable[[Mapping[str, Any]], KafkaConsumer],
        config: Mapping[str, Any],
        topic: str,
    ) -> None:
        self._factory = consumer_factory
        self._config: dict[str, Any] = {
            **config,
            "group.id": config.get("group.id", "volume-quota-consumer"),
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "socket.timeout.ms": config.get("socket.timeout.ms", SOCKET_TIMEOUT_MS),
        }
        self._consumer = consumer_factory(self._config)
        self._topic = topic
        self._end_offsets_at_start: dict[int, int] = {}
        self._next_offsets: dict[int, int] = {}
        self._view = ClusterView({}, frozenset())
        """The brokers and the partitions' leaders in the last metadata seen."""
        self._reconnects = 0
        self.assigned = False

    def assign_from_beginning(self, timeout_seconds: float = 10.0) -> None:
        """Find the partitions and their end offsets, then read every partition from offset 0."""
        metadata = self._consumer.list_topics(self._topic, timeout=timeout_seconds)
        topic_metadata = metadata.topics.get(self._topic)
        if (
            topic_metadata is None
            or topic_metadata.error is not None
            or not topic_metadata.partitions
        ):
            problem = "missing" if topic_metadata is None else topic_metadata.error
            if (
                topic_metadata is not None
                and topic_metadata.error is not None
                and topic_metadata.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
            ):
                raise TopicAccessDeniedError(f"topic {self._topic!r}: {problem}")
            raise TopicUnavailableError(f"topic {self._topic!r} is not readable: {problem}")
        self._remember(metadata)
        partitions = sorted(topic_metadata.partitions)
        for partition in partitions:
            low, high = self._consumer.get_watermark_offsets(
                TopicPartition(self._topic, partition), timeout=timeout_seconds
            )
            self._end_offsets_at_start[partition] = high
            self._next_offsets[partition] = low
        self._consumer.assign(
            [TopicPartition(self._topic, partition, OFFSET_BEGINNING) for partition in partitions]
        )
        self.assigned = True

    @property
    def caught_up(self) -> bool:
        """True once every partition was read up to the end offset it had at start."""
        return self.assigned and all(
            self._next_offsets.get(partition, 0) >= end
            for partition, end in self._end_offsets_at_start.items()
        )

    def poll(self, timeout_seconds: float, max_records: int = 500) -> Iterator[TopicRecord]:
        """Records that arrived, in partition order; transport errors are left to librdkafka."""
        for message in self._consumer.consume(num_messages=max_records, timeout=timeout_seconds):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise TopicUnavailableError(f"reading {self._topic!r} failed: {error}")
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:  # only error events lack them
                continue
            self._next_offsets[partition] = offset + 1
            headers = header_pairs(message.headers())
            kind, milliseconds = message.timestamp()
            yield TopicRecord(
                message.key(),
                message.value(),
                partition,
                offset,
                headers,
                milliseconds if kind != TIMESTAMP_NOT_AVAILABLE else None,
                kind == TIMESTAMP_LOG_APPEND_TIME,
            )

    def reconnect(self, timeout_seconds: float = 2.0) -> str | None:
        """Replace the consumer with one bootstrapped from a single broker, resuming every
        partition at the next offset to read; returns that broker's address (None: nothing to
        reconnect, not assigned yet or no broker known).

        For a reader that reads nothing although snapshots are being published: a leader cut
        off from its peers keeps answering with its stale metadata, so the reader is rebuilt
        from another broker, in turn (``consumer.bootstrap_rotation``)."""
        if not self.assigned:
            return None
        with contextlib.suppress(Exception):  # a stuck client may not answer: keep what we know
            self._remember(self._consumer.list_topics(self._topic, timeout=timeout_seconds))
        address = next_bootstrap(self._view, self._reconnects)
        if address is None:
            return None
        self._reconnects += 1
        consumer = self._factory({**self._config, "bootstrap.servers": address})
        consumer.assign(
            [
                TopicPartition(self._topic, partition, offset)
                for partition, offset in sorted(self._next_offsets.items())
            ]
        )
        old, self._consumer = self._consumer, consumer
        with contextlib.suppress(Exception):  # closing a broken client must not stop the reader
            old.close()
        return address

    def _remember(self, metadata: Any) -> None:
        view = cluster_view(metadata, self._topic)
        if view.brokers:
            self._view = view

    def close(self) -> None:
        self._consumer.close()


def header_pairs(raw: Any) -> tuple[tuple[str, bytes | None], ...]:
    """Record headers as (name, bytes) pairs, whichever form the client returned them in."""
    items = raw.items() if isinstance(raw, Mapping) else (raw or ())
    return tuple(
        (str(name), value.encode() if isinstance(value, str) else value) for name, value in items
    )
