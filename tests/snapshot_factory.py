"""Building snapshots for tests from plain numbers, through the real model."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from schemas.snapshot import VolumeSnapshot

NOON = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def percent_limit(level: float) -> dict[str, Any]:
    return {"type": "MinFreePercentage", "level": level}


def bytes_limit(level: int) -> dict[str, Any]:
    return {"type": "MinFreeBytes", "level": level}


def volume(
    name: str = "/dev/sda", capacity: int = 1000, consumed: int = 0, **extra: Any
) -> dict[str, Any]:
    return {"volumeName": name, "capacity": capacity, "consumed": consumed, **extra}


def snapshot_document(
    broker_id: int = 0,
    volumes: list[dict[str, Any]] | None = None,
    at: datetime | str = NOON,
    soft: dict[str, Any] | None = None,
    hard: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A snapshot as the JSON document a publisher sends (soft 20 % free, hard 10 % by default)."""
    return {
        "schemaVersion": 1,
        "brokerId": broker_id,
        "snapshotAt": at if isinstance(at, str) else at.isoformat(),
        "softLimit": soft or percent_limit(20),
        "hardLimit": hard or percent_limit(10),
        "volumes": [volume()] if volumes is None else volumes,
    }


def make_snapshot(**fields: Any) -> VolumeSnapshot:
    return VolumeSnapshot.model_validate_json(json.dumps(snapshot_document(**fields)))


def snapshot_line(**fields: Any) -> bytes:
    return json.dumps(snapshot_document(**fields)).encode()
