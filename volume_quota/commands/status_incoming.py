"""``volume-quota status --incoming``: what moves are in flight, asked of the cluster (the thin
Kafka shell of ``consumer.incoming_bytes``).

One ListPartitionReassignments (to the controller) and one DescribeLogDirs per live broker, every
topic (a null topic list: DESCRIBE on the cluster is all either needs), through kafka-python's
admin client: librdkafka has neither call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from consumer.incoming_bytes import BrokerLogDir, Reassignment, ReplicaReport

NOT_AUTHORIZED_TO_DESCRIBE_CLUSTER = (
    "not authorized to describe the cluster (ListPartitionReassignments and DescribeLogDirs "
    "need DESCRIBE on the cluster)"
)


class MovesAdmin(Protocol):
    """What is used of kafka-python's ``KafkaAdminClient``."""

    def list_partition_reassignments(
        self, topic_partitions: Any = None, timeout_ms: Any = None
    ) -> Mapping[Any, Mapping[str, Any]]: ...

    def close(self) -> None: ...


class LogDirsSource(Protocol):
    """``volume_quota.daemons.agent_usage.BrokerLogDirs``'s two questions."""

    def live_brokers(self) -> list[int]: ...

    def log_dirs(self, broker_id: int) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class MovesInFlight:
    reassignments: list[Reassignment]
    replicas: list[ReplicaReport]
    log_dirs: list[BrokerLogDir]


def reassignments_from(answer: Mapping[Any, Mapping[str, Any]]) -> list[Reassignment]:
    """kafka-python's ``list_partition_reassignments`` answer, sorted by topic and partition."""
    found = [
        Reassignment(
            topic=str(partition.topic),
            partition=int(partition.partition),
            replicas=tuple(int(broker) for broker in entry.get("replicas", ())),
            adding=tuple(int(broker) for broker in entry.get("adding_replicas", ())),
            removing=tuple(int(broker) for broker in entry.get("removing_replicas", ())),
        )
        for partition, entry in answer.items()
    ]
    return sorted(found, key=lambda found: (found.topic, found.partition))


def replicas_from(
    broker_id: int, log_dirs: Sequence[Mapping[str, Any]]
) -> tuple[list[BrokerLogDir], list[ReplicaReport]]:
    """One broker's DescribeLogDirs answer (the response's ``to_dict``): its log dirs and every
    replica in them."""
    dirs = []
    replicas = []
    for entry in log_dirs:
        path = str(entry["log_dir"])
        dirs.append(BrokerLogDir(broker_id, path, online=int(entry.get("error_code", 0)) == 0))
        for topic in entry.get("topics") or ():
            for partition in topic.get("partitions") or ():
                replicas.append(
                    ReplicaReport(
                        broker_id=broker_id,
                        log_dir=path,
                        topic=str(topic["name"]),
                        partition=int(partition["partition_index"]),
                        size_bytes=max(0, int(partition["partition_size"])),
                        is_future=bool(partition.get("is_future_key", False)),
                    )
                )
    return dirs, replicas


def read_moves(admin: MovesAdmin, log_dirs: LogDirsSource, timeout_seconds: float) -> MovesInFlight:
    """The reassignments in flight and every live broker's replicas. Raises what the client
    raises (``describe_moves`` turns it into a reason)."""
    answer = admin.list_partition_reassignments(timeout_ms=int(timeout_seconds * 1000))
    all_dirs: list[BrokerLogDir] = []
    all_replicas: list[ReplicaReport] = []
    for broker in log_dirs.live_brokers():
        dirs, replicas = replicas_from(broker, log_dirs.log_dirs(broker))
        all_dirs.extend(dirs)
        all_replicas.extend(replicas)
    return MovesInFlight(reassignments_from(answer), all_replicas, all_dirs)


def describe_moves(
    admin_factory: Callable[[], MovesAdmin],
    log_dirs_factory: Callable[[MovesAdmin], LogDirsSource],
    timeout_seconds: float,
) -> MovesInFlight | str:
    """The moves in flight, or why they could not be read (one line, no traceback)."""
    try:
        admin = admin_factory()
    except Exception as error:
        return f"no admin connection: {type(error).__name__}: {error}"
    try:
        return read_moves(admin, log_dirs_factory(admin), timeout_seconds)
    except Exception as error:
        if "AuthorizationFailed" in type(error).__name__:
            return NOT_AUTHORIZED_TO_DESCRIBE_CLUSTER
        return f"{type(error).__name__}: {error}"
    finally:
        with contextlib.suppress(Exception):  # a broken client is dropped either way
            admin.close()
