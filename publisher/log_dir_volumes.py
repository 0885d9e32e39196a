"""A broker's volumes from what Kafka reports about its log dirs (DescribeLogDirs, KIP-827).

Kafka reports, per log dir, the total and usable bytes of the filesystem it is on; it does not
say which filesystem. Log dirs on one filesystem report the same two numbers at the same
instant, so dirs with equal (total, usable) count once, as the sidecar counts a filesystem
once. Two different filesystems with exactly the same size and exactly the same usable bytes
would be merged; their limits are then judged once, on identical figures, so the decision is
the same. A log dir Kafka took offline (KIP-112: its disk failed or filled) is reported as a
full volume of its own: an offline dir is the outage this system exists to prevent.

Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from publisher.volumes import Volume, VolumeLimitOverride, VolumeMeasurement

UNKNOWN_SIZE = -1
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
    groups: dict[tuple[int, int], list[str]] = {}
    measurements = []
    for report in sorted(reports, key=lambda report: report.path):
        if report.error is not None:
            capacity = max(report.total_bytes, 1)
            volume = _volume((report.path,), overrides)
            measurements.append(VolumeMeasurement(volume, capacity, 0))
            continue
        if report.total_bytes <= 0 or report.usable_bytes == UNKNOWN_SIZE:
            raise UnmeasurableLogDirError(
                f"log dir {report.path} has no size in DescribeLogDirs (Kafka 3.3 or later needed)"
            )
        groups.setdefault((report.total_bytes, report.usable_bytes), []).append(report.path)
    for (total, usable), paths in groups.items():
        volume = _volume(tuple(paths), overrides)
        measurements.append(VolumeMeasurement(volume, total, min(usable, total)))
    return sorted(measurements, key=lambda measurement: measurement.volume.name)


def _volume(log_dirs: tuple[str, ...], overrides: Sequence[VolumeLimitOverride]) -> Volume:
    soft = hard = None
    for override in overrides:
        if override.volume in log_dirs:
            soft = override.soft_limit or soft
            hard = override.hard_limit or hard
    name = log_dirs[0]
    return Volume(name=name, mount_point=name, log_dirs=log_dirs, soft_limit=soft, hard_limit=hard)
