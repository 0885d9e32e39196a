"""Forecast on Spark: hourly envelope per volume in SQL, then the numpy forecast per volume.

The heavy part (millions of snapshots) is a grouped max per volume and hour, done by Spark's
SQL engine; only the few hundred hourly points of each volume cross to Python, in one
``applyInPandas`` call per volume. See ``envelope_forecast.py`` for the method.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.envelope_forecast import ForecastParams
from spark_history.forecast_frame import FORECAST_SCHEMA, forecast_group


def hourly_envelope(rows: DataFrame, at: datetime, lookback_hours: float) -> DataFrame:
    """Per volume and hour bucket before ``at``: max and last consumed, capacity, path."""
    at_epoch = at.timestamp()
    offset_hours = (F.unix_micros(F.col("snapshotAt")) / 1e6 - F.lit(at_epoch)) / 3600.0
    window = rows.where(
        (F.col("snapshotAt") <= F.lit(at)) & (offset_hours > -float(lookback_hours))
    )
    if "date" in rows.columns:
        # Lets Spark skip whole date partitions of the dataset outside the window.
        first_day = (at - timedelta(hours=lookback_hours)).astimezone(UTC).date()
        window = window.where(
            F.col("date").between(F.lit(first_day), F.lit(at.astimezone(UTC).date()))
        )
    window = window.withColumn("offsetHours", offset_hours).withColumn(
        "bucket", F.ceil(offset_hours).cast("int")
    )
    return window.groupBy("brokerId", "volumeName", "bucket").agg(
        F.max("consumed").alias("maxConsumed"),
        F.min("consumed").alias("minConsumed"),
        F.max_by("consumed", "snapshotAt").alias("lastConsumed"),
        F.max_by("capacity", "snapshotAt").alias("capacity"),
        F.max_by("path", "snapshotAt").alias("path"),
        F.max("snapshotAt").alias("lastAt"),
        F.max("offsetHours").alias("lastHours"),
    )


def with_retirements(hourly: DataFrame, tombstones: DataFrame | None, at: datetime) -> DataFrame:
    """Add ``retiredHours``: each broker's newest tombstone before ``at`` (hours from ``at``)."""
    if tombstones is None:
        return hourly.withColumn("retiredHours", F.lit(None).cast("double"))
    offset = (F.unix_micros(F.col("snapshotAt")) / 1e6 - F.lit(at.timestamp())) / 3600.0
    latest = (
        tombstones.where(F.col("snapshotAt") <= F.lit(at))
        .groupBy("brokerId")
        .agg(F.max(offset).alias("retiredHours"))
    )
    return hourly.join(F.broadcast(latest), "brokerId", "left")


def forecast_volumes(
    rows: DataFrame,
    at: datetime,
    params: ForecastParams | None = None,
    tombstones: DataFrame | None = None,
) -> DataFrame:
    """One forecast row per volume seen in the lookback window before ``at``.

    ``tombstones`` (``brokerId``, ``snapshotAt``: when the broker's tombstone was read) mark
    brokers that left; their volumes are flagged ``retired`` and not forecast.
    """
    params = params or ForecastParams()
    hourly = with_retirements(hourly_envelope(rows, at, params.lookback_hours), tombstones, at)

    def per_volume(frame: pd.DataFrame) -> pd.DataFrame:
        return forecast_group(frame, params)

    return hourly.groupBy("brokerId", "volumeName").applyInPandas(per_volume, FORECAST_SCHEMA)
