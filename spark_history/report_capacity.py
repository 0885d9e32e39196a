"""The report's capacity panels: fleet and per-broker totals with the dates they cross 70, 80
and 90 % (``capacity_crossings``), and the backtest of the forecast against predict_linear on
the report's own history (``rolling_origin``).

Spark reads only the window of each (date partitions pruned, ``broker_samples.window_rows``)
and reduces it to one row per volume and bucket; the rest is the pure cores'.

Totals are per dataset (one cluster's snapshot topic) and per broker: cluster and rack totals
would need a cluster name and a rack per broker, which the snapshots do not carry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import hourly_rollup
from spark_history.broker_samples import bucket_offset, window_rows
from spark_history.capacity_crossings import (
    BROKER_HOUR_COLUMNS,
    FLEET,
    crossing_table,
    fleet_sentence,
    group_hours,
)
from spark_history.forecast.backtest.rolling_origin import (
    DEFAULT_HORIZONS_HOURS,
    BacktestConfig,
    SummaryRow,
    score_series,
    summarize,
)
from spark_history.forecast.backtest.spark_buckets import (
    bucket_rows,
    series_by_volume,
    usage_history,
)
from spark_history.forecast.backtest.volume_forecasters import volume_forecasters
from spark_history.forecast.trend import ForecastParams
from spark_history.session import step

NO_RACK_NOR_CLUSTER = (
    "Cluster and rack totals need a cluster name and a rack per broker, which the snapshots "
    "do not carry: a dataset is one cluster's snapshot topic, so its fleet total is the "
    "cluster's."
)
BACKTEST_MAX_BUCKETS = 30 * 24
"""The backtest reads at most this many buckets before ``at`` (30 days of hours)."""
BACKTEST_MAX_VOLUMES = 200
"""Volumes scored at most: beyond, a fixed sample (by a hash of broker and volume)."""
BACKTEST_MAX_ORIGINS = 8
"""Origins per volume at most: the report's backtest is a glance, ``history backtest`` the
full run."""
BACKTEST_WARMUP = 24.0
BACKTEST_HORIZON = 7 * 24.0
FORECASTER_NAMES = {
    "forecast": "the forecast",
    "linear-6h": "predict_linear 6 h",
    "linear-72h": "predict_linear 72 h",
    "mechanism": "the mechanism",
}


@dataclass(frozen=True, slots=True)
class CapacityTotals:
    table: pd.DataFrame
    """``capacity_crossings.crossing_table``: the fleet first, then the brokers."""
    fleet_hours: pd.DataFrame
    """The fleet's totals per bucket (``bucket``, ``consumed``, ``capacity``)."""
    sentence: str


def broker_hours(
    rows: DataFrame, at: datetime, params: ForecastParams, rollup: DataFrame | None = None
) -> pd.DataFrame:
    """Spark: per broker and bucket of the forecast's lookback, the sum over its volumes of each
    one's newest consumed and capacity bytes (``capacity_crossings.BROKER_HOUR_COLUMNS``): a
    row per broker and hour reaches the driver, not one per volume. From ``rollup`` (the
    hourly rollup of ``rows``) where its hours are the buckets (``hourly_rollup.serves``)."""
    lookback = params.lookback_hours * params.bucket_seconds / 3600.0
    if rollup is not None and hourly_rollup.serves(at, lookback, params.bucket_seconds):
        newest = hourly_rollup.window_hours(rollup, at, lookback).select(
            "brokerId",
            "volumeName",
            hourly_rollup.bucket_of(at).alias("bucket"),
            F.col("lastConsumed").cast("double").alias("consumed"),
            F.col("lastCapacity").cast("double").alias("capacity"),
        )
    else:
        window = window_rows(rows, at, lookback).where(F.col("volumeName").isNotNull())
        bucket = F.ceil(bucket_offset(at, params.bucket_seconds)).cast("long")
        newest = window.groupBy("brokerId", "volumeName", bucket.alias("bucket")).agg(
            F.max_by("consumed", "snapshotAt").cast("double").alias("consumed"),
            F.max_by("capacity", "snapshotAt").cast("double").alias("capacity"),
        )
    totals = newest.groupBy("brokerId", "bucket").agg(
        F.sum("consumed").alias("consumed"), F.sum("capacity").alias("capacity")
    )
    return totals.toPandas()[list(BROKER_HOUR_COLUMNS)]


def capacity_totals(
    rows: DataFrame, at: datetime, params: ForecastParams, rollup: DataFrame | None = None
) -> CapacityTotals:
    hours = broker_hours(rows, at, params, rollup)
    table = crossing_table(hours, at, params)
    totals = group_hours(hours, params)
    fleet = totals[totals["group"] == FLEET][["bucket", "consumed", "capacity"]]
    return CapacityTotals(table, fleet.reset_index(drop=True), fleet_sentence(table, params))


