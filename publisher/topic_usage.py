"""Which topic fills a volume: the per-topic grouping of a log-dir walk (pure).

The walk (``publisher.topic_usage_walk``) lists, per volume, every partition directory and every
file in it, one ``stat`` each; everything here is a function on those values.

How Kafka names the directories of a log dir (``UnifiedLog``/``LocalLog``), and how each counts:

- ``<topic>-<partition>``: a partition this broker hosts. Its bytes and one partition count
  for the topic.
- ``<topic>-<partition>.<id>-future``: the copy of a partition being moved to this log dir
  (``kafka-reassign-partitions --reassignment-json-file`` with log dirs, or AlterReplicaLogDirs);
  it replaces the current dir when it has caught up. Its bytes count for the topic (they are on
  the disk now) as ``transient``; no partition is counted (the partition is already counted
  once, by its current dir, on this or another volume).
- ``<topic>-<partition>.<id>-delete``: a partition being deleted (topic deleted, replica moved
  away); Kafka removes it after ``file.delete.delay.ms`` (60 s). Bytes count as ``transient``,
  no partition.
- ``<topic>-<partition>.<id>-stray``: a partition the KRaft metadata no longer assigns to this
  broker, kept until an operator removes it (Kafka 3.7+). Bytes count as ``transient``, no
  partition.
- Anything else (checkpoint files and ``meta.properties`` at the root, ``remote-log-index-cache``,
  a directory whose name does not parse) counts as ``unattributed`` bytes of the volume.

Bytes are allocated bytes (``st_blocks * 512``, what ``du`` counts and what fills the disk):
Kafka's index files are preallocated sparse files whose length says nothing about the disk. A
partition directory's own blocks count for its topic too.

The active segment of a partition is its ``.log`` file with the highest base offset (the name);
the oldest segment is the one with the lowest. ``oldest_segment_modified`` is the modification
time of that oldest segment: when it was last appended to, i.e. when it rolled, which is when
time-based retention (``retention.ms``) starts counting for it; Kafka itself uses the largest
record timestamp of the segment, which equals it for topics with ``LogAppendTime`` and is close
to it for producers whose clocks are right.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

SEGMENT_SUFFIX = ".log"
BLOCK_BYTES = 512
"""The unit of ``st_blocks`` on Linux, whatever the filesystem's block size."""


class DirKind(StrEnum):
    CURRENT = "current"
    FUTURE = "future"
    DELETE = "delete"
    STRAY = "stray"


TRANSIENT_SUFFIXES = {
    "-future": DirKind.FUTURE,
    "-delete": DirKind.DELETE,
    "-stray": DirKind.STRAY,
}


@dataclass(frozen=True, slots=True)
class PartitionDir:
    """What a log dir's subdirectory name says: the topic, partition and kind, if Kafka's."""

    topic: str
    partition: int
    kind: DirKind


def parse_partition_dir(name: str) -> PartitionDir | None:
    """The partition a directory name stands for, or None when it is not a partition dir."""
    kind = DirKind.CURRENT
    base = name
    for suffix, suffix_kind in TRANSIENT_SUFFIXES.items():
        if name.endswith(suffix):
            stem, dot, unique_id = name[: -len(suffix)].rpartition(".")
            if not dot or not unique_id.isalnum():
                return None
            base, kind = stem, suffix_kind
            break
    topic, dash, partition = base.rpartition("-")
    if not dash or not topic or not partition.isascii() or not partition.isdigit():
        return None
    if partition != "0" and partition.startswith("0"):
        return None
    return PartitionDir(topic, int(partition), kind)


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One ``.log`` file of a partition directory, as ``stat`` saw it."""

    name: str
    allocated_bytes: int
    modified: float
    """``st_mtime``, seconds since the epoch."""


@dataclass(frozen=True, slots=True)
class DirEntry:
    """One subdirectory of a log dir: its name, the allocated bytes of the directory and of
    everything in it except its ``.log`` files, and those (only segments need a name and a
    time: the walk keeps no object for the other files)."""

    name: str
    allocated_bytes: int
    logs: tuple[FileEntry, ...] = ()

    @property
    def total_bytes(self) -> int:
        return self.allocated_bytes + sum(file.allocated_bytes for file in self.logs)


@dataclass(frozen=True, slots=True)
class VolumeWalk:
    """Everything under one volume's log dirs: the partition-looking dirs, and the bytes of
    everything else (root files, other dirs)."""

    volume_name: str
    dirs: tuple[DirEntry, ...]
    other_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return self.other_bytes + sum(entry.total_bytes for entry in self.dirs)


@dataclass(frozen=True, slots=True)
class TopicTotals:
    topic: str
    bytes: int
    partitions: int
    active_segment_bytes: int
    transient_bytes: int
    """Bytes in ``-future``, ``-delete`` and ``-stray`` dirs (included in ``bytes``)."""
    oldest_segment_modified: float | None
    """The earliest modification time of a current partition's oldest segment; None if none."""


