"""The mechanism forecast on Spark: per volume, from the usage dataset and the snapshots.

For an origin ``at`` and the forecast's lookback: the ``topic`` and ``other`` rows of the usage
dataset in the window, each topic joined with its newest ``config`` row read at or before
``at`` (configs are cluster-wide: whichever broker published them), and each volume with its
newest snapshot in the window (capacity, consumed, the hard threshold). One
``applyInPandas`` call per broker runs the pure projection (``spark_history.forecast.mechanism``,
via ``spark_history.forecast.mechanism.usage_frame``) on each of its volumes
(``spark_history.volume_groups``). Only volumes with usage rows in the window get a row.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.broker_samples import window_rows
from spark_history.forecast.backtest.mechanism_forecaster import (
    mechanism_calibration_group,
    with_own_configs,
)
from spark_history.forecast.backtest.spark_buckets import (
    config_changes,
    newest_values,
    usage_buckets,
)
from spark_history.forecast.conformal_bands import Calibration
from spark_history.forecast.envelope import CALIBRATION_SCHEMA, calibration_of
from spark_history.forecast.mechanism.usage_frame import MECHANISM_SCHEMA, mechanism_group
from spark_history.forecast.spark_trend import hourly_envelope, sampled_volumes
from spark_history.forecast.trend import ForecastParams, Trend, trend_class
from spark_history.hourly_rollup import newest_per_volume, serves
from spark_history.usage_documents import CONFIG, CONFIG_VALUE_COLUMNS, TOPIC
from spark_history.volume_groups import each_volume, each_volume_pair


def load_usage(session: SparkSession, uri: str) -> DataFrame:
    """The usage dataset written by ``history ingest --usage-output``."""
    return session.read.parquet(uri)


def _usage_window(usage: DataFrame, at: datetime, lookback_seconds: float) -> DataFrame:
    start = at - timedelta(seconds=lookback_seconds)
    window = usage.where((F.col("surveyedAt") <= F.lit(at)) & (F.col("surveyedAt") > F.lit(start)))
    if "date" in usage.columns:
        window = window.where(
            F.col("date").between(
                F.lit(start.astimezone(UTC).date()), F.lit(at.astimezone(UTC).date())
            )
        )
    return window


def newest_configs(usage: DataFrame, at: datetime) -> DataFrame:
    """Per topic, the values of its newest ``config`` row read at or before ``at``."""
    configs = usage.where((F.col("kind") == CONFIG) & (F.col("configReadAt") <= F.lit(at)))
    return configs.groupBy("topic").agg(*newest_values(CONFIG_VALUE_COLUMNS, "configReadAt"))


NEWEST_SNAPSHOT_COLUMNS: tuple[str, ...] = ("capacity", "consumed", "hardThresholdBytes")


def newest_snapshots(
    snapshots: DataFrame, at: datetime, lookback_hours: float, rollup: DataFrame | None = None
) -> DataFrame:
    """Per volume, capacity, consumed and the hard threshold of its newest snapshot; from
    ``rollup`` (the hourly rollup of ``snapshots``) where it serves the window."""
    if rollup is not None and serves(at, lookback_hours):
        newest = newest_per_volume(rollup, at, lookback_hours, NEWEST_SNAPSHOT_COLUMNS)
        return newest.drop("snapshotAt")
    window = window_rows(snapshots, at, lookback_hours)
    return window.groupBy("brokerId", "volumeName").agg(
        *[F.max_by(name, "snapshotAt").alias(name) for name in NEWEST_SNAPSHOT_COLUMNS]
    )


def rolled_up_window(usage: DataFrame, at: datetime, params: ForecastParams) -> DataFrame:
    """The ``topic`` and ``other`` rows of the lookback window, each topic's newest survey per
    bucket (``spark_buckets.usage_buckets``)."""
    window = _usage_window(usage, at, params.lookback_hours * params.bucket_seconds)
    volume_rows, _ = usage_buckets(window, params.bucket_seconds, at)
    return volume_rows


def volume_trends(hourly: DataFrame, params: ForecastParams) -> DataFrame:
    """Per volume of the hourly envelope ``hourly``, its trend at ``at`` (``trendClass``:
    growing, flat, shrinking; null without enough data), as the trend forecast classes it
    (``trend.trend_class`` on the bucket means): the class of the mechanism's band."""

    def per_volume(envelope: pd.DataFrame) -> pd.DataFrame:
        trend = trend_class(
            envelope["meanHours"].to_numpy(dtype=np.float64),
            envelope["meanConsumed"].to_numpy(dtype=np.float64),
            params,
        )
        first = envelope.iloc[0]
        return pd.DataFrame(
            {
                "brokerId": [int(first["brokerId"])],
                "volumeName": [str(first["volumeName"])],
                "trendClass": [None if trend is None else trend.value],
            }
        )

    schema = "brokerId int, volumeName string, trendClass string"
    return hourly.groupBy("brokerId").applyInPandas(each_volume(per_volume), schema)


KEYED_CALIBRATION_SCHEMA = f"brokerId int, volumeName string, {CALIBRATION_SCHEMA}"
"""A backtest error of the mechanism, and the volume it was measured on."""


