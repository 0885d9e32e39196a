"""The demo's Kafka clients: producers whose delivered rate is measured, the bulk load that
fills a broker's log dir with records, the operator's DeleteRecords, and a reader of the
snapshot topic for the brokers x volumes view. Every client logs through Python logging (to
the demo's log file), never to the terminal."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from consumer import ClusterState
from consumer.topic_messages import Retirement, interpret_message
from schemas.snapshot import VolumeSnapshot
from volume_quota.demo.rates import RateMeter

KAFKA_LOG = logging.getLogger("volume_quota.demo.kafka")
ClientConfig = Mapping[str, Any]
_RECORD = 16 * 1024
_LOAD_RECORD = 256 * 1024


def free_bytes(path: str) -> int:
    """What an unprivileged writer can still use, as the publisher measures it."""
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def _config(config: ClientConfig, **extra: Any) -> dict[str, Any]:
    return {**config, "logger": KAFKA_LOG, **extra}


class Worker:
    """A daemon thread with a stop flag."""

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _guarded(self) -> None:
        try:
            self.run()
        except Exception:
            logging.getLogger(__name__).exception("%s failed", self._thread.name)

    def run(self) -> None:
        raise NotImplementedError


class DemoProducer(Worker):
    """Wants ``demand`` bytes per second on one partition; the meter records what is delivered.

    The demand is paced (no credit builds up while the broker holds the producer back), so in
    OPEN the delivered rate is the demand and under a smaller quota it is the quota.
    """

    def __init__(
        self, name: str, config: ClientConfig, topic: str, partition: int, demand: float
    ) -> None:
        super().__init__(f"producer-{name}")
        self.name = name
        self.meter = RateMeter()
        self.failures = 0
        self._config = _config(
            config,
            acks=1,
            **{
                "linger.ms": 5,
                "batch.size": 64 * 1024,
                "queue.buffering.max.kbytes": 1024,
                "message.timeout.ms": 600_000,
                "client.id": name,
            },
        )
        self._topic = topic
        self._partition = partition
        self._demand = demand

    def run(self) -> None:
        producer = Producer(self._config)
        payload = os.urandom(_RECORD)

        def delivered(error: KafkaError | None, _message: Any) -> None:
            if error is None:
                self.meter.record(time.monotonic(), len(payload))
            else:
                self.failures += 1

        credit, last = 0.0, time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            credit = min(credit + (now - last) * self._demand, self._demand / 4)
            last = now
            if credit < len(payload):
                producer.poll(0.02)
                continue
            try:
                producer.produce(
                    self._topic, value=payload, partition=self._partition, on_delivery=delivered
                )
                credit -= len(payload)
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        producer.purge()
        producer.flush(1)


class BulkLoader(Worker):
    """Writes records at a steady pace into one partition until ``should_stop(written)``."""

    def __init__(
        self,
        config: ClientConfig,
        topic: str,
        partition: int,
        rate: float,
        should_stop: Callable[[int], bool],
    ) -> None:
        super().__init__("bulk-loader")
        self.written = 0
        self.done = threading.Event()
        self._config = _config(
            config, acks=1, **{"linger.ms": 20, "batch.size": 1024 * 1024, "client.id": "loader"}
        )
        self._topic = topic
        self._partition = partition
        self._rate = rate
        self._should_stop = should_stop

    def run(self) -> None:
        producer = Producer(self._config)
        payload = os.urandom(_LOAD_RECORD)
        started = time.monotonic()
        sent = 0

        def delivered(error: KafkaError | None, _message: Any) -> None:
            if error is None:
                self.written += len(payload)

        try:
            while not self._stop.is_set() and not self._should_stop(self.written):
                ahead = sent / self._rate - (time.monotonic() - started)
                if ahead > 0 or sent - self.written > 16 * _LOAD_RECORD:
                    producer.poll(min(max(ahead, 0.01), 0.1))
                    continue
                try:
                    producer.produce(
                        self._topic, value=payload, partition=self._partition, on_delivery=delivered
                    )
                    sent += len(payload)
                except BufferError:
                    producer.poll(0.05)
                producer.poll(0)
            producer.flush(5)
        finally:
            producer.purge()
            self.done.set()


def create_demo_topic(admin_config: ClientConfig, topic: str, assignment: list[int]) -> None:
    """Partition i on broker ``assignment[i]`` only (one replica), small segments."""
    admin = AdminClient(_config(admin_config))
    new = NewTopic(
        topic,
        num_partitions=len(assignment),
        replica_assignment=[[broker] for broker in assignment],
        config={"segment.bytes": str(8 * 1024 * 1024)},
    )
    admin.create_topics([new], request_timeout=30)[topic].result(timeout=30)


def delete_all_records(admin_config: ClientConfig, topic: str, partitions: int) -> None:
    """What an operator would do: DeleteRecords up to the high watermark of every partition."""
    admin = AdminClient(_config(admin_config))
    offsets = [TopicPartition(topic, index, -1) for index in range(partitions)]
    for future in admin.delete_records(offsets, request_timeout=30).values():
        future.result(timeout=30)


class SnapshotWatcher(Worker):
    """Reads the snapshot topic from the start into a ClusterState (for the volumes view)."""

    def __init__(self, config: ClientConfig, topic: str, broker_count: int) -> None:
        super().__init__("snapshot-watcher")
        self.state = ClusterState()
        self.state.set_live_brokers(range(broker_count))
        self.lock = threading.Lock()
        self._config = _config(
            config,
            **{"group.id": "volume-quota-consumer", "enable.auto.commit": False},
        )
        self._topic = topic

    def run(self) -> None:
        consumer = Consumer(self._config)
        consumer.assign([TopicPartition(self._topic, 0, OFFSET_BEGINNING)])
        try:
            while not self._stop.is_set():
                message = consumer.poll(0.5)
                if message is None or message.error() is not None:
                    continue
                event = interpret_message(message.key(), message.value())
                with self.lock:
                    if isinstance(event, VolumeSnapshot):
                        self.state.apply_snapshot(event)
                    elif isinstance(event, Retirement):
                        self.state.retire(event.broker_id)
        finally:
            consumer.close()
