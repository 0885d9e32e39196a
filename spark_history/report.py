"""``history report``: one self-contained HTML page plus the tables behind it.

Why one file with embedded PNGs: operators mail it, attach it to a ticket or open it from an
artifact store, where relative links to images break. The CSV/JSON files beside it
(forecast.csv, thresholds.csv, incidents.csv, data_quality.csv, weekly_growth.csv,
balance.csv, capacity_totals.csv, backtest.csv, summary.json; with the usage dataset
topic_growth.csv and mechanism_forecast.csv)
are the same numbers for machines, and hours_to_full.prom the forecast for Prometheus.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import hourly_rollup, storage
from spark_history.balance import balance
from spark_history.broker_samples import bucket_offset, window_rows
from spark_history.clock_skew import (
    DEFAULT_MAX_SKEW_SECONDS,
    skew_per_broker,
    with_clock_skew,
)
from spark_history.data_quality import broker_quality
from spark_history.forecast.choice import one_forecast
from spark_history.forecast.spark_trend import forecast_volumes
from spark_history.forecast.trend import ForecastParams
from spark_history.incidents import incidents
from spark_history.override_history import OverrideInterval
from spark_history.prometheus import textfile
from spark_history.replay_rows import ServingRollup
from spark_history.report_capacity import capacity_panels, capacity_summary
from spark_history.report_html import ReportData, render
from spark_history.report_planning import Planning, planning, planning_summary
from spark_history.report_summary import panel_summary, report_summary
from spark_history.session import step
from spark_history.thresholds import (
    Tradeoffs,
    TuningParams,
    threshold_tradeoffs,
)
from spark_history.weekly_growth import DEFAULT_GROWTH_WEEKS, broker_hours, weekly_growth

REPORT_FILE = "report.html"
PROMETHEUS_FILE = "hours_to_full.prom"


@dataclass(frozen=True, slots=True)
class ReportFiles:
    html: str
    forecast_csv: str
    thresholds_csv: str
    balance_csv: str
    summary_json: str


def worst_first(forecast: pd.DataFrame) -> pd.DataFrame:
    """Soonest to fill first, then the fullest of those not forecast to fill."""
    return forecast.sort_values(
        ["hoursToFull", "usedPercent"], ascending=[True, False], na_position="last"
    )


def usage_series(
    rows: DataFrame,
    at: datetime,
    volumes: pd.DataFrame,
    params: ForecastParams,
    rollup: DataFrame | None = None,
) -> pd.DataFrame:
    """Per bucket of the forecast's lookback (``params``: its buckets), min/max used % and the
    latest limits (as used %) of the chosen volumes; from ``rollup`` (the hourly rollup of
    ``rows``) where its hours are those buckets (``hourly_rollup.serves``)."""
    lookback_hours, bucket_seconds = params.lookback_hours, params.bucket_seconds
    if volumes.empty:
        return pd.DataFrame()
    wanted = rows.sparkSession.createDataFrame(volumes[["brokerId", "volumeName"]])
    if rollup is not None and hourly_rollup.serves(at, lookback_hours, bucket_seconds):
        hours = hourly_rollup.window_hours(rollup, at, lookback_hours)
        hourly = hours.join(F.broadcast(wanted), ["brokerId", "volumeName"]).select(
            "brokerId",
            "volumeName",
            hourly_rollup.bucket_of(at).alias("bucket"),
            F.col("maxUsedPercent").alias("maxPercent"),
            F.col("minUsedPercent").alias("minPercent"),
            (100.0 - 100.0 * F.col("lastSoftThresholdBytes") / F.col("lastCapacity")).alias(
                "softPercent"
            ),
            (100.0 - 100.0 * F.col("lastHardThresholdBytes") / F.col("lastCapacity")).alias(
                "hardPercent"
            ),
        )
        return _series(hourly)
    offset = bucket_offset(at, bucket_seconds)
    window = window_rows(rows, at, lookback_hours * bucket_seconds / 3600.0).join(
        F.broadcast(wanted), ["brokerId", "volumeName"]
    )
    used = 100.0 * F.col("consumed") / F.col("capacity")
    hourly = window.groupBy("brokerId", "volumeName", F.ceil(offset).alias("bucket")).agg(
        F.max(used).alias("maxPercent"),
        F.min(used).alias("minPercent"),
        F.max_by(
            100.0 - 100.0 * F.col("softThresholdBytes") / F.col("capacity"), "snapshotAt"
        ).alias("softPercent"),
        F.max_by(
            100.0 - 100.0 * F.col("hardThresholdBytes") / F.col("capacity"), "snapshotAt"
        ).alias("hardPercent"),
    )
    return _series(hourly)


def _series(hourly: DataFrame) -> pd.DataFrame:
    series = hourly.toPandas()
    series["hours"] = series["bucket"].astype(float) - 0.5
    return series.sort_values(["brokerId", "volumeName", "hours"])


@dataclass(frozen=True, slots=True)
class PanelParams:
    """Settings of the planner panels that are not the forecast's or the replay's."""

    growth_weeks: int = DEFAULT_GROWTH_WEEKS
    """Weeks of growth per broker (reads one week more of history)."""
    max_clock_skew_seconds: float = DEFAULT_MAX_SKEW_SECONDS
    """A broker whose median clock skew is beyond this (either way) is flagged."""


def write_report(
    rows: DataFrame,
    at: datetime,
    output_dir: str,
    *,
    forecast_params: ForecastParams,
    tuning: TuningParams,
    max_plotted: int = 12,
    tombstones: DataFrame | None = None,
    receipts: DataFrame | None = None,
    panels: PanelParams | None = None,
    usage: DataFrame | None = None,
    overrides: Sequence[OverrideInterval] = (),
    rollup: DataFrame | None = None,
    replay_rollup: ServingRollup | None = None,
) -> ReportFiles:
    """The analyses of ``rows`` into ``output_dir`` (a URI: ``storage``); ``receipts``: Kafka
    timestamps, ``usage``: the usage dataset, ``overrides``: when an override was in force,
    ``rollup``: the hourly rollup of ``rows`` (``rollup_store.load_rollup``), which the hourly
    analyses read instead of ``rows`` where it gives the same buckets, and ``replay_rollup``
    the same checked to serve the limits' replay (``report_inputs.replay_rollup``)."""
    panels = panels or PanelParams()
    forecast, planned = _forecast(rows, usage, at, forecast_params, tombstones, rollup=rollup)
    replay = _limit_replay(rows, at, tuning, tombstones, overrides, rollup=replay_rollup)
    with step("balance"):
        skew = balance(rows, at, rollup=rollup).toPandas().sort_values(["brokerId", "volumeName"])
    plotted = forecast.head(max_plotted)
    series = _plotted_series(rows, at, plotted, forecast_params, rollup)
    growth = _weekly_growth(rows, at, panels.growth_weeks, rollup)
    with step("data quality and clock skew"):
        quality = _quality(
            replay.buckets, forecast, at, tuning=tuning, receipts=receipts, panels=panels
        )
    summary = report_summary(at, forecast, replay, skew, (forecast_params, tuning))
    window = tuning.lookback_hours
    capacity = capacity_panels(rows, at, forecast_params, window, usage=usage, rollup=rollup)
    summary |= panel_summary(quality, growth, panels.max_clock_skew_seconds)
    summary |= planning_summary(planned) | capacity_summary(capacity)
    data = ReportData(
        at=at,
        forecast=forecast,
        tradeoffs=replay.table,
        incidents=incidents(replay.in_force, replay.buckets, tuning.bucket_seconds),
        quality=quality,
        growth=growth,
        skew=skew,
        series=series,
        plotted=plotted,
        summary=summary,
        forecast_params=forecast_params,
        tuning=tuning,
        planning=planned,
        capacity=capacity,
    )
    with step("plots and files"):
        return _write_files(rows.sparkSession, output_dir, data)