def mechanism_calibration_samples(
    usage: DataFrame,
    snapshots: DataFrame,
    at: datetime,
    params: ForecastParams,
    rollup: DataFrame | None = None,
    *,
    volume_rows: DataFrame | None = None,
    hourly: DataFrame | None = None,
) -> DataFrame:
    """The backtest errors that calibrate the mechanism's band (:data:`KEYED_CALIBRATION_SCHEMA`),
    as the trend's are measured: the mechanism forecast of a sample of the volumes with usage
    (``spark_trend.sampled_volumes``) at past origins of the lookback window, scored against
    its hourly envelope (``mechanism_forecaster.mechanism_calibration_group``). The usage is
    rolled up to the buckets first (``spark_buckets.usage_buckets``), and the configs to their
    changes, of which every volume's group receives its own topics'; the envelope comes from
    ``rollup`` (the hourly rollup of ``snapshots``) where it can
    (``spark_trend.hourly_envelope``); ``volume_rows``: :func:`rolled_up_window`, when the
    caller has it, and ``hourly`` the envelope."""
    if volume_rows is None:
        volume_rows = rolled_up_window(usage, at, params)
    _, config_rows = usage_buckets(usage, params.bucket_seconds, at)
    configs = config_changes(config_rows).toPandas()
    if hourly is None:
        hourly = _envelope(snapshots, at, params, rollup)
    zero = at.timestamp()

    def per_volume(
        volume: tuple[int, str], envelope: pd.DataFrame, rows: pd.DataFrame
    ) -> pd.DataFrame:
        usage_rows = with_own_configs(rows, configs) if len(rows) else rows
        errors = mechanism_calibration_group(envelope, usage_rows, params, zero)
        return errors.assign(brokerId=volume[0], volumeName=volume[1])

    key = ["brokerId", "volumeName"]
    # The sample is drawn from the volumes with usage: the others calibrate nothing.
    chosen = F.broadcast(sampled_volumes(volume_rows, params.calibration_volumes))
    return (
        hourly.join(chosen, key, "left_semi")
        .groupBy("brokerId")
        .cogroup(volume_rows.join(chosen, key, "left_semi").groupBy("brokerId"))
        .applyInPandas(each_volume_pair(per_volume), KEYED_CALIBRATION_SCHEMA)
    )


def mechanism_calibration(
    usage: DataFrame,
    snapshots: DataFrame,
    at: datetime,
    params: ForecastParams,
    rollup: DataFrame | None = None,
    *,
    volume_rows: DataFrame | None = None,
    hourly: DataFrame | None = None,
) -> Calibration:
    """The calibration of the mechanism's band: :func:`mechanism_calibration_samples` pooled
    on the driver."""
    samples = mechanism_calibration_samples(
        usage, snapshots, at, params, rollup, volume_rows=volume_rows, hourly=hourly
    )
    return calibration_of(samples.toPandas(), params)


def mechanism_volumes(
    usage: DataFrame,
    snapshots: DataFrame,
    at: datetime,
    params: ForecastParams | None = None,
    rollup: DataFrame | None = None,
) -> DataFrame:
    """One mechanism forecast row per volume with usage rows in the lookback window before
    ``at`` (``spark_history.forecast.mechanism.usage_frame.MECHANISM_SCHEMA``), its fill time
    banded by :func:`mechanism_calibration`.

    The window's usage is rolled up to the buckets first (``spark_buckets.usage_buckets``: each
    topic's newest survey per bucket), as the calibration and the backtest read it: the write
    rates are Theil-Sen slopes, whose cost grows with the square of the points, and a survey a
    minute gives 60 points an hour that say no more about a rate over 72 h than one does."""
    params = params or ForecastParams()
    # Read once for the calibration and the forecast: the window's usage is the report's
    # largest read, and rolled up it is a row per topic and bucket.
    volumes = rolled_up_window(usage, at, params).cache()
    # Read for the calibration and for each volume's trend, the class of its band.
    hourly = _envelope(snapshots, at, params, rollup).cache()
    calibration = mechanism_calibration(
        usage, snapshots, at, params, rollup, volume_rows=volumes, hourly=hourly
    )
    lookback_seconds = params.lookback_hours * params.bucket_seconds
    horizon_hours, bucket_seconds = params.horizon_hours, params.bucket_seconds
    rate_window_hours = params.fit_hours
    key = ["brokerId", "volumeName"]
    joined = (
        volumes.join(F.broadcast(newest_configs(usage, at)), "topic", "left")
        .join(newest_snapshots(snapshots, at, lookback_seconds / 3600.0, rollup), key, "left")
        .join(volume_trends(hourly, params), key, "left")
    )
    origin = pd.Timestamp(at).tz_convert("UTC")

    def per_volume(frame: pd.DataFrame) -> pd.DataFrame:
        trend = frame["trendClass"].iloc[0]
        return mechanism_group(
            frame,
            origin,
            horizon_hours,
            bucket_seconds,
            rate_window_hours,
            calibration=calibration,
            trend=None if pd.isna(trend) else Trend(trend),
        )

    return joined.groupBy("brokerId").applyInPandas(each_volume(per_volume), MECHANISM_SCHEMA)


def _envelope(
    snapshots: DataFrame, at: datetime, params: ForecastParams, rollup: DataFrame | None
) -> DataFrame:
    return hourly_envelope(snapshots, at, params.lookback_hours, params.bucket_seconds, rollup)


def topic_series(usage: DataFrame, at: datetime, days: float = 7.0) -> pd.DataFrame:
    """Per (broker, volume, topic) named in the ``days`` before ``at``: its bytes at its first
    and at its last survey there (``spark_history.fleet_planning.topic_growth`` sums them)."""
    window = _usage_window(usage, at, days * 86400.0).where(F.col("kind") == TOPIC)
    return (
        window.groupBy("brokerId", "volumeName", "topic")
        .agg(
            F.min_by("bytes", "surveyedAt").alias("firstBytes"),
            F.max_by("bytes", "surveyedAt").alias("lastBytes"),
        )
        .toPandas()
    )
