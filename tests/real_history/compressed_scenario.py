"""A Kafka workload in compressed time: paced producers, rate steps and mid-run admin actions.

One second of wall time stands for one hour (the backtest runs with ``--history-bucket 1s``).
Nothing here shapes the volumes' usage directly: producers write at the rates of a schedule,
and what the disks then hold (plateaus, steps, a fill) is what the brokers' own retention
makes of it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported, no __all__
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from tests.real_broker.kafka_helpers import quiet

MIB = 1024 * 1024
RECORD_BYTES = 64 * 1024
ADMIN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RateStep:
    """From ``at`` seconds after the start, write ``bytes_per_second``."""

    at: float
    bytes_per_second: float


@dataclass
class PacedWriter:
    """Writes ``topic`` at the rate of ``steps`` (piecewise constant), from ``starts_at``
    seconds after the run's start, until the run stops or ``stop_when()`` holds."""

    topic: str
    steps: Sequence[RateStep]
    starts_at: float = 0.0
    stop_when: Callable[[], bool] = lambda: False
    written: int = 0
    errors: list[KafkaError] = field(default_factory=list)
    stopped_at: float | None = None

    def target_bytes(self, elapsed: float) -> float:
        """Bytes the schedule asks for after ``elapsed`` seconds of the run."""
        total = 0.0
        for step, following in zip(self.steps, [*self.steps[1:], None], strict=True):
            begin = max(step.at, self.starts_at)
            end = elapsed if following is None else min(following.at, elapsed)
            if end > begin:
                total += (end - begin) * step.bytes_per_second
        return total


def write_paced(
    config: Mapping[str, Any], writer: PacedWriter, started: float, stop: threading.Event
) -> None:
    """Produce ``writer``'s schedule (``started``: the run's ``time.monotonic()`` origin)."""
    producer = Producer(
        {
            **quiet(config),
            "acks": "1",
            "linger.ms": 20,
            "message.timeout.ms": 20_000,
            "error_cb": writer.errors.append,
        }
    )

    def on_delivery(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            writer.errors.append(error)

    payload = os.urandom(RECORD_BYTES)
    while not stop.is_set():
        elapsed = time.monotonic() - started
        if writer.stop_when():
            writer.stopped_at = elapsed
            break
        while writer.written + RECORD_BYTES <= writer.target_bytes(elapsed):
            producer.produce(writer.topic, value=payload, on_delivery=on_delivery)
            writer.written += RECORD_BYTES
        producer.poll(0)
        stop.wait(0.05)
    producer.flush(20)


def create_topic_on(
    config: Mapping[str, Any], topic: str, broker: int, topic_config: Mapping[str, str]
) -> None:
    """One partition, one replica, on ``broker``: its bytes land on that broker's volume."""
    admin = AdminClient(quiet(config))
    new_topic = NewTopic(
        topic, num_partitions=1, replica_assignment=[[broker]], config=dict(topic_config)
    )
    admin.create_topics([new_topic], request_timeout=ADMIN_TIMEOUT_S)[topic].result(
        timeout=ADMIN_TIMEOUT_S
    )


def set_topic_config(config: Mapping[str, Any], topic: str, name: str, value: str) -> None:
    """``kafka-configs --alter --entity-type topics --add-config name=value``, Admin API."""
    resource = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)],
    )
    admin = AdminClient(quiet(config))
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=ADMIN_TIMEOUT_S)


def topic_config(config: Mapping[str, Any], topic: str, name: str) -> str:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = AdminClient(quiet(config))
    entries = admin.describe_configs([resource])[resource].result(timeout=ADMIN_TIMEOUT_S)
    return str(entries[name].value)


def used_fraction(directory: os.PathLike[str] | str) -> float:
    """Used share of the filesystem holding ``directory`` (statvfs, as the publisher sees it)."""
    stats = os.statvfs(directory)
    return 1.0 - stats.f_bavail / stats.f_blocks
