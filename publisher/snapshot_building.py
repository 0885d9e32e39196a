"""Building the snapshot message from measurements, limits and a given time (no clock here)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from publisher.volumes import VolumeMeasurement
from schemas.snapshot import SNAPSHOT_SCHEMA_VERSION, Limit, VolumeSnapshot, VolumeUsage


def build_snapshot(
    broker_id: int,
    measurements: Iterable[VolumeMeasurement],
    soft_limit: Limit,
    hard_limit: Limit,
    measured_at: datetime,
) -> VolumeSnapshot:
    """The snapshot of ``broker_id`` at ``measured_at``; volumes sorted by name.

    Consumed space is capacity minus free, clamped to [0, capacity] (see ``VolumeMeasurement``)
    so that an odd filesystem report cannot produce an invalid message.
    """
    volumes = [
        VolumeUsage(
            volume_name=measurement.volume.name,
            path=measurement.volume.mount_point,
            capacity=measurement.capacity_bytes,
            consumed=measurement.consumed_bytes,
            soft_limit=measurement.volume.soft_limit,
            hard_limit=measurement.volume.hard_limit,
        )
        for measurement in sorted(measurements, key=lambda measurement: measurement.volume.name)
    ]
    return VolumeSnapshot(
        schema_version=SNAPSHOT_SCHEMA_VERSION,
        broker_id=broker_id,
        snapshot_at=measured_at,
        soft_limit=soft_limit,
        hard_limit=hard_limit,
        volumes=volumes,
    )
