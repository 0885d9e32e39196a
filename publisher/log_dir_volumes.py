"""A broker's volumes from what Kafka reports about its log dirs (DescribeLogDirs, KIP-827).

Kafka reports, per log dir, the total and usable bytes of the filesystem it is on; it does not
say which filesystem. Log dirs on one filesystem report the same total, and the same usable
bytes but for what was written between the broker's reads of each dir (on a busy broker,
megabytes): dirs with equal total and usable bytes within ``SAME_FILESYSTEM_SLACK_BYTES`` of
each other count once, as the sidecar counts a filesystem once, judged on the smallest usable
figure. Two different filesystems of the same size within that slack of each other are merged
the same way: their limits are judged once, on the fuller one's figure, so no space that is
gone is hidden (one volume is shown instead of two until they drift apart). A log dir Kafka
took offline (KIP-112: its disk failed or filled) is reported as a full volume of its own: an
offline dir is the outage this system exists to prevent.

Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from publisher.volumes import Volume, VolumeLimitOverride, VolumeMeasurement

UNKNOWN_SIZE = -1
SAME_FILESYSTEM_SLACK_BYTES = 64 * 1024 * 1024
"""Usable bytes of two log dirs of one filesystem may differ by what was written between the
broker's reads of each: up to this much they count as one filesystem."""
"""What DescribeLogDirs answers for total/usable bytes before Kafka 3.3 (no KIP-827)."""


@dataclass(frozen=True, slots=True)
class LogDirReport:
    path: str
    error: str | None
    """None when the dir is online; else Kafka's error (e.g. KAFKA_STORAGE_ERROR)."""
    total_bytes: int
    usable_bytes: int


class UnmeasurableLogDirError(ValueError):
    """The broker reports no sizes for a log dir (Kafka older than 3.3)."""


def volumes_from_log_dirs(
    reports: Sequence[LogDirReport], overrides: Sequence[VolumeLimitOverride] = ()
) -> list[VolumeMeasurement]:
    """One measurement per filesystem, named after its first log dir, with its limits."""
    measurements = []
    online: list[LogDirReport] = []
    for report in reports:
        if report.error is not None:
            capacity = max(report.total_bytes, 1)
            volume = _volume((report.path,), overrides)
            measurements.append(VolumeMeasurement(volume, capacity, 0))
            continue
        if report.total_bytes <= 0 or report.usable_bytes == UNKNOWN_SIZE:
            raise UnmeasurableLogDirError(
                f"log dir {report.path} has no size in DescribeLogDirs (Kafka 3.3 or later needed)"
            )
        online.append(report)
    for group in _filesystems(online):
        paths = tuple(sorted(report.path for report in group))
        total = group[0].total_bytes
        usable = min(report.usable_bytes for report in group)
        measurements.append(VolumeMeasurement(_volume(paths, overrides), total, min(usable, total)))
    return sorted(measurements, key=lambda measurement: measurement.volume.name)


def _filesystems(reports: Sequence[LogDirReport]) -> list[list[LogDirReport]]:
    """Log dirs grouped by filesystem: equal total bytes, usable bytes within the slack of the
    group's smallest."""
    groups: list[list[LogDirReport]] = []
    ordered = sorted(reports, key=lambda report: (report.total_bytes, report.usable_bytes))
    for report in ordered:
        group = groups[-1] if groups else None
        if (
            group is not None
            and group[0].total_bytes == report.total_bytes
            and report.usable_bytes - group[0].usable_bytes <= SAME_FILESYSTEM_SLACK_BYTES
        ):
            group.append(report)
        else:
            groups.append([report])
    return groups


def _volume(log_dirs: tuple[str, ...], overrides: Sequence[VolumeLimitOverride]) -> Volume:
    soft = hard = None
    for override in overrides:
        if override.volume in log_dirs:
            soft = override.soft_limit or soft
            hard = override.hard_limit or hard
    name = log_dirs[0]
    return Volume(name=name, mount_point=name, log_dirs=log_dirs, soft_limit=soft, hard_limit=hard)
