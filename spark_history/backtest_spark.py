"""The backtest's thin Spark shell: cut the snapshot rows into buckets per volume.

Spark does the only heavy part (a grouped aggregate per volume and bucket over millions of
snapshots); the few hundred buckets of each volume then go to the pure core
(``backtest.py``) as one :class:`~spark_history.backtest.BucketSeries` each, bucketed exactly
as :func:`~spark_history.backtest.bucket_series` buckets raw samples.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.backtest import BucketSeries

BUCKET_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "volumeName",
    "bucket",
    "maxConsumed",
    "meanConsumed",
    "minConsumed",
    "meanTime",
    "capacity",
    "hardThresholdBytes",
)


def bucket_rows(rows: DataFrame, bucket_seconds: float, until: datetime | None) -> DataFrame:
    """Per volume and bucket ``ceil(epoch seconds / bucket_seconds)``: max, mean and min of
    consumed bytes, the mean sample time (in buckets), the newest capacity and hard
    threshold. Rows after ``until`` are left out."""
    if until is not None:
        rows = rows.where(F.col("snapshotAt") <= F.lit(until))
    times = (F.unix_micros(F.col("snapshotAt")) / 1e6) / F.lit(float(bucket_seconds))
    bucketed = rows.withColumn("time", times).withColumn("bucket", F.ceil("time").cast("long"))
    return bucketed.groupBy("brokerId", "volumeName", "bucket").agg(
        F.max("consumed").cast("double").alias("maxConsumed"),
        F.avg("consumed").alias("meanConsumed"),
        F.min("consumed").cast("double").alias("minConsumed"),
        F.avg("time").alias("meanTime"),
        F.max_by("capacity", "snapshotAt").cast("double").alias("capacity"),
        F.max_by("hardThresholdBytes", "snapshotAt").cast("double").alias("hardThresholdBytes"),
    )


def series_by_volume(buckets: pd.DataFrame) -> list[tuple[int, str, BucketSeries]]:
    """(broker, volume, series) for every volume of a collected :func:`bucket_rows` frame,
    ordered by broker and volume."""
    result = []
    for _, group in buckets.groupby(["brokerId", "volumeName"], sort=True):
        ordered = group.sort_values("bucket")
        broker, volume = ordered["brokerId"].iloc[0], ordered["volumeName"].iloc[0]
        capacity = ordered["capacity"].to_numpy(dtype=np.float64)
        hard = np.nan_to_num(ordered["hardThresholdBytes"].to_numpy(dtype=np.float64), nan=0.0)
        series = BucketSeries(
            index=ordered["bucket"].to_numpy(dtype=np.int64),
            maxima=ordered["maxConsumed"].to_numpy(dtype=np.float64),
            means=ordered["meanConsumed"].to_numpy(dtype=np.float64),
            minima=ordered["minConsumed"].to_numpy(dtype=np.float64),
            capacity=capacity,
            limit=capacity - hard,
            mean_times=ordered["meanTime"].to_numpy(dtype=np.float64),
        )
        result.append((int(broker), str(volume), series))
    return result
