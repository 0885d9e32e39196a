"""One volume's hourly envelope (a pandas frame) to one forecast row: shared by Spark and pandas.

``forecast.py`` runs :func:`forecast_group` per volume with ``applyInPandas``;
``pandas_forecast.py`` runs it with a pandas ``groupby``. Both feed it the same hourly frame
(columns of :data:`HOURLY_COLUMNS`), so the two implementations compute the same numbers.

Data never stops the job: a volume whose forecast raises gets ``trend=error`` and the
exception as its ``reason``, and every other volume is forecast as usual. Before any fitting,
a volume that is full now is ``full`` (0 hours to full) and a volume whose broker left (a
tombstone after its last snapshot) or has been silent longer than
``ForecastParams.retired_after_hours`` is ``retired`` and gets no forecast.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from spark_history.envelope_forecast import (
    ForecastParams,
    Trend,
    VolumeForecast,
    forecast_hourly,
)

HOURLY_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "volumeName",
    "bucket",
    "maxConsumed",
    "minConsumed",
    "lastConsumed",
    "capacity",
    "path",
    "lastAt",
    "lastHours",
    "retiredHours",
)
"""Per volume and hour bucket (``bucket`` = ceil of hours relative to ``at``, <= 0).

``lastHours``: the newest snapshot of the bucket, in hours relative to ``at``;
``retiredHours``: the broker's newest tombstone before ``at`` (same unit), NaN without one.
"""

FORECAST_SCHEMA = (
    "brokerId int, volumeName string, path string, capacity long, consumed long, "
    "usedPercent double, trend string, reason string, growthBytesPerHour double, "
    "growthPercentPerDay double, hoursToFull double, hoursToFullLow double, "
    "hoursToFullHigh double, daysToFull double, levelBytes double, steps int, "
    "retentionDrops int, hoursOfData double, lastSnapshotAt timestamp"
)
"""The forecast table, one row per volume (Spark DDL; the CSV has the same columns)."""

FORECAST_COLUMNS: tuple[str, ...] = tuple(
    part.strip().split(" ")[0] for part in FORECAST_SCHEMA.split(",")
)

_MAX_REASON = 300


def forecast_group(hourly: pd.DataFrame, params: ForecastParams) -> pd.DataFrame:
    """The forecast row of the one volume whose hourly envelope is ``hourly``; never raises
    for the data of that volume."""
    ordered = hourly.sort_values("bucket")
    latest = ordered.iloc[-1]
    midpoints = ordered["bucket"].to_numpy(dtype=np.float64) - 0.5
    row: dict[str, object] = {
        "brokerId": int(latest["brokerId"]),
        "volumeName": str(latest["volumeName"]),
        "path": None if pd.isna(latest["path"]) else str(latest["path"]),
        "lastSnapshotAt": pd.Timestamp(latest["lastAt"]),
        "hoursOfData": float(midpoints[-1] - midpoints[0] + 1.0),
    }
    try:
        row.update(_forecast_fields(ordered, params))
    except Exception as error:  # one volume's data must not stop the job
        reason = f"{type(error).__name__}: {error}"[:_MAX_REASON]
        capacity, consumed = _number(latest["capacity"]), _number(latest["lastConsumed"])
        row.update(_result_fields(_nothing(Trend.ERROR), capacity, consumed))
        row["reason"] = reason
    return pd.DataFrame([{column: row.get(column) for column in FORECAST_COLUMNS}])


def _forecast_fields(ordered: pd.DataFrame, params: ForecastParams) -> dict[str, object]:
    latest = ordered.iloc[-1]
    capacity = int(latest["capacity"])
    consumed = int(latest["lastConsumed"])
    reason = None
    retired = _retired_reason(ordered, params)
    if retired is not None:
        result, reason = _nothing(Trend.RETIRED), retired
    elif capacity > 0 and capacity - consumed <= params.full_free_fraction * capacity:
        result = VolumeForecast(
            Trend.FULL, math.nan, math.nan, math.nan, float(consumed), 0.0, 0.0, 0.0, 0, 0
        )
        reason = f"{capacity - consumed} bytes free"
    else:
        midpoints = ordered["bucket"].to_numpy(dtype=np.float64) - 0.5
        maxima = ordered["maxConsumed"].to_numpy(dtype=np.float64)
        minima = ordered["minConsumed"].to_numpy(dtype=np.float64)
        result = forecast_hourly(midpoints, maxima, float(capacity), params, minima=minima)
        reason = _growth_reason(result.trend, params)
    fields = _result_fields(result, float(capacity), float(consumed))
    fields["reason"] = reason
    return fields


def _growth_reason(trend: Trend, params: ForecastParams) -> str | None:
    """Why a volume got a fill time from a floor rather than from the envelope method."""
    if trend is Trend.GROWING_LINE_FLOOR:
        return (
            f"no fill by the envelope method, but a line over the last {params.fit_hours:g} h"
            " fills and nothing shows growth stopped"
        )
    if trend is Trend.GROWING_SHORT_LINE:
        return (
            f"a line over the last {params.short_window_hours:g} h (node_exporter's alert) "
            f"fills within {params.short_line_alert_hours:g} h, before the other methods' "
            "fill time"
        )
    if trend is Trend.GROWING_NEXT_DAY:
        return (
            "yesterday's climb from this hour, repeated from the level now, fills within "
            f"{params.next_day_hours:g} h, before the other methods' fill time"
        )
    return None


def _retired_reason(ordered: pd.DataFrame, params: ForecastParams) -> str | None:
    last_hours = float(ordered["lastHours"].max())
    retired_hours = float(ordered["retiredHours"].max())
    if not math.isnan(retired_hours) and retired_hours >= last_hours:
        return f"tombstone {-retired_hours:.1f} h before --at, after its last snapshot"
    if -last_hours > params.retired_after_hours:
        return (
            f"silent for {-last_hours:.1f} h (over {params.retired_after_hours:g} h): "
            "broker or volume gone"
        )
    return None


def _nothing(trend: Trend) -> VolumeForecast:
    nan = math.nan
    return VolumeForecast(trend, nan, nan, nan, nan, None, None, None, 0, 0)


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _result_fields(result: VolumeForecast, capacity: float, consumed: float) -> dict[str, object]:
    per_cent = 100.0 / capacity if capacity else math.nan
    return {
        "capacity": None if math.isnan(capacity) else int(capacity),
        "consumed": None if math.isnan(consumed) else int(consumed),
        "usedPercent": consumed * per_cent,
        "trend": result.trend.value,
        "growthBytesPerHour": result.slope_per_hour,
        "growthPercentPerDay": 24 * result.slope_per_hour * per_cent,
        "hoursToFull": _or_nan(result.hours_to_full),
        "hoursToFullLow": _or_nan(result.hours_to_full_low),
        "hoursToFullHigh": _or_nan(result.hours_to_full_high),
        "daysToFull": _or_nan(result.hours_to_full) / 24.0,
        "levelBytes": result.level,
        "steps": result.steps,
        "retentionDrops": result.drops,
    }


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value
