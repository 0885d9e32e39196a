"""Bytes on their way in: partition moves in flight, counted as committed usage (pure).

A partition reassignment (AlterPartitionReassignments, ``kafka-reassign-partitions``) copies the
partition's whole log onto each broker it adds; an intra-broker move (AlterReplicaLogDirs) copies
it into the target log dir as a ``-future`` replica. Until the copy lands, the bytes it will
still write are already committed: a nearly full volume can be filled by a move alone.

From what Kafka reports (ListPartitionReassignments: each partition's adding replicas;
DescribeLogDirs: every replica's log dir, size and ``isFuture``):

- A partition being reassigned: its size is the largest of its replicas that are not being
  added (the leader's, or a follower's that is ahead of it on disk; when only adding replicas
  report it, the largest of them). Each adding broker still has to write that size minus what
  its replica holds already (nothing before the replica is created).
- An intra-broker move: a ``-future`` replica has to write its current replica's size minus its
  own.
- Never negative: a replica that holds more than its source (a log that grew, or one whose start
  was already deleted) adds nothing. Nothing moving, nothing incoming.

Where an adding replica lands before it exists is Kafka's choice, not known yet. Kafka (its
``LogManager``) creates a new replica in the log dir the partition's metadata assigns it, else in
the one named for it by AlterReplicaLogDirs (``kafka-reassign-partitions`` with ``log_dirs``),
else in the online log dir holding the fewest partitions. A broker with one log dir has no
choice; for a broker with several the move is shown per broker, with Kafka's default (fewest
partitions, ties to the first as DescribeLogDirs lists them) as the likely log dir.

A log dir belongs to the snapshot's volume named after it (the cluster agent names volumes by
their first log dir), else to the volume whose mount point (``path``) is the deepest one above
it (the sidecar names volumes by device); else to no known volume.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath


class MoveKind(StrEnum):
    REASSIGNMENT = "reassignment"
    LOG_DIR_MOVE = "log-dir move"


@dataclass(frozen=True, slots=True)
class ReplicaReport:
    """One replica in one log dir of one broker, as DescribeLogDirs reports it."""

    broker_id: int
    log_dir: str
    topic: str
    partition: int
    size_bytes: int
    is_future: bool = False


@dataclass(frozen=True, slots=True)
class BrokerLogDir:
    """One log dir of a broker; an offline one takes no new replica."""

    broker_id: int
    path: str
    online: bool = True


@dataclass(frozen=True, slots=True)
class Reassignment:
    """One partition of ListPartitionReassignments."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class IncomingMove:
    """Bytes one move still has to write on one broker."""

    kind: MoveKind
    topic: str
    partition: int
    broker_id: int
    bytes: int
    log_dir: str | None
    """Where the bytes land; None when the replica does not exist yet (Kafka has not chosen)."""
    likely_log_dir: str | None
    """Kafka's default choice when ``log_dir`` is None (fewest partitions); else None."""
    source_broker: int | None
    """The broker whose replica the size was taken from (a reassignment)."""
    source_log_dir: str | None
    """The log dir the replica moves from (a log-dir move)."""

    @property
    def source(self) -> str:
        if self.kind is MoveKind.LOG_DIR_MOVE:
            return f"log-dir move of {self.topic}-{self.partition} from {self.source_log_dir}"
        return f"reassignment of {self.topic}-{self.partition} from broker {self.source_broker}"


def kafka_default_log_dir(
    broker_id: int, log_dirs: Sequence[BrokerLogDir], replicas: Iterable[ReplicaReport]
) -> str | None:
    """The online log dir of ``broker_id`` with the fewest replicas (future ones count, as in
    Kafka's ``LogManager.nextLogDirs``), ties to the first listed; None when it has none."""
    counts = {entry.path: 0 for entry in log_dirs if entry.broker_id == broker_id and entry.online}
    for replica in replicas:
        if replica.broker_id == broker_id and replica.log_dir in counts:
            counts[replica.log_dir] += 1
    if not counts:
        return None
    return min(counts, key=lambda path: counts[path])


