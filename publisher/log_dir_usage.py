"""Which topic fills a volume, from what Kafka reports about a broker's log dirs (pure).

The cluster agent has no access to the brokers' disks: it asks each broker for its log dirs
with their partitions (DescribeLogDirs), and turns each answer into the summaries the sidecar's
walk makes (``publisher.topic_usage.VolumeTopicUsage``), so that one usage document serves both.

- Volumes are the snapshot's: log dirs on one filesystem count once and the volume is named
  after its first log dir (``publisher.log_dir_volumes``); an offline log dir is a volume of
  its own, with no partitions.
- A partition counts its size for its topic, and one partition; a future replica
  (``isFuture``: the copy being moved to this log dir, the sidecar's ``-future`` dir) counts
  its size as ``transient`` and no partition.
- What the API does not say is stated as nothing: no active segment bytes (0), no oldest
  segment time (None), no unattributed bytes (0; checkpoints and caches outside partitions
  are not reported), and no ``-delete`` or ``-stray`` dirs (Kafka does not list them).
- A partition's size is the size of its segment files, as Kafka counts it: not the disk
  blocks the sidecar counts, which add each partition's index and checkpoint files (a few KiB).

Values in, values out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from publisher.log_dir_volumes import LogDirReport, volumes_from_log_dirs
from publisher.topic_usage import OtherTopics, TopicTotals, VolumeTopicUsage


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """One partition of a log dir, as DescribeLogDirs reports it."""

    topic: str
    partition: int
    size_bytes: int
    is_future: bool = False


@dataclass(frozen=True, slots=True)
class LogDirContents:
    """A log dir (its sizes, ``publisher.log_dir_volumes``) and the partitions in it."""

    report: LogDirReport
    partitions: tuple[PartitionReport, ...] = ()


def log_dir_contents(entry: Mapping[str, Any]) -> LogDirContents:
    """One log dir of kafka-python's ``describe_log_dirs`` answer (the response's ``to_dict``)."""
    error_code = int(entry.get("error_code", 0))
    report = LogDirReport(
        path=str(entry["log_dir"]),
        error=None if error_code == 0 else f"Kafka error code {error_code}",
        total_bytes=int(entry.get("total_bytes", -1)),
        usable_bytes=int(entry.get("usable_bytes", -1)),
    )
    partitions = tuple(
        PartitionReport(
            topic=str(topic["name"]),
            partition=int(partition["partition_index"]),
            size_bytes=max(0, int(partition["partition_size"])),
            is_future=bool(partition.get("is_future_key", False)),
        )
        for topic in entry.get("topics") or ()
        for partition in topic.get("partitions") or ()
    )
    return LogDirContents(report, partitions)


@dataclass(slots=True)
class _Topic:
    bytes: int = 0
    partitions: int = 0
    transient_bytes: int = 0


def _summary(volume_name: str, partitions: Sequence[PartitionReport], top: int) -> VolumeTopicUsage:
    by_topic: dict[str, _Topic] = {}
    for partition in partitions:
        topic = by_topic.setdefault(partition.topic, _Topic())
        topic.bytes += partition.size_bytes
        if partition.is_future:
            topic.transient_bytes += partition.size_bytes
        else:
            topic.partitions += 1
    totals = sorted(
        (
            TopicTotals(
                topic=name,
                bytes=topic.bytes,
                partitions=topic.partitions,
                active_segment_bytes=0,
                transient_bytes=topic.transient_bytes,
                oldest_segment_modified=None,
            )
            for name, topic in by_topic.items()
        ),
        key=lambda total: (-total.bytes, total.topic),
    )
    kept, rest = totals[:top], totals[top:]
    return VolumeTopicUsage(
        volume_name=volume_name,
        total_bytes=sum(total.bytes for total in totals),
        topics=tuple(kept),
        other=OtherTopics(
            topics=len(rest),
            bytes=sum(total.bytes for total in rest),
            partitions=sum(total.partitions for total in rest),
            active_segment_bytes=0,
            transient_bytes=sum(total.transient_bytes for total in rest),
        ),
        unattributed_bytes=0,
    )


def usage_from_log_dirs(dirs: Sequence[LogDirContents], top: int) -> list[VolumeTopicUsage]:
    """One summary per volume of the broker (named as its snapshot names it), by name: the
    ``top`` largest topics and the rest summed. Raises ``UnmeasurableLogDirError`` for a log
    dir without sizes (Kafka older than 3.3), as the snapshot's survey does."""
    if top < 0:
        raise ValueError("top must be at least 0")
    volume_of = {
        log_dir: measurement.volume.name
        for measurement in volumes_from_log_dirs([contents.report for contents in dirs])
        for log_dir in measurement.volume.log_dirs
    }
    partitions: dict[str, list[PartitionReport]] = {name: [] for name in volume_of.values()}
    for contents in dirs:
        partitions[volume_of[contents.report.path]].extend(contents.partitions)
    return [_summary(name, partitions[name], top) for name in sorted(partitions)]
