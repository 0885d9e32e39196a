"""Forecast on Spark: hourly envelope per volume in SQL, then the numpy forecast per volume.

The heavy part (millions of snapshots) is a grouped max per volume and bucket (an hour unless
``ForecastParams.bucket_seconds`` says otherwise), done by Spark's SQL engine; only the few
hundred bucket points of each volume cross to Python, in one ``applyInPandas`` call per broker
(each of its volumes in turn: ``spark_history.volume_groups``), twice: once for the band's
calibration (each volume's backtest errors, pooled on the driver), once for the forecast. See
``trend.py``.
"""

from __future__ import annotations

from datetime import datetime

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import hourly_rollup
from spark_history.broker_samples import bucket_offset, window_rows
from spark_history.forecast.envelope import (
    CALIBRATION_SCHEMA,
    FORECAST_SCHEMA,
    calibration_group,
    calibration_of,
    forecast_group,
)
from spark_history.forecast.trend import ForecastParams
from spark_history.volume_groups import each_volume


def hourly_envelope(
    rows: DataFrame,
    at: datetime,
    lookback_hours: float,
    bucket_seconds: float = 3600.0,
    rollup: DataFrame | None = None,
) -> DataFrame:
    """Per volume and bucket before ``at``: max, min, mean and last consumed, the mean sample
    time, capacity, path. Times
    (``offsetHours``, ``lastHours``, ``lookback_hours``) count buckets of ``bucket_seconds``.
    Read from ``rollup`` (``hourly_rollup``) where its hours are the buckets, else from ``rows``."""
    if rollup is not None and hourly_rollup.serves(at, lookback_hours, bucket_seconds):
        return envelope_from_rollup(rollup, at, lookback_hours)
    offset = bucket_offset(at, bucket_seconds)
    window = window_rows(rows, at, lookback_hours * bucket_seconds / 3600.0)
    window = window.withColumn("offsetHours", offset).withColumn(
        "bucket", F.ceil(offset).cast("int")
    )
    return window.groupBy("brokerId", "volumeName", "bucket").agg(
        F.max("consumed").alias("maxConsumed"),
        F.min("consumed").alias("minConsumed"),
        F.avg("consumed").alias("meanConsumed"),
        F.avg("offsetHours").alias("meanHours"),
        F.max_by("consumed", "snapshotAt").alias("lastConsumed"),
        F.max_by("capacity", "snapshotAt").alias("capacity"),
        F.max_by("path", "snapshotAt").alias("path"),
        F.max("snapshotAt").alias("lastAt"),
        F.max("offsetHours").alias("lastHours"),
    )


def envelope_from_rollup(rollup: DataFrame, at: datetime, lookback_hours: float) -> DataFrame:
    """:func:`hourly_envelope`'s columns from the rollup's hours of the window (1 h buckets,
    ``at`` on a whole hour: ``hourly_rollup.serves``)."""
    hours = hourly_rollup.window_hours(rollup, at, lookback_hours)
    mean_time = hourly_rollup.mean_epoch_seconds()
    return hours.select(
        "brokerId",
        "volumeName",
        hourly_rollup.bucket_of(at).cast("int").alias("bucket"),
        "maxConsumed",
        "minConsumed",
        hourly_rollup.mean_consumed().alias("meanConsumed"),
        ((mean_time - F.lit(at.timestamp())) / F.lit(3600.0)).alias("meanHours"),
        "lastConsumed",
        F.col("lastCapacity").alias("capacity"),
        F.col("lastPath").alias("path"),
        "lastAt",
        hourly_rollup.offset_hours(F.col("lastAt"), at).alias("lastHours"),
    )


def with_retirements(
    hourly: DataFrame,
    tombstones: DataFrame | None,
    at: datetime,
    bucket_seconds: float = 3600.0,
    lookback_hours: float | None = None,
) -> DataFrame:
    """Add ``retiredHours``: each broker's newest tombstone before ``at`` (buckets from ``at``),
    within the lookback (``lookback_hours`` buckets: an older one precedes every sample)."""
    if tombstones is None:
        return hourly.withColumn("retiredHours", F.lit(None).cast("double"))
    offset = bucket_offset(at, bucket_seconds)
    window = None if lookback_hours is None else lookback_hours * bucket_seconds / 3600.0
    latest = (
        window_rows(tombstones, at, window)
        .groupBy("brokerId")
        .agg(F.max(offset).alias("retiredHours"))
    )
    return hourly.join(F.broadcast(latest), "brokerId", "left")


def sampled_volumes(frame: DataFrame, volumes: int) -> DataFrame:
    """The keys of at most ``volumes`` of the volumes of ``frame``: the first in the order of a
    hash of their key, so the same volumes from run to run while the fleet keeps them. The
    choice does not depend on the volumes' data, so their backtest errors are a fair draw of
    the fleet's (what split conformal asks of a calibration set), and their quantiles are as
    good as the sample is large, whatever the fleet's size."""
    key = ["brokerId", "volumeName"]
    return frame.select(*key).distinct().orderBy(F.xxhash64(*key), *key).limit(volumes)


def calibration_sample(frame: DataFrame, volumes: int) -> DataFrame:
    """The rows of ``frame`` of its :func:`sampled_volumes`."""
    chosen = F.broadcast(sampled_volumes(frame, volumes))
    return frame.join(chosen, ["brokerId", "volumeName"], "left_semi")


def forecast_volumes(
    rows: DataFrame,
    at: datetime,
    params: ForecastParams | None = None,
    tombstones: DataFrame | None = None,
    rollup: DataFrame | None = None,
) -> DataFrame:
    """One forecast row per volume seen in the lookback window before ``at``.

    ``tombstones`` (``brokerId``, ``snapshotAt``: when the broker's tombstone was read) mark
    brokers that left; their volumes are flagged ``retired`` and not forecast. ``rollup``: the
    hourly rollup of ``rows``, read instead of them where it can be (:func:`hourly_envelope`).
    """
    params = params or ForecastParams()
    hourly = with_retirements(
        hourly_envelope(rows, at, params.lookback_hours, params.bucket_seconds, rollup),
        tombstones,
        at,
        params.bucket_seconds,
        params.lookback_hours,
    )

    def volume_samples(frame: pd.DataFrame) -> pd.DataFrame:
        return calibration_group(frame, params)

    # The band's calibration: the backtest errors of a sample of the volumes, pooled on the
    # driver (a few dozen numbers per volume), then given to every volume's forecast.
    samples = (
        calibration_sample(hourly, params.calibration_volumes)
        .groupBy("brokerId")
        .applyInPandas(each_volume(volume_samples), CALIBRATION_SCHEMA)
    )
    calibration = calibration_of(samples.toPandas(), params)

    def per_volume(frame: pd.DataFrame) -> pd.DataFrame:
        return forecast_group(frame, params, calibration)

    return hourly.groupBy("brokerId").applyInPandas(each_volume(per_volume), FORECAST_SCHEMA)
