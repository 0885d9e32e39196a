"""Measuring a volume with ``statvfs``.

capacity = f_blocks * f_frsize; free = f_bavail * f_frsize, the space an unprivileged writer (the
broker) can still use. On ext4, blocks reserved for root are not free for Kafka, so they count as
consumed, as in Kafka's own DescribeLogDirs ``usableBytes``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from publisher.volumes import Volume, VolumeMeasurement


def measure_volume(volume: Volume) -> VolumeMeasurement:
    """Measure through the first log dir (the mount point may be hidden in a container)."""
    stats = os.statvfs(volume.log_dirs[0])
    return VolumeMeasurement(
        volume=volume,
        capacity_bytes=stats.f_blocks * stats.f_frsize,
        free_bytes=stats.f_bavail * stats.f_frsize,
    )


def measure_volumes(volumes: Sequence[Volume]) -> list[VolumeMeasurement]:
    return [measure_volume(volume) for volume in volumes]
