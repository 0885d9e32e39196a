"""The threshold replay's input, read from the hourly rollup or from the raw rows.

The replay reads four things of its window: per broker and bucket the volume with the least
free share and the smallest factor under the limits in force (``broker_samples``); the arrival
of the snapshots the consumer refused as dated too far ahead; per volume and bucket the least
free space and the newest capacity; and each volume's newest limits. With 1 h buckets ending on
a whole hour (``hourly_rollup.serves``) each of them is an aggregate of the rollup's hours, so
the replay reads the rollup, about 60 times fewer rows than a snapshot a minute.

Except where the consumer refused a snapshot: one dated more than the allowed skew after its
Kafka record timestamp is left out of the replay, and only the raw rows can leave out one
snapshot of an hour. The rollup keeps each hour's largest such lead (``maxAheadSeconds``); when
one in the window exceeds the skew, the replay reads the raw rows instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import hourly_rollup
from spark_history.broker_samples import (
    broker_buckets,
    bucket_offset,
    bucket_selection,
    by_broker_and_time,
    refused_arrivals,
    window_rows,
)

LIMIT_FIELDS: tuple[str, ...] = (
    "softLimitType",
    "softLimitLevel",
    "hardLimitType",
    "hardLimitLevel",
)


@dataclass(frozen=True, slots=True)
class ReplayWindow:
    """The replay's window: ``lookback_hours`` before ``at`` in buckets of ``bucket_seconds``,
    leaving out snapshots dated more than ``max_clock_skew_seconds`` ahead."""

    at: datetime
    lookback_hours: float
    bucket_seconds: float
    max_clock_skew_seconds: float


@dataclass(frozen=True, slots=True)
class ReplayRows:
    buckets: pd.DataFrame
    """Per broker and bucket (``broker_samples.BUCKET_COLUMNS``), sorted by broker and time."""
    refused: dict[int, npt.NDArray[np.float64]]
    """Per broker, the arrivals of refused snapshots (``broker_samples.refused_arrivals``)."""
    volume_buckets: DataFrame
    """``brokerId``, ``volumeName``, ``bucket``, ``free`` (the least), ``capacity`` (newest)."""
    newest_limits: DataFrame
    """``brokerId``, ``volumeName``, ``limits`` (struct of :data:`LIMIT_FIELDS`): each
    volume's newest snapshot's limits."""
    source: str
    """``hourly rollup`` or ``raw rows``."""


@dataclass(frozen=True, slots=True)
class ServingRollup:
    """An hourly rollup checked to give the replay of ``window`` what the raw rows give
    (:func:`serving_rollup`)."""

    rollup: DataFrame
    window: ReplayWindow


def serving_rollup(rollup: DataFrame, window: ReplayWindow) -> ServingRollup | None:
    """``rollup`` when the window's buckets are its hours and no snapshot in them was refused
    (none dated more than the skew after its record timestamp), else None: one Spark job on
    the rollup."""
    if not hourly_rollup.serves(window.at, window.lookback_hours, window.bucket_seconds):
        return None
    partials = hourly_rollup.window_partials(rollup, window.at, window.lookback_hours)
    refused = F.col("maxAheadSeconds") > F.lit(float(window.max_clock_skew_seconds))
    return None if partials.where(refused).limit(1).count() else ServingRollup(rollup, window)


def replay_rows(
    rows: DataFrame, window: ReplayWindow, serving: ServingRollup | None = None
) -> ReplayRows:
    """The replay's input from the rollup ``serving`` (of ``rows``) when it was checked for
    this window, else from ``rows``."""
    if serving is not None and serving.window == window:
        return _from_rollup(serving.rollup, window.at, window.lookback_hours)
    return _from_raw(rows, window)


def _from_raw(rows: DataFrame, window: ReplayWindow) -> ReplayRows:
    at, lookback, step = window.at, window.lookback_hours, window.bucket_seconds
    skew = window.max_clock_skew_seconds
    inside = window_rows(rows, at, lookback)
    volume_buckets = (
        inside.withColumn("bucket", F.ceil(bucket_offset(at, step)))
        .groupBy("brokerId", "volumeName", "bucket")
        .agg(F.min("free").alias("free"), F.max_by("capacity", "snapshotAt").alias("capacity"))
    )
    limits = F.struct(*LIMIT_FIELDS)
    newest = inside.groupBy("brokerId", "volumeName").agg(
        F.max_by(limits, "snapshotAt").alias("limits")
    )
    return ReplayRows(
        broker_buckets(rows, at, lookback, step, skew),
        refused_arrivals(rows, at, lookback, step, skew),
        volume_buckets,
        newest,
        "raw rows",
    )


def _from_rollup(rollup: DataFrame, at: datetime, lookback_hours: float) -> ReplayRows:
    """The input from the rollup's hours of the window (none of whose snapshots was refused)."""
    hours = hourly_rollup.window_hours(rollup, at, lookback_hours)
    bucket = hourly_rollup.bucket_of(at)
    worst = F.struct(
        F.col("worstFree").alias("free"),
        F.col("worstCapacity").alias("capacity"),
        F.col("volumeName").alias("volumeName"),
    )
    buckets = (
        hours.groupBy("brokerId", bucket.alias("bucket"))
        .agg(
            F.max(F.unix_micros(F.col("lastAt")) / 1e6).alias("t"),
            F.min_by(worst, F.col("worstFree") / F.col("worstCapacity")).alias("worst"),
            F.min("minInForceFactor").alias("inForceFactor"),
            F.min_by("volumeName", "minInForceFactor").alias("inForceVolume"),
        )
        .select(*bucket_selection())
        .toPandas()
    )
    volume_buckets = hours.select(
        "brokerId",
        "volumeName",
        bucket.alias("bucket"),
        F.col("minFree").alias("free"),
        F.col("lastCapacity").alias("capacity"),
    )
    newest = hourly_rollup.newest_per_volume(rollup, at, lookback_hours, LIMIT_FIELDS)
    limits = newest.select("brokerId", "volumeName", F.struct(*LIMIT_FIELDS).alias("limits"))
    return ReplayRows(by_broker_and_time(buckets), {}, volume_buckets, limits, "hourly rollup")