@dataclass(frozen=True, slots=True)
class BacktestPanel:
    table: pd.DataFrame
    """One row per forecaster and horizon (``BACKTEST_COLUMNS``)."""
    volumes: int
    """Volumes scored."""
    sentence: str
    volumes_in_window: int = 0
    """Volumes with snapshots in the window (more than ``volumes`` when sampled)."""


BACKTEST_COLUMNS: tuple[str, ...] = (
    "forecaster",
    "horizonHours",
    "origins",
    "crossings",
    "misses",
    "falseFills",
    "unscored",
    "errorP50Percent",
    "errorP90Percent",
    "bands",
    "bandsCovering",
    "bandsOpen",
    "bandCoverage",
)


def backtest_config(window_buckets: float) -> BacktestConfig | None:
    """The backtest command's horizons that the window can score, at most
    :data:`BACKTEST_MAX_ORIGINS` origins per volume; None when no horizon fits."""
    room = math.floor(window_buckets - BACKTEST_WARMUP)
    horizons = tuple(h for h in DEFAULT_HORIZONS_HOURS if h < room)
    if not horizons:
        return None
    step = max(6.0, float(math.ceil(room / BACKTEST_MAX_ORIGINS)))
    return BacktestConfig(
        origin_step_hours=step,
        warmup_hours=BACKTEST_WARMUP,
        horizon_hours=BACKTEST_HORIZON,
        horizons_hours=horizons,
    )


def backtest_panel(
    rows: DataFrame,
    at: datetime,
    window_hours: float,
    bucket_seconds: float,
    *,
    usage: DataFrame | None = None,
    rollup: DataFrame | None = None,
) -> BacktestPanel:
    """Spark buckets the last ``window_hours`` (at most :data:`BACKTEST_MAX_BUCKETS`), from
    ``rollup`` (the hourly rollup of ``rows``) where its hours are the buckets
    (``hourly_rollup.serves``); the backtest core scores linear-6h, linear-72h, the forecast and
    with the ``usage`` dataset the mechanism (bands cross-fitted: ``volume_forecasters``) at a
    few rolling origins of every volume."""
    buckets = min(window_hours * 3600.0 / bucket_seconds, float(BACKTEST_MAX_BUCKETS))
    config = backtest_config(buckets)
    if config is None:
        return _empty_backtest(0, f"The window ({buckets:g} buckets) is too short to backtest.")
    lookback = buckets * bucket_seconds / 3600.0
    if rollup is not None and hourly_rollup.serves(at, lookback, bucket_seconds):
        window, in_window = _sampled(hourly_rollup.window_hours(rollup, at, lookback))
        bucketed = _rollup_buckets(window)
    else:
        window = window_rows(rows, at, lookback)
        window, in_window = _sampled(window.where(F.col("volumeName").isNotNull()))
        bucketed = bucket_rows(window, bucket_seconds, at)
    volumes = series_by_volume(bucketed.toPandas())
    history = None
    if usage is not None:
        keys = window.select("brokerId", "volumeName").distinct()
        since = at - timedelta(hours=lookback)
        history = usage_history(usage, bucket_seconds, at, keys, since)
    scores = []
    for (_, _, one), forecasters in zip(
        volumes, volume_forecasters(volumes, config, history), strict=True
    ):
        scores += score_series(one, forecasters, config)
    summary = summarize(scores)
    if not summary:
        return _empty_backtest(len(volumes), "No volume has enough history to backtest.")
    return BacktestPanel(
        _backtest_frame(summary), len(volumes), backtest_sentence(summary), in_window
    )


def _rollup_buckets(hours: DataFrame) -> DataFrame:
    """``backtest_spark.bucket_rows``' columns (1 h buckets) from the rollup's merged hours."""
    return hours.select(
        "brokerId",
        "volumeName",
        (F.unix_seconds(F.col("hourEnd")) / F.lit(3600)).cast("long").alias("bucket"),
        F.col("maxConsumed").cast("double").alias("maxConsumed"),
        hourly_rollup.mean_consumed().alias("meanConsumed"),
        F.col("minConsumed").cast("double").alias("minConsumed"),
        (hourly_rollup.mean_epoch_seconds() / F.lit(3600.0)).alias("meanTime"),
        F.col("lastCapacity").cast("double").alias("capacity"),
        F.col("lastHardThresholdBytes").cast("double").alias("hardThresholdBytes"),
    )


def _sampled(window: DataFrame) -> tuple[DataFrame, int]:
    """The rows of at most :data:`BACKTEST_MAX_VOLUMES` volumes (those with the smallest hash
    of broker and volume: the same sample every run), and the number of volumes."""
    keys = window.select("brokerId", "volumeName").distinct().toPandas()
    if len(keys) <= BACKTEST_MAX_VOLUMES:
        return window, len(keys)
    order = pd.util.hash_pandas_object(keys, index=False).sort_values(kind="stable").index
    chosen = keys.loc[order[:BACKTEST_MAX_VOLUMES]]
    sample = window.sparkSession.createDataFrame(chosen)
    return window.join(F.broadcast(sample), ["brokerId", "volumeName"]), len(keys)


