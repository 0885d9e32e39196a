"""The data-quality panel: which brokers report, which stopped, where the history has holes.

Read off the broker-hour pre-aggregates of the replay (``broker_samples.broker_buckets``) and
the forecast's retired volumes, so it costs no extra pass over the history.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

QUALITY_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "status",
    "firstSnapshotHoursAgo",
    "lastSnapshotHoursAgo",
    "hoursWithoutSnapshots",
)


def broker_quality(
    buckets: pd.DataFrame,
    forecast: pd.DataFrame,
    at: datetime,
    stale_after_hours: float,
    bucket_seconds: float = 3600.0,
) -> pd.DataFrame:
    """Per broker: ok / stale / retired, its snapshot span and the hours of it with none."""
    retired = set(
        forecast.groupby("brokerId")["trend"]
        .agg(lambda trends: bool((trends == "retired").all()))
        .loc[lambda flags: flags]
        .index.astype(int)
    )
    end = at.timestamp()
    step = bucket_seconds / 3600.0
    records = []
    for _, group in buckets.groupby("brokerId", sort=True):
        broker = int(group["brokerId"].iloc[0])
        times = group["t"].to_numpy(dtype=np.float64)
        indexes = np.unique(np.ceil((times - end) / bucket_seconds))
        last = (end - float(times.max())) / 3600.0
        status = "retired" if broker in retired else "stale" if last > stale_after_hours else "ok"
        records.append(
            {
                "brokerId": broker,
                "status": status,
                "firstSnapshotHoursAgo": (end - float(times.min())) / 3600.0,
                "lastSnapshotHoursAgo": last,
                "hoursWithoutSnapshots": (indexes[-1] - indexes[0] + 1 - indexes.size) * step,
            }
        )
    frame = pd.DataFrame.from_records(records, columns=list(QUALITY_COLUMNS))
    order = {"stale": 0, "retired": 1, "ok": 2}
    return frame.sort_values(
        ["status", "hoursWithoutSnapshots"],
        key=lambda column: column.map(order) if column.name == "status" else -column,
    ).reset_index(drop=True)


def quality_sentence(quality: pd.DataFrame, min_compaction_lag_hours: float) -> str:
    """One paragraph for the panel's top."""
    if quality.empty:
        return "No snapshots in the replay window."
    counts = quality["status"].value_counts()
    newest = float(quality["lastSnapshotHoursAgo"].min())
    lag = (
        f"The newest snapshot is {newest:.1f} h old: the ingest must run well within "
        f"min.compaction.lag.ms ({min_compaction_lag_hours:g} h) or compaction deletes "
        "history before it is read"
    )
    if newest > min_compaction_lag_hours / 2:
        lag = "WARNING: " + lag + " (over half the lag already)"
    return (
        f"{len(quality)} brokers in the replay window: {int(counts.get('ok', 0))} reporting, "
        f"{int(counts.get('stale', 0))} stale, {int(counts.get('retired', 0))} retired; "
        f"{float(quality['hoursWithoutSnapshots'].sum()):,.0f} broker-hours without snapshots "
        f"(gaps). {lag}."
    )
