"""Per broker and hour (or per snapshot), the worst volume: the input of the cluster replay.

Spark reduces the raw history (one row per volume and snapshot) to one row per broker and
bucket: the volume with the least free fraction (the worst under any MinFreePercentage
candidate), the smallest factor under the limits in force (same rule as
``consumer.limits.judge_free_space``, on the thresholds the ingest stored), and the time of
the bucket's newest snapshot. Only these rows (brokers x hours in the lookback window) reach
the driver. A bucket stands for its worst moment: an hour in which the cluster throttled for
five minutes counts as a throttled hour.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.cluster_replay import NO_BREACH, BrokerSamples

BUCKET_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "t",
    "worstFree",
    "worstCapacity",
    "worstVolume",
    "inForceFactor",
    "inForceVolume",
)
""":func:`broker_buckets`' columns: ``t`` the bucket's newest snapshot (seconds since the
epoch), ``worst*`` the volume with the least free share, ``inForce*`` the smallest factor under
the limits in force (:data:`NO_BREACH` when OPEN) and its volume."""


def in_force_factor(free: Column, soft: Column, hard: Column) -> Column:
    """``judge_free_space``'s factor as a Spark column; :data:`NO_BREACH` when OPEN."""
    return (
        F.when(free <= hard, F.lit(0.0))
        .when((soft > hard) & (free <= soft), (free - hard) / (soft - hard))
        .otherwise(F.lit(NO_BREACH))
    )


def bucket_offset(at: datetime, bucket_seconds: float) -> Column:
    """Each row's time from ``at`` in buckets of ``bucket_seconds`` (negative: before)."""
    seconds = F.unix_micros(F.col("snapshotAt")) / 1e6
    return (seconds - F.lit(at.timestamp())) / F.lit(float(bucket_seconds))


def window_rows(rows: DataFrame, at: datetime, lookback_hours: float | None) -> DataFrame:
    """Rows at or before ``at`` and within the lookback, pruning date partitions."""
    window = rows.where(F.col("snapshotAt") <= F.lit(at))
    if lookback_hours is None:
        return window
    start = at - timedelta(hours=lookback_hours)
    window = window.where(F.col("snapshotAt") > F.lit(start))
    if "date" in rows.columns:
        window = window.where(
            F.col("date").between(
                F.lit(start.astimezone(UTC).date()), F.lit(at.astimezone(UTC).date())
            )
        )
    return window


def _refused(rows: DataFrame, max_clock_skew_seconds: float | None) -> Column:
    """Snapshots the consumer refuses on arrival: dated more than the allowed skew after their
    Kafka record timestamp (``receivedAt``; JSONL input has none, and nothing is refused)."""
    if max_clock_skew_seconds is None or "receivedAt" not in rows.columns:
        return F.lit(False)
    ahead = (F.unix_micros(F.col("snapshotAt")) - F.unix_micros(F.col("receivedAt"))) / 1e6
    return F.coalesce(ahead > F.lit(float(max_clock_skew_seconds)), F.lit(False))


def _bucket(seconds: Column, at: datetime, bucket_seconds: float | None) -> Column:
    if bucket_seconds is None:
        return seconds
    # Buckets end at ``at``, ``at`` - 1 h, ...: the replay grid.
    return F.ceil((seconds - F.lit(at.timestamp())) / F.lit(bucket_seconds))


def refused_arrivals(
    rows: DataFrame,
    at: datetime,
    lookback_hours: float | None,
    bucket_seconds: float | None,
    max_clock_skew_seconds: float,
) -> dict[int, npt.NDArray[np.float64]]:
    """Per broker, the arrival times of its refused snapshots (the newest of each bucket),
    sorted: from each, the consumer holds the broker unknown until a snapshot is taken."""
    if "receivedAt" not in rows.columns:
        return {}
    refused = window_rows(rows, at, lookback_hours).where(_refused(rows, max_clock_skew_seconds))
    arrival = F.unix_micros(F.col("receivedAt")) / 1e6
    newest = (
        refused.withColumn("arrival", arrival)
        .withColumn("bucket", _bucket(F.col("arrival"), at, bucket_seconds))
        .groupBy("brokerId", "bucket")
        .agg(F.max("arrival").alias("arrival"))
        .toPandas()
    )
    return {
        int(group["brokerId"].iloc[0]): np.sort(group["arrival"].to_numpy(dtype=np.float64))
        for _, group in newest.groupby("brokerId")
    }