@dataclass(frozen=True, slots=True)
class OtherTopics:
    """The topics left out of the top N, summed."""

    topics: int
    bytes: int
    partitions: int
    active_segment_bytes: int
    transient_bytes: int


@dataclass(frozen=True, slots=True)
class VolumeTopicUsage:
    volume_name: str
    total_bytes: int
    topics: tuple[TopicTotals, ...]
    """The largest topics, largest first (ties by name)."""
    other: OtherTopics
    unattributed_bytes: int


def _segments(files: Iterable[FileEntry]) -> list[tuple[int, FileEntry]]:
    segments = []
    for file in files:
        stem, _, suffix = file.name.partition(".")
        if "." + suffix == SEGMENT_SUFFIX and stem.isascii() and stem.isdigit():
            segments.append((int(stem), file))
    segments.sort(key=lambda pair: pair[0])
    return segments


@dataclass(slots=True)
class _Accumulator:
    bytes: int = 0
    partitions: int = 0
    active_segment_bytes: int = 0
    transient_bytes: int = 0
    oldest: float | None = None

    def add(self, parsed: PartitionDir, entry: DirEntry) -> None:
        size = entry.total_bytes
        self.bytes += size
        if parsed.kind is not DirKind.CURRENT:
            self.transient_bytes += size
            return
        self.partitions += 1
        segments = _segments(entry.logs)
        if segments:
            self.active_segment_bytes += segments[-1][1].allocated_bytes
            first = segments[0][1].modified
            self.oldest = first if self.oldest is None else min(self.oldest, first)


def topic_totals(walk: VolumeWalk) -> tuple[list[TopicTotals], int]:
    """Every topic on the volume, largest first, and the bytes attributed to no topic."""
    by_topic: dict[str, _Accumulator] = {}
    unattributed = walk.other_bytes
    for entry in walk.dirs:
        parsed = parse_partition_dir(entry.name)
        if parsed is None:
            unattributed += entry.total_bytes
            continue
        by_topic.setdefault(parsed.topic, _Accumulator()).add(parsed, entry)
    totals = [
        TopicTotals(
            topic=topic,
            bytes=acc.bytes,
            partitions=acc.partitions,
            active_segment_bytes=acc.active_segment_bytes,
            transient_bytes=acc.transient_bytes,
            oldest_segment_modified=acc.oldest,
        )
        for topic, acc in by_topic.items()
    ]
    totals.sort(key=lambda total: (-total.bytes, total.topic))
    return totals, unattributed


def summarize_volume(walk: VolumeWalk, top: int) -> VolumeTopicUsage:
    """The ``top`` largest topics of the volume and the rest summed: a bounded summary whose
    topics, other and unattributed bytes add up to the walk's total."""
    if top < 0:
        raise ValueError("top must be at least 0")
    totals, unattributed = topic_totals(walk)
    kept, rest = totals[:top], totals[top:]
    other = OtherTopics(
        topics=len(rest),
        bytes=sum(total.bytes for total in rest),
        partitions=sum(total.partitions for total in rest),
        active_segment_bytes=sum(total.active_segment_bytes for total in rest),
        transient_bytes=sum(total.transient_bytes for total in rest),
    )
    return VolumeTopicUsage(
        volume_name=walk.volume_name,
        total_bytes=walk.total_bytes,
        topics=tuple(kept),
        other=other,
        unattributed_bytes=unattributed,
    )


def summarize_volumes(walks: Sequence[VolumeWalk], top: int) -> list[VolumeTopicUsage]:
    return [summarize_volume(walk, top) for walk in walks]