def incoming_moves(
    reassignments: Sequence[Reassignment],
    replicas: Sequence[ReplicaReport],
    log_dirs: Sequence[BrokerLogDir],
) -> list[IncomingMove]:
    """Every move in flight with the bytes it still has to write (never negative), reassignments
    first, each in the order given. A reassigned partition no broker reports a size for is left
    out: there is nothing to count it by."""
    current: dict[tuple[str, int], dict[int, ReplicaReport]] = {}
    for replica in replicas:
        if not replica.is_future:
            current.setdefault((replica.topic, replica.partition), {})[replica.broker_id] = replica
    moves: list[IncomingMove] = []
    for reassignment in reassignments:
        held = current.get((reassignment.topic, reassignment.partition), {})
        sources = {
            broker: replica for broker, replica in held.items() if broker not in reassignment.adding
        } or held
        if not sources:
            continue
        source = max(sources.values(), key=lambda replica: (replica.size_bytes, -replica.broker_id))
        for broker in reassignment.adding:
            existing = held.get(broker)
            have = existing.size_bytes if existing is not None else 0
            moves.append(
                IncomingMove(
                    kind=MoveKind.REASSIGNMENT,
                    topic=reassignment.topic,
                    partition=reassignment.partition,
                    broker_id=broker,
                    bytes=max(0, source.size_bytes - have),
                    log_dir=existing.log_dir if existing is not None else None,
                    likely_log_dir=(
                        None
                        if existing is not None
                        else kafka_default_log_dir(broker, log_dirs, replicas)
                    ),
                    source_broker=source.broker_id,
                    source_log_dir=None,
                )
            )
    moves.extend(_log_dir_moves(replicas, current))
    return moves


def _log_dir_moves(
    replicas: Sequence[ReplicaReport],
    current: Mapping[tuple[str, int], Mapping[int, ReplicaReport]],
) -> list[IncomingMove]:
    """Each ``-future`` replica: its current replica's size minus its own."""
    moves = []
    for replica in replicas:
        if not replica.is_future:
            continue
        origin = current.get((replica.topic, replica.partition), {}).get(replica.broker_id)
        if origin is None:
            continue
        moves.append(
            IncomingMove(
                kind=MoveKind.LOG_DIR_MOVE,
                topic=replica.topic,
                partition=replica.partition,
                broker_id=replica.broker_id,
                bytes=max(0, origin.size_bytes - replica.size_bytes),
                log_dir=replica.log_dir,
                likely_log_dir=None,
                source_broker=None,
                source_log_dir=origin.log_dir,
            )
        )
    return moves


@dataclass(frozen=True, slots=True)
class KnownVolume:
    """A volume of a broker as its snapshot names it."""

    broker_id: int
    volume_name: str
    path: str | None


def volume_of_log_dir(broker_id: int, log_dir: str, volumes: Sequence[KnownVolume]) -> str | None:
    """The snapshot volume of ``broker_id`` that holds ``log_dir``, or None when none does."""
    own = [volume for volume in volumes if volume.broker_id == broker_id]
    target = PurePosixPath(log_dir)
    for volume in own:
        if PurePosixPath(volume.volume_name) == target:
            return volume.volume_name
    best: tuple[int, str] | None = None
    for volume in own:
        if volume.path is None:
            continue
        mount = PurePosixPath(volume.path)
        if target == mount or mount in target.parents:
            depth = len(mount.parts)
            if best is None or depth > best[0]:
                best = (depth, volume.volume_name)
    return None if best is None else best[1]


def incoming_per_volume(
    moves: Sequence[IncomingMove], volumes: Sequence[KnownVolume]
) -> Mapping[tuple[int, str | None], list[IncomingMove]]:
    """The moves grouped by where they land: (broker, volume), the volume None when the log dir
    is not chosen yet on a broker with more than one volume, or belongs to no known volume. A
    broker with exactly one known volume gets its unplaced moves on that volume."""
    grouped: dict[tuple[int, str | None], list[IncomingMove]] = {}
    for move in moves:
        volume: str | None = None
        if move.log_dir is not None:
            volume = volume_of_log_dir(move.broker_id, move.log_dir, volumes)
        else:
            own = [known for known in volumes if known.broker_id == move.broker_id]
            if len(own) == 1:
                volume = own[0].volume_name
        grouped.setdefault((move.broker_id, volume), []).append(move)
    return grouped
