"""``volume-quota status --incoming``'s shell: kafka-python's answers turned into moves, an
authorization error a reason (not a traceback), the admin client always closed, and the help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from kafka.errors import ClusterAuthorizationFailedError
from kafka.structs import TopicPartition

from consumer.incoming_bytes import BrokerLogDir, Reassignment, ReplicaReport
from volume_quota.cli import main
from volume_quota.commands.status_incoming import (
    NOT_AUTHORIZED_TO_DESCRIBE_CLUSTER,
    MovesAdmin,
    MovesInFlight,
    describe_moves,
)


def log_dir(path: str, partitions: list[tuple[str, int, int, bool]]) -> dict[str, Any]:
    """One log dir as kafka-python's DescribeLogDirs response ``to_dict`` has it."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, partition, size, future in partitions:
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "partition_size": size,
                "offset_lag": 0,
                "is_future_key": future,
            }
        )
    return {
        "error_code": 0,
        "log_dir": path,
        "topics": [{"name": name, "partitions": entries} for name, entries in topics.items()],
        "total_bytes": 10**9,
        "usable_bytes": 10**8,
    }


class FakeAdmin:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.closed = False
        self.timeouts: list[Any] = []

    def list_partition_reassignments(
        self, topic_partitions: Any = None, timeout_ms: Any = None
    ) -> Mapping[Any, Mapping[str, Any]]:
        self.timeouts.append(timeout_ms)
        if self.error is not None:
            raise self.error
        return {
            TopicPartition("t", 0): {
                "replicas": [0, 1, 2],
                "adding_replicas": [2],
                "removing_replicas": [],
            }
        }

    def close(self) -> None:
        self.closed = True


class FakeLogDirs:
    def __init__(self, _admin: MovesAdmin) -> None:
        pass

    def live_brokers(self) -> list[int]:
        return [0, 2]

    def log_dirs(self, broker_id: int) -> list[dict[str, Any]]:
        if broker_id == 0:
            return [log_dir("/b0", [("t", 0, 900, False), ("u", 1, 50, True)])]
        return [log_dir("/b2", [("t", 0, 100, False)])]


def test_reassignments_and_every_live_brokers_replicas_are_read() -> None:
    admin = FakeAdmin()
    moves = describe_moves(lambda: admin, FakeLogDirs, 12.5)
    assert isinstance(moves, MovesInFlight)
    assert moves.reassignments == [Reassignment("t", 0, (0, 1, 2), (2,), ())]
    assert moves.replicas == [
        ReplicaReport(0, "/b0", "t", 0, 900),
        ReplicaReport(0, "/b0", "u", 1, 50, is_future=True),
        ReplicaReport(2, "/b2", "t", 0, 100),
    ]
    assert moves.log_dirs == [BrokerLogDir(0, "/b0"), BrokerLogDir(2, "/b2")]
    assert admin.timeouts == [12500]
    assert admin.closed


def test_no_describe_on_the_cluster_is_a_reason_and_the_client_is_closed() -> None:
    admin = FakeAdmin(ClusterAuthorizationFailedError())
    assert describe_moves(lambda: admin, FakeLogDirs, 1.0) == NOT_AUTHORIZED_TO_DESCRIBE_CLUSTER
    assert admin.closed


def test_a_client_that_cannot_start_is_a_reason() -> None:
    def broken() -> MovesAdmin:
        raise OSError("no brokers")

    assert describe_moves(broken, FakeLogDirs, 1.0) == "no admin connection: OSError: no brokers"


def test_the_help_explains_incoming_and_its_acl(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["status", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--incoming" in text
    assert "WOULD CROSS THE SOFT LIMIT" in text
    assert "needs DESCRIBE on the cluster" in text
