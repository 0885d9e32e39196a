"""The backtest's thin Spark shell: cut the snapshot rows into buckets per volume.

Spark does the only heavy part (a grouped aggregate per volume and bucket over millions of
snapshots); the few hundred buckets of each volume then go to the pure core
(``rolling_origin``) as one :class:`~spark_history.forecast.backtest.rolling_origin.BucketSeries`
each, bucketed exactly as :func:`~spark_history.forecast.backtest.rolling_origin.bucket_series`
buckets raw samples.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.forecast.backtest.mechanism_forecaster import with_own_configs
from spark_history.forecast.backtest.rolling_origin import BucketSeries
from spark_history.forecast.backtest.volume_forecasters import UsageHistory
from spark_history.usage_documents import CONFIG, CONFIG_VALUE_COLUMNS, OTHER, TOPIC

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


USAGE_VALUE_COLUMNS: tuple[str, ...] = (
    "surveyedAt",
    "bytes",
    "partitions",
    "activeSegmentBytes",
    "transientBytes",
    "unattributedBytes",
)
"""What the mechanism forecast reads of a ``topic`` or ``other`` usage row."""


def _bucket_of(column: str, bucket_seconds: float) -> Column:
    return F.ceil(F.unix_micros(F.col(column)) / 1e6 / F.lit(float(bucket_seconds))).cast("long")


def usage_buckets(
    usage: DataFrame,
    bucket_seconds: float,
    until: datetime | None,
    volumes: DataFrame | None = None,
) -> tuple[DataFrame, DataFrame]:
    """The usage dataset rolled up to the backtest's buckets, for the mechanism forecaster:
    per volume, kind, topic and bucket the newest survey's row; per topic and bucket the newest
    config read. A bucket's newest survey is what the forecast at the bucket's end would see
    last, and the rates read a point per bucket (one a minute would only cost time).
    ``volumes`` (``brokerId``, ``volumeName``): only their surveys, chosen before the
    aggregation, so that only their rows are shuffled."""
    surveys = usage.where(F.col("kind").isin(TOPIC, OTHER))
    if volumes is not None:
        surveys = surveys.join(F.broadcast(volumes), ["brokerId", "volumeName"], "left_semi")
    configs = usage.where(F.col("kind") == CONFIG)
    if until is not None:
        surveys = surveys.where(F.col("surveyedAt") <= F.lit(until))
        configs = configs.where(F.col("configReadAt") <= F.lit(until))
    volume_rows = (
        surveys.withColumn("bucket", _bucket_of("surveyedAt", bucket_seconds))
        .groupBy("brokerId", "volumeName", "kind", "topic", "bucket")
        .agg(*newest_values(USAGE_VALUE_COLUMNS, "surveyedAt"))
        .drop("bucket")
    )
    config_rows = (
        configs.withColumn("bucket", _bucket_of("configReadAt", bucket_seconds))
        .groupBy("topic", "bucket")
        .agg(*newest_values(CONFIG_VALUE_COLUMNS, "configReadAt"))
        .select(F.lit(CONFIG).alias("kind"), "topic", "configReadAt", *CONFIG_VALUE_COLUMNS)
    )
    return volume_rows, config_rows


def newest_values(columns: tuple[str, ...], order: str) -> list[Column]:
    """Aggregates giving each of ``columns`` at the group's newest ``order``, and ``order``'s
    maximum itself: one ``max_by`` per column, not one of a struct. Every column's ``max_by``
    picks its row by the same comparison of ``order``, so they all come from one row, and
    with fixed-width values Spark hash-aggregates them; a struct's ``max_by`` sorts every row
    (``SortAggregate``), three times slower on the usage dataset."""
    return [
        F.max(order).alias(order),
        *(F.max_by(name, order).alias(name) for name in columns if name != order),
    ]


def config_changes(configs: DataFrame) -> DataFrame:
    """The ``config`` rows whose values differ from the topic's previous read (and each topic's
    first): what the topic's configs were at any instant, in a few rows."""
    values = F.struct(*CONFIG_VALUE_COLUMNS)
    previous = F.lag(values).over(Window.partitionBy("topic").orderBy("configReadAt"))
    return (
        configs.withColumn("previous", previous)
        .where(F.col("previous").isNull() | ~F.col("previous").eqNullSafe(values))
        .drop("previous")
    )


def usage_by_volume(
    volume_rows: pd.DataFrame, config_rows: pd.DataFrame
) -> dict[tuple[int, str], pd.DataFrame]:
    """Per (broker, volume) of collected :func:`usage_buckets` frames: its rows and the config
    rows of its topics, as ``mechanism_forecaster`` reads them."""
    result = {}
    for _, rows in volume_rows.groupby(["brokerId", "volumeName"], sort=True):
        key = (int(rows["brokerId"].iloc[0]), str(rows["volumeName"].iloc[0]))
        result[key] = with_own_configs(rows, config_rows)
    return result


def usage_history(
    usage: DataFrame,
    bucket_seconds: float,
    until: datetime | None,
    volumes: DataFrame | None = None,
    since: datetime | None = None,
) -> UsageHistory:
    """The usage dataset rolled up to the buckets (:func:`usage_buckets`) and collected, of
    every volume or only of ``volumes`` (``brokerId``, ``volumeName``), surveys after
    ``since`` only (configs of any age: a retention read long ago still holds)."""
    if since is not None:
        usage = usage.where((F.col("kind") == CONFIG) | (F.col("surveyedAt") > F.lit(since)))
    volume_rows, config_rows = usage_buckets(usage, bucket_seconds, until, volumes)
    configs = config_changes(config_rows).toPandas()
    return UsageHistory(usage_by_volume(volume_rows.toPandas(), configs), configs, bucket_seconds)
