"""Bytes on their way in: each move still to write, from reassignments and log dirs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from consumer.incoming_bytes import (
    BrokerLogDir,
    IncomingMove,
    KnownVolume,
    MoveKind,
    Reassignment,
    ReplicaReport,
    incoming_moves,
    incoming_per_volume,
    kafka_default_log_dir,
    volume_of_log_dir,
)

MIB = 1024 * 1024
DIRS = [BrokerLogDir(broker, f"/data/b{broker}/logs") for broker in range(3)]


def replica(broker: int, size: int, *, topic: str = "t", partition: int = 0) -> ReplicaReport:
    return ReplicaReport(broker, f"/data/b{broker}/logs", topic, partition, size)


def test_an_adding_replica_not_created_yet_will_write_the_whole_partition() -> None:
    moves = incoming_moves(
        [Reassignment("t", 0, replicas=(0, 1, 2), adding=(2,))],
        [replica(0, 10 * MIB), replica(1, 9 * MIB)],
        DIRS,
    )
    (move,) = moves
    assert move.kind is MoveKind.REASSIGNMENT
    assert (move.broker_id, move.bytes, move.source_broker) == (2, 10 * MIB, 0)
    assert move.log_dir is None
    assert move.likely_log_dir == "/data/b2/logs"
    assert move.source == "reassignment of t-0 from broker 0"


def test_an_adding_replica_under_way_will_write_what_it_lacks_in_its_own_log_dir() -> None:
    (move,) = incoming_moves(
        [Reassignment("t", 0, replicas=(0, 1, 2), adding=(2,))],
        [replica(0, 10 * MIB), replica(1, 10 * MIB), replica(2, 4 * MIB)],
        DIRS,
    )
    assert move.bytes == 6 * MIB
    assert move.log_dir == "/data/b2/logs"
    assert move.likely_log_dir is None


def test_the_size_is_the_largest_replica_not_being_added() -> None:
    (move,) = incoming_moves(
        [Reassignment("t", 0, replicas=(0, 1, 2), adding=(2,))],
        [replica(0, 3 * MIB), replica(1, 7 * MIB), replica(2, 9 * MIB)],
        DIRS,
    )
    assert (move.bytes, move.source_broker) == (0, 1)


def test_a_partition_no_broker_reports_is_left_out() -> None:
    assert incoming_moves([Reassignment("t", 0, replicas=(2,), adding=(2,))], [], DIRS) == []


def test_a_future_replica_will_write_its_current_replicas_size_minus_its_own() -> None:
    current = ReplicaReport(0, "/a", "t", 3, 8 * MIB)
    future = ReplicaReport(0, "/b", "t", 3, 2 * MIB, is_future=True)
    (move,) = incoming_moves([], [current, future], [BrokerLogDir(0, "/a"), BrokerLogDir(0, "/b")])
    assert move.kind is MoveKind.LOG_DIR_MOVE
    assert (move.broker_id, move.log_dir, move.source_log_dir) == (0, "/b", "/a")
    assert move.bytes == 6 * MIB
    assert move.source == "log-dir move of t-3 from /a"


def test_kafka_default_is_the_online_log_dir_with_fewest_partitions_first_on_ties() -> None:
    dirs = [BrokerLogDir(0, "/a"), BrokerLogDir(0, "/b"), BrokerLogDir(0, "/c", online=False)]
    assert kafka_default_log_dir(0, dirs, []) == "/a"
    busy = [ReplicaReport(0, "/a", "t", 0, 1)]
    assert kafka_default_log_dir(0, dirs, busy) == "/b"
    assert kafka_default_log_dir(1, dirs, busy) is None


def test_a_log_dir_belongs_to_its_named_volume_else_the_deepest_mount_above_it() -> None:
    volumes = [
        KnownVolume(0, "/dev/vda", "/"),
        KnownVolume(0, "/dev/vdb", "/data"),
        KnownVolume(0, "/srv/kafka/logs", "/srv/kafka/logs"),
        KnownVolume(1, "/dev/vdc", "/data/b2"),
    ]
    assert volume_of_log_dir(0, "/data/b2/logs", volumes) == "/dev/vdb"
    assert volume_of_log_dir(0, "/var/logs", volumes) == "/dev/vda"
    assert volume_of_log_dir(0, "/srv/kafka/logs", volumes) == "/srv/kafka/logs"
    assert volume_of_log_dir(0, "/database", [KnownVolume(0, "/dev/vdb", "/data")]) is None
    assert volume_of_log_dir(2, "/data", volumes) is None


def test_an_unplaced_move_lands_on_the_brokers_only_volume_else_per_broker() -> None:
    move = IncomingMove(MoveKind.REASSIGNMENT, "t", 0, 2, 5, None, "/x", 0, None)
    one = [KnownVolume(2, "/dev/vda", "/")]
    two = [*one, KnownVolume(2, "/dev/vdb", "/x")]
    assert dict(incoming_per_volume([move], one)) == {(2, "/dev/vda"): [move]}
    assert dict(incoming_per_volume([move], two)) == {(2, None): [move]}


topics = st.sampled_from(["a", "b"])
partitions = st.integers(min_value=0, max_value=2)
brokers = st.integers(min_value=0, max_value=2)
replica_reports = st.builds(
    ReplicaReport,
    broker_id=brokers,
    log_dir=st.sampled_from(["/x", "/y"]),
    topic=topics,
    partition=partitions,
    size_bytes=st.integers(min_value=0, max_value=10**12),
    is_future=st.booleans(),
)
reassignments = st.builds(
    Reassignment,
    topic=topics,
    partition=partitions,
    replicas=st.tuples(brokers),
    adding=st.lists(brokers, unique=True, max_size=3).map(tuple),
)
log_dirs = st.lists(st.builds(BrokerLogDir, broker_id=brokers, path=st.sampled_from(["/x", "/y"])))


@given(st.lists(reassignments), st.lists(replica_reports), log_dirs)
def test_incoming_bytes_are_never_negative(
    moving: list[Reassignment], replicas: list[ReplicaReport], dirs: list[BrokerLogDir]
) -> None:
    for move in incoming_moves(moving, replicas, dirs):
        assert move.bytes >= 0


@given(st.lists(replica_reports), log_dirs)
def test_nothing_moving_is_nothing_incoming(
    replicas: list[ReplicaReport], dirs: list[BrokerLogDir]
) -> None:
    settled = [replica for replica in replicas if not replica.is_future]
    assert incoming_moves([], settled, dirs) == []
    no_adding = [Reassignment("a", 0, replicas=(0, 1), adding=())]
    assert incoming_moves(no_adding, settled, dirs) == []


@given(st.lists(reassignments), st.lists(replica_reports), log_dirs)
def test_no_move_writes_more_than_the_largest_replica_of_its_partition(
    moving: list[Reassignment], replicas: list[ReplicaReport], dirs: list[BrokerLogDir]
) -> None:
    for move in incoming_moves(moving, replicas, dirs):
        sizes = [
            replica.size_bytes
            for replica in replicas
            if (replica.topic, replica.partition) == (move.topic, move.partition)
        ]
        assert move.bytes <= max(sizes)