def _plotted_series(
    rows: DataFrame,
    at: datetime,
    plotted: pd.DataFrame,
    params: ForecastParams,
    rollup: DataFrame | None,
) -> pd.DataFrame:
    with step("usage series of the plotted volumes"):
        return usage_series(rows, at, plotted, params, rollup)


def _weekly_growth(
    rows: DataFrame, at: datetime, weeks: int, rollup: DataFrame | None
) -> pd.DataFrame:
    with step("weekly growth per broker"):
        return weekly_growth(broker_hours(rows, at, weeks, rollup), at, weeks)


def _limit_replay(
    rows: DataFrame,
    at: datetime,
    tuning: TuningParams,
    tombstones: DataFrame | None,
    overrides: Sequence[OverrideInterval],
    *,
    rollup: ServingRollup | None,
) -> Tradeoffs:
    """The cluster replay of the limits in force and the candidates (``thresholds``)."""
    with step("cluster replay of the limits"):
        return threshold_tradeoffs(rows, at, tuning, tombstones, overrides, rollup=rollup)


def _forecast(
    rows: DataFrame,
    usage: DataFrame | None,
    at: datetime,
    forecast_params: ForecastParams,
    tombstones: DataFrame | None,
    *,
    rollup: DataFrame | None = None,
) -> tuple[pd.DataFrame, Planning]:
    """The forecast table, worst first (the mechanism's answer where the usage history has the
    volume's topics, the trend's elsewhere: ``choice``), and the topic panels."""
    with step("forecast"):
        trend = forecast_volumes(rows, at, forecast_params, tombstones, rollup).toPandas()
    with step("topics and headroom"):
        planned = planning(rows, usage, at, forecast_params, rollup)
    return worst_first(one_forecast(trend, planned.mechanism)), planned


