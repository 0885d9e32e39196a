"""One volume's hourly envelope (a pandas frame) to one forecast row: shared by Spark and pandas.

``spark_trend.py`` runs :func:`forecast_group` per volume with ``applyInPandas`` (a call per
broker); ``pandas_trend.py`` runs it with a pandas ``groupby``. Both feed it the same hourly frame
(columns of :data:`HOURLY_COLUMNS`), so the two implementations compute the same numbers.

Data never stops the job: a volume whose forecast raises gets ``trend=error`` and the
exception as its ``reason``, and every other volume is forecast as usual. Before any fitting,
a volume that is full now is ``full`` (0 hours to full) and a volume whose broker left (a
tombstone after its last snapshot) or has been silent longer than
``ForecastParams.retired_after_hours`` is ``retired`` and gets no forecast.

The band is calibrated on the fleet: :func:`calibration_group` gives each volume's backtest
errors (the same forecast at past origins of the hourly frame, scored against what followed),
:func:`calibration_of` pools them, and :func:`forecast_group` takes the pooled calibration.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from spark_history.forecast.backtest.forecasters import calibration_samples, forecast_forecaster
from spark_history.forecast.backtest.rolling_origin import BacktestConfig, BucketSeries
from spark_history.forecast.conformal_bands import Calibration, Sample
from spark_history.forecast.trend import (
    ForecastParams,
    Trend,
    VolumeForecast,
    forecast_hourly,
)
from spark_history.forecast.vocabulary import TREND

HOURLY_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "volumeName",
    "bucket",
    "maxConsumed",
    "minConsumed",
    "meanConsumed",
    "meanHours",
    "lastConsumed",
    "capacity",
    "path",
    "lastAt",
    "lastHours",
    "retiredHours",
)
"""Per volume and hour bucket (``bucket`` = ceil of hours relative to ``at``, <= 0).

``meanHours``: the mean time of the bucket's snapshots, and ``lastHours`` the newest one's,
in hours relative to ``at``;
``retiredHours``: the broker's newest tombstone before ``at`` (same unit), NaN without one.
"""

FORECAST_SCHEMA = (
    "brokerId int, volumeName string, path string, capacity long, consumed long, "
    "usedPercent double, method string, trend string, reason string, "
    "growthBytesPerHour double, growthPercentPerDay double, hoursToFull double, "
    "hoursToFullLow double, hoursToFullHigh double, daysToFull double, levelBytes double, "
    "hoursOfData double, lastSnapshotAt timestamp, drivers string, prevention string"
)
"""The forecast table, one row per volume (Spark DDL; the CSV has the same columns).

