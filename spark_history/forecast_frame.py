"""One volume's hourly envelope (a pandas frame) to one forecast row: shared by Spark and pandas.

``forecast.py`` runs :func:`forecast_group` per volume with ``applyInPandas``;
``pandas_forecast.py`` runs it with a pandas ``groupby``. Both feed it the same hourly frame
(columns of :data:`HOURLY_COLUMNS`), so the two implementations compute the same numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from spark_history.envelope_forecast import ForecastParams, forecast_hourly

HOURLY_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "volumeName",
    "bucket",
    "maxConsumed",
    "lastConsumed",
    "capacity",
    "path",
    "lastAt",
)
"""Per volume and hour bucket (``bucket`` = ceil of hours relative to ``at``, <= 0)."""

FORECAST_SCHEMA = (
    "brokerId int, volumeName string, path string, capacity long, consumed long, "
    "usedPercent double, trend string, growthBytesPerHour double, growthPercentPerDay double, "
    "hoursToFull double, hoursToFullLow double, hoursToFullHigh double, daysToFull double, "
    "levelBytes double, steps int, retentionDrops int, hoursOfData double, lastSnapshotAt "
    "timestamp"
)
"""The forecast table, one row per volume (Spark DDL; the CSV has the same columns)."""

FORECAST_COLUMNS: tuple[str, ...] = tuple(
    part.strip().split(" ")[0] for part in FORECAST_SCHEMA.split(",")
)


def forecast_group(hourly: pd.DataFrame, params: ForecastParams) -> pd.DataFrame:
    """The forecast row of the one volume whose hourly envelope is ``hourly``."""
    ordered = hourly.sort_values("bucket")
    midpoints = ordered["bucket"].to_numpy(dtype=np.float64) - 0.5
    maxima = ordered["maxConsumed"].to_numpy(dtype=np.float64)
    latest = ordered.iloc[-1]
    capacity = int(latest["capacity"])
    result = forecast_hourly(midpoints, maxima, float(capacity), params)
    consumed = int(latest["lastConsumed"])
    return pd.DataFrame(
        [
            {
                "brokerId": int(latest["brokerId"]),
                "volumeName": str(latest["volumeName"]),
                "path": None if pd.isna(latest["path"]) else str(latest["path"]),
                "capacity": capacity,
                "consumed": consumed,
                "usedPercent": 100.0 * consumed / capacity if capacity else math.nan,
                "trend": result.trend.value,
                "growthBytesPerHour": result.slope_per_hour,
                "growthPercentPerDay": 100.0 * 24 * result.slope_per_hour / capacity
                if capacity
                else math.nan,
                "hoursToFull": _or_nan(result.hours_to_full),
                "hoursToFullLow": _or_nan(result.hours_to_full_low),
                "hoursToFullHigh": _or_nan(result.hours_to_full_high),
                "daysToFull": _or_nan(result.hours_to_full) / 24.0,
                "levelBytes": result.level,
                "steps": result.steps,
                "retentionDrops": result.drops,
                "hoursOfData": float(midpoints[-1] - midpoints[0] + 1.0),
                "lastSnapshotAt": pd.Timestamp(latest["lastAt"]),
            }
        ]
    )


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value
