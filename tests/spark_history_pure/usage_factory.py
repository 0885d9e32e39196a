"""Topic usage documents and snapshots built as dicts, for the usage history's tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np

from schemas.wire_types import format_instant
from spark_history.forecast.backtest.rolling_origin import BucketSeries

GB = 10**9


def topic_configs_entry(topic: str, **values: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "topic": topic,
        "cleanupPolicy": "delete",
        "retentionMs": -1,
        "retentionBytes": -1,
        "segmentBytes": 100_000_000,
        "segmentMs": 604_800_000,
        "remoteStorageEnable": False,
        "localRetentionMs": -2,
        "localRetentionBytes": -2,
    }
    entry.update(values)
    return entry


def usage_document(
    broker: int,
    at: datetime,
    topics: Sequence[tuple[str, int, int]],
    *,
    volume: str = "/dev/a",
    other_bytes: int = GB,
    unattributed: int = 1_000_000,
    configs: Sequence[dict[str, object]] | None = None,
) -> dict[str, object]:
    """One broker's usage document with one volume; ``topics``: (name, bytes, partitions)."""
    listed = [
        {
            "topic": name,
            "bytes": size,
            "partitions": partitions,
            "activeSegmentBytes": 0,
            "transientBytes": 0,
        }
        for name, size, partitions in topics
    ]
    total = sum(size for _, size, _ in topics) + other_bytes + unattributed
    document: dict[str, object] = {
        "schemaVersion": 1,
        "brokerId": broker,
        "surveyedAt": format_instant(at),
        "surveySeconds": 0.5,
        "volumes": [
            {
                "volumeName": volume,
                "totalBytes": total,
                "topics": listed,
                "other": {
                    "topics": 3,
                    "bytes": other_bytes,
                    "partitions": 6,
                    "activeSegmentBytes": 0,
                    "transientBytes": 0,
                },
                "unattributedBytes": unattributed,
            }
        ],
    }
    if configs is not None:
        document["topicConfigs"] = {"readAt": format_instant(at), "topics": list(configs)}
    return document


def snapshot_document(
    broker: int, at: datetime, consumed: int, volume: str = "/dev/a"
) -> dict[str, object]:
    return {
        "schemaVersion": 1,
        "brokerId": broker,
        "snapshotAt": format_instant(at),
        "softLimit": {"type": "MinFreeBytes", "level": 200 * GB},
        "hardLimit": {"type": "MinFreeBytes", "level": 100 * GB},
        "volumes": [{"volumeName": volume, "capacity": 1000 * GB, "consumed": consumed}],
    }


def encoded(document: dict[str, object]) -> bytes:
    return json.dumps(document).encode()


def growing_cluster(
    start: datetime, hours: int, every_minutes: int = 10, broker: int = 0, volume: str = "/dev/a"
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Usage documents and snapshots of broker 0's /dev/a: ``logs`` written at 1 MB/s with no
    retention, ``capped`` held at 10 GB by retention.bytes (2 partitions x (4.9 GB + 100 MB)),
    the rest steady; the volume holds 300 GB besides ``logs`` growth. Configs in every tenth
    document, as the elected sidecar publishes them every few surveys."""
    usage, snapshots = [], []
    configs = [
        topic_configs_entry("logs"),
        topic_configs_entry("capped", retentionBytes=4_900_000_000),
    ]
    for index in range(hours * 60 // every_minutes + 1):
        at = start + timedelta(minutes=index * every_minutes)
        written = int(index * every_minutes * 60 * 1e6)
        logs = 50 * GB + written
        usage.append(
            usage_document(
                broker,
                at,
                [("logs", logs, 4), ("capped", 10 * GB - (index % 3) * 50_000_000, 2)],
                volume=volume,
                configs=configs if index % 10 == 0 else None,
            )
        )
        snapshots.append(snapshot_document(broker, at, 300 * GB + written, volume))
    return usage, snapshots


def growing_buckets(start: datetime, hours: int, lag_hours: float = 0.0) -> BucketSeries:
    """``growing_cluster``'s volume as the backtest cuts it (hourly buckets on the epoch axis,
    ``hours`` of them from ``start``): 300 GB plus 1 MB/s (``logs``) until each bucket's end
    minus ``lag_hours``; capacity 1000 GB, hard limit 100 GB free."""
    hour = 3600
    first = int(start.timestamp()) // hour
    index = np.arange(first + 1, first + hours + 1, dtype=np.int64)
    level = (300 * GB + (index - first - lag_hours) * hour * 1e6).astype(np.float64)
    return BucketSeries(
        index=index,
        maxima=level,
        means=level,
        minima=level,
        capacity=np.full(index.size, 1000.0 * GB),
        limit=np.full(index.size, 900.0 * GB),
    )