``method`` is ``trend`` here; ``choice.one_forecast`` makes it ``mechanism`` where the
usage history answers (``drivers`` and ``prevention`` then filled)."""

FORECAST_COLUMNS: tuple[str, ...] = tuple(
    part.strip().split(" ")[0] for part in FORECAST_SCHEMA.split(",")
)

_MAX_REASON = 300

CALIBRATION_SCHEMA = "trend string, horizonHours double, error double"
"""One backtest error of the forecast (Spark DDL): ``conformal_bands.Sample``."""

CALIBRATION_COLUMNS: tuple[str, ...] = ("trend", "horizonHours", "error")


def calibration_group(hourly: pd.DataFrame, params: ForecastParams) -> pd.DataFrame:
    """The backtest errors of the one volume whose hourly envelope is ``hourly``: the
    forecast at origins every ``calibration_step_hours`` once ``fit_hours`` of it lie behind,
    its level error at each of ``calibration_horizons_hours``. Empty when the data of the
    volume cannot be scored (never raises for it)."""
    config = calibration_config(params)
    try:
        samples = (
            []
            if config is None
            else calibration_samples(bucket_series(hourly), forecast_forecaster(params), config)
        )
    except Exception:  # one volume's data must not stop the job; it just calibrates nothing
        samples = []
    return calibration_frame(samples)


def calibration_config(params: ForecastParams) -> BacktestConfig | None:
    """The backtest that calibrates the forecast's bands: origins every
    ``calibration_step_hours`` once ``fit_hours`` lie behind, scored at the
    ``calibration_horizons_hours`` within the horizon; None when none is."""
    horizons = tuple(h for h in params.calibration_horizons_hours if h <= params.horizon_hours)
    if not horizons:
        return None
    return BacktestConfig(
        origin_step_hours=params.calibration_step_hours,
        warmup_hours=params.fit_hours,
        horizon_hours=params.horizon_hours,
        horizons_hours=horizons,
    )


def calibration_frame(samples: list[Sample]) -> pd.DataFrame:
    """``samples`` as :data:`CALIBRATION_COLUMNS` rows."""
    return pd.DataFrame(
        {
            # An explicit object dtype: an empty list would reach Arrow as a null column,
            # which applyInPandas cannot convert (a volume with no origin has no rows).
            "trend": pd.Series([sample.trend for sample in samples], dtype=object),
            "horizonHours": np.array([s.horizon_hours for s in samples], dtype=np.float64),
            "error": np.array([sample.error for sample in samples], dtype=np.float64),
        },
        columns=list(CALIBRATION_COLUMNS),
    )


def bucket_series(hourly: pd.DataFrame) -> BucketSeries:
    """One volume's hourly envelope as the backtest's series (its limit: its capacity; the
    calibration scores levels, not crossings)."""
    ordered = hourly.sort_values("bucket")
    capacity = ordered["capacity"].to_numpy(dtype=np.float64)
    return BucketSeries(
        index=ordered["bucket"].to_numpy(dtype=np.int64),
        maxima=ordered["maxConsumed"].to_numpy(dtype=np.float64),
        means=ordered["meanConsumed"].to_numpy(dtype=np.float64),
        minima=ordered["minConsumed"].to_numpy(dtype=np.float64),
        capacity=capacity,
        limit=capacity,
        mean_times=ordered["meanHours"].to_numpy(dtype=np.float64),
    )


def calibration_of(samples: pd.DataFrame, params: ForecastParams) -> Calibration:
    """The fleet's calibration from every volume's :func:`calibration_group` rows."""
    return Calibration.of(
        (
            Sample(str(trend), float(horizon), float(error))
            for trend, horizon, error in zip(
                samples["trend"], samples["horizonHours"], samples["error"], strict=True
            )
        ),
        params.band_coverage,
    )


def forecast_group(
    hourly: pd.DataFrame, params: ForecastParams, calibration: Calibration | None = None
) -> pd.DataFrame:
    """The forecast row of the one volume whose hourly envelope is ``hourly`` (its band from
    ``calibration``); never raises for the data of that volume."""
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
        row.update(_forecast_fields(ordered, params, calibration))
    except Exception as error:  # one volume's data must not stop the job
        reason = f"{type(error).__name__}: {error}"[:_MAX_REASON]
        capacity, consumed = _number(latest["capacity"]), _number(latest["lastConsumed"])
        row.update(_result_fields(_nothing(Trend.ERROR), capacity, consumed))
        row["reason"] = reason
    return pd.DataFrame([{column: row.get(column) for column in FORECAST_COLUMNS}])


def _forecast_fields(
    ordered: pd.DataFrame, params: ForecastParams, calibration: Calibration | None
) -> dict[str, object]:
    latest = ordered.iloc[-1]
    capacity = int(latest["capacity"])
    consumed = int(latest["lastConsumed"])
    reason = None
    retired = _retired_reason(ordered, params)
    if retired is not None:
        result, reason = _nothing(Trend.RETIRED), retired
    elif capacity > 0 and capacity - consumed <= params.full_free_fraction * capacity:
        result = VolumeForecast(
            Trend.FULL, math.nan, math.nan, math.nan, float(consumed), 0.0, 0.0, 0.0
        )
        reason = f"{capacity - consumed} bytes free"
    else:
        result = forecast_hourly(
            ordered["meanHours"].to_numpy(dtype=np.float64),
            ordered["meanConsumed"].to_numpy(dtype=np.float64),
            float(capacity),
            params,
            calibration=calibration,
        )
        reason = _band_reason(result)
    fields = _result_fields(result, float(capacity), float(consumed))
    fields["reason"] = reason
    return fields


def _band_reason(result: VolumeForecast) -> str | None:
    """Which band a fill time has: the calibrated one, or none for want of calibration."""
    if result.hours_to_full is None:
        return None
    if result.band is not None:
        return result.band
    return f"no band: no backtest errors calibrate the {result.trend.value} trend"


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
    return VolumeForecast(trend, nan, nan, nan, nan, None, None, None)


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
        "method": TREND,
        "trend": result.trend.value,
        "growthBytesPerHour": result.slope_per_hour,
        "growthPercentPerDay": 24 * result.slope_per_hour * per_cent,
        "hoursToFull": _or_nan(result.hours_to_full),
        "hoursToFullLow": _or_nan(result.hours_to_full_low),
        "hoursToFullHigh": _or_nan(result.hours_to_full_high),
        "daysToFull": _or_nan(result.hours_to_full) / 24.0,
        "levelBytes": result.level,
    }


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value