def _quality(
    buckets: pd.DataFrame,
    forecast: pd.DataFrame,
    at: datetime,
    *,
    tuning: TuningParams,
    receipts: DataFrame | None,
    panels: PanelParams,
) -> pd.DataFrame:
    quality = broker_quality(buckets, forecast, at, tuning.policy.stale_after_seconds / 3600.0)
    skews = skew_per_broker(receipts, at, tuning.lookback_hours)
    return with_clock_skew(quality, skews, panels.max_clock_skew_seconds)


def _write_files(session: SparkSession, output_dir: str, data: ReportData) -> ReportFiles:
    files = ReportFiles(
        html=storage.join(output_dir, REPORT_FILE),
        forecast_csv=storage.join(output_dir, "forecast.csv"),
        thresholds_csv=storage.join(output_dir, "thresholds.csv"),
        balance_csv=storage.join(output_dir, "balance.csv"),
        summary_json=storage.join(output_dir, "summary.json"),
    )
    texts = {
        files.forecast_csv: data.forecast.to_csv(index=False),
        files.thresholds_csv: data.tradeoffs.to_csv(index=False),
        files.balance_csv: data.skew.to_csv(index=False),
        storage.join(output_dir, "incidents.csv"): data.incidents.to_csv(index=False),
        storage.join(output_dir, "data_quality.csv"): data.quality.to_csv(index=False),
        storage.join(output_dir, "weekly_growth.csv"): data.growth.to_csv(index=False),
        storage.join(output_dir, "capacity_totals.csv"): data.capacity.totals.table.to_csv(
            index=False
        ),
        storage.join(output_dir, "backtest.csv"): data.capacity.backtest.table.to_csv(index=False),
        **{
            storage.join(output_dir, name): frame.to_csv(index=False)
            for name, frame in (
                ("topic_growth.csv", data.planning.topics),
                ("mechanism_forecast.csv", data.planning.mechanism),
            )
            if frame is not None
        },
        storage.join(output_dir, PROMETHEUS_FILE): textfile(data.forecast, data.at.timestamp()),
        files.summary_json: json.dumps(data.summary, indent=2, default=str) + "\n",
        files.html: render(data),
    }
    for uri, text in texts.items():
        storage.write_text(session, uri, text)
    return files