def _empty_backtest(volumes: int, sentence: str) -> BacktestPanel:
    return BacktestPanel(pd.DataFrame(columns=list(BACKTEST_COLUMNS)), volumes, sentence)


def _backtest_frame(summary: list[SummaryRow]) -> pd.DataFrame:
    records = [
        (
            row.forecaster,
            row.horizon_hours,
            row.origins,
            row.crossings,
            row.misses,
            row.false_fills,
            row.unscored,
            row.error_p50_percent,
            row.error_p90_percent,
            row.banded,
            row.covered,
            row.open_bands,
            row.coverage,
        )
        for row in summary
    ]
    return pd.DataFrame.from_records(records, columns=list(BACKTEST_COLUMNS))


def backtest_sentence(summary: list[SummaryRow]) -> str:
    """Which forecaster does better: the fewest wrong calls (misses plus false fills, every
    horizon together), then the smallest mean of the horizons' median errors; and how often
    the forecast's and the mechanism's bands covered."""
    wrong: dict[str, int] = {}
    errors: dict[str, list[float]] = {}
    for row in summary:
        wrong[row.forecaster] = wrong.get(row.forecaster, 0) + row.misses + row.false_fills
        if row.error_p50_percent is not None:
            errors.setdefault(row.forecaster, []).append(row.error_p50_percent)

    def rank(name: str) -> tuple[int, float]:
        values = errors.get(name, [])
        return wrong[name], round(sum(values) / len(values), 9) if values else math.inf

    first = min(rank(name) for name in wrong)
    best = [_name(name) for name in wrong if rank(name) == first]
    fewest = sum(1 for count in wrong.values() if count == first[0])
    if len(best) > 1:
        verdict = f"{' and '.join(best)} do equally well (same wrong calls and errors)"
    elif fewest > 1:
        verdict = f"{best[0]} does better (as few wrong calls, a smaller median error)"
    else:
        verdict = f"{best[0]} does better (the fewest wrong calls)"
    calls = ", ".join(f"{_name(name)} {wrong[name]}" for name in wrong)
    origins = max(row.origins for row in summary)
    bands = "".join(_band_sentence(summary, name) for name in ("forecast", "mechanism"))
    return (
        f"On this history, {verdict}: wrong calls (misses plus false fills, every horizon "
        f"together, up to {origins} origins a horizon) {calls}.{bands}"
    )


def _band_sentence(summary: list[SummaryRow], forecaster: str) -> str:
    banded = sum(row.banded for row in summary if row.forecaster == forecaster)
    covered = sum(row.covered for row in summary if row.forecaster == forecaster)
    return (
        f" {_name(forecaster).capitalize()}'s band covered {covered} of {banded}." if banded else ""
    )


def _name(forecaster: str) -> str:
    return FORECASTER_NAMES.get(forecaster, forecaster)


@dataclass(frozen=True, slots=True)
class CapacityPanels:
    totals: CapacityTotals
    backtest: BacktestPanel


def capacity_panels(
    rows: DataFrame,
    at: datetime,
    params: ForecastParams,
    window_hours: float,
    *,
    usage: DataFrame | None = None,
    rollup: DataFrame | None = None,
) -> CapacityPanels:
    """Both panels: the totals on the forecast's lookback, the backtest on the last
    ``window_hours`` (the replay's window; the mechanism too with the ``usage`` dataset);
    ``rollup``: the hourly rollup of ``rows``."""
    with step("fleet and broker totals"):
        totals = capacity_totals(rows, at, params, rollup)
    with step("backtest of the forecast"):
        backtest = backtest_panel(
            rows, at, window_hours, params.bucket_seconds, usage=usage, rollup=rollup
        )
    return CapacityPanels(totals, backtest)


def capacity_summary(panels: CapacityPanels) -> dict[str, object]:
    """summary.json's capacity totals (the fleet's row, the sentence) and backtest."""
    totals, backtest = panels.totals, panels.backtest
    fleet = totals.table[totals.table["group"] == FLEET]
    return {
        "capacityTotals": {
            "sentence": totals.sentence,
            "note": NO_RACK_NOR_CLUSTER,
            "fleet": None if fleet.empty else _json_record(fleet.iloc[0]),
            "brokers": int((totals.table["group"] != FLEET).sum()),
        },
        "backtest": {
            "sentence": backtest.sentence,
            "volumes": backtest.volumes,
            "volumesInWindow": backtest.volumes_in_window,
            "rows": [_json_record(row) for _, row in backtest.table.iterrows()],
        },
    }


def _json_record(row: pd.Series) -> dict[str, object]:
    return {str(key): _plain(value) for key, value in row.items()}


def _plain(value: object) -> object:
    """A JSON value: None for every missing kind, Python numbers for numpy's."""
    if value is None or (not isinstance(value, str) and bool(pd.isna(value))):  # type: ignore[call-overload]
        return None
    return value.item() if isinstance(value, np.generic) else value