def broker_buckets(
    rows: DataFrame,
    at: datetime,
    lookback_hours: float | None,
    bucket_seconds: float | None,
    max_clock_skew_seconds: float | None = None,
) -> pd.DataFrame:
    """One row per broker and bucket (``bucket_seconds`` None: per snapshot instant), of the
    snapshots the consumer takes (with ``max_clock_skew_seconds``: not the refused ones)."""
    window = window_rows(rows, at, lookback_hours).where(~_refused(rows, max_clock_skew_seconds))
    seconds = F.unix_micros(F.col("snapshotAt")) / 1e6
    bucket = _bucket(seconds, at, bucket_seconds)
    fraction = F.col("free") / F.col("capacity")
    factor = in_force_factor(
        F.col("free"), F.col("softThresholdBytes"), F.col("hardThresholdBytes")
    )
    grouped = window.withColumn("t", seconds).withColumn("bucket", bucket)
    frame = (
        grouped.groupBy("brokerId", "bucket")
        .agg(
            F.max("t").alias("t"),
            F.min_by(F.struct("free", "capacity", "volumeName"), fraction).alias("worst"),
            F.min(factor).alias("inForceFactor"),
            F.min_by("volumeName", factor).alias("inForceVolume"),
        )
        .select(*bucket_selection())
        .toPandas()
    )
    return by_broker_and_time(frame)


def bucket_selection() -> list[Column]:
    """:data:`BUCKET_COLUMNS` of a per-broker aggregation with ``t``, ``inForce*`` and a
    ``worst`` struct of the worst volume's ``free``, ``capacity`` and ``volumeName``."""
    worst = {"worstFree": "free", "worstCapacity": "capacity", "worstVolume": "volumeName"}
    return [
        F.col(f"worst.{worst[name]}").alias(name) if name in worst else F.col(name)
        for name in BUCKET_COLUMNS
    ]


def by_broker_and_time(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["brokerId", "t"], kind="stable").reset_index(drop=True)


def tombstone_times(
    tombstones: DataFrame | None, at: datetime, lookback_hours: float | None = None
) -> dict[int, float]:
    """Each broker's newest tombstone at or before ``at`` (seconds since the epoch), within the
    lookback (an older tombstone precedes every sample of the window: it retires nothing
    there)."""
    if tombstones is None:
        return {}
    newest = (
        window_rows(tombstones, at, lookback_hours)
        .groupBy("brokerId")
        .agg(F.max(F.unix_micros(F.col("snapshotAt")) / 1e6).alias("t"))
        .collect()
    )
    return {int(row["brokerId"]): float(row["t"]) for row in newest}


def to_samples(
    buckets: pd.DataFrame,
    retired: dict[int, float],
    refused: dict[int, npt.NDArray[np.float64]] | None = None,
) -> list[BrokerSamples]:
    """The per-broker arrays :func:`cluster_replay.replay_cluster` takes (``refused``:
    :func:`refused_arrivals`)."""
    refused = refused or {}
    samples = []
    groups = {int(group["brokerId"].iloc[0]): group for _, group in buckets.groupby("brokerId")}
    for broker_id in sorted(set(groups) | set(refused)):
        group = groups.get(broker_id, buckets.iloc[0:0])
        samples.append(
            BrokerSamples(
                broker_id=broker_id,
                times=group["t"].to_numpy(dtype=np.float64),
                worst_free=group["worstFree"].to_numpy(dtype=np.float64),
                worst_capacity=group["worstCapacity"].to_numpy(dtype=np.float64),
                in_force_factor=group["inForceFactor"].to_numpy(dtype=np.float64),
                retired_at=retired.get(broker_id),
                refused_at=refused.get(broker_id, np.empty(0)),
            )
        )
    return samples
