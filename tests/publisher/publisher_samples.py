"""Sample volumes, measurements and snapshots for the publisher's unit tests."""

from __future__ import annotations

from datetime import UTC, datetime

from publisher.snapshot_building import build_snapshot
from publisher.volumes import Volume, VolumeMeasurement
from schemas.snapshot import Limit, VolumeSnapshot
from volume_quota.limit_parsing import parse_limit

GIB = 1024**3
SOFT = parse_limit("MinFreePercentage:20")
HARD = parse_limit("MinFreePercentage:10")
AT = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def volume(name: str = "/dev/sdb", mount_point: str = "/data", **limits: Limit) -> Volume:
    return Volume(name=name, mount_point=mount_point, log_dirs=(mount_point + "/kafka",), **limits)


def measurement(free: int, capacity: int = 100 * GIB, name: str = "/dev/sdb") -> VolumeMeasurement:
    return VolumeMeasurement(volume(name, "/mnt" + name), capacity, free)


def snapshot(*frees: int, capacity: int = 100 * GIB, broker_id: int = 1) -> VolumeSnapshot:
    """A snapshot with one volume per free-space value (named /dev/sd0, /dev/sd1, ...)."""
    return build_snapshot(
        broker_id,
        [measurement(free, capacity, f"/dev/sd{index}") for index, free in enumerate(frees)],
        SOFT,
        HARD,
        AT,
    )
