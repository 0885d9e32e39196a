"""When will one volume fill? One trend line on its recent history, with a calibrated band.

Pure numpy on one volume's hourly buckets; Spark (``spark_trend.py``) and the single-process
pandas reference (``pandas_trend.py``) both call :func:`forecast_hourly`, so they cannot
disagree.

1. **Buckets.** The mean of each hour's samples at their mean time (what a least-squares fit
   on the raw samples sees, in a few hundred points).
2. **Trend** (``robust_trend.trend_line``). The least-squares line over the last
   ``fit_hours`` (72 h: three daily cycles), its value at ``at`` as the level: Prometheus
   ``predict_linear`` over 72 h. Its slope's interval, on a sample size corrected for
   autocorrelation, sorts it into growing, flat or shrinking.
3. **Fill time.** ``(capacity - level) / slope`` when the slope is positive and the line
   reaches capacity within the horizon.
4. **Band** (``conformal_bands``). Split conformal: the same trend, forecast at past origins of
   the fleet's history and scored against the bucket maxima that followed, gives per trend
   and horizon the quantiles of the level's error; the band on the fill time is where the
   level's band reaches capacity. Without calibration data there is no band.

Rolling-origin backtests (``history backtest``) chose this trend over quantile lines and over
a stack of envelope steps, which did not beat it; docs/history.md gives the scores.
"""

from __future__ import annotations

import math

import numpy as np

from spark_history.forecast.conformal_bands import Calibration, crossing_band
from spark_history.forecast.robust_trend import FloatArray, TrendLine, trend_line
from spark_history.forecast.vocabulary import (
    FITTED_TRENDS,
    ForecastParams,
    Trend,
    VolumeForecast,
    no_fill,
)

__all__ = [
    "FITTED_TRENDS",
    "ForecastParams",
    "Trend",
    "VolumeForecast",
    "forecast_hourly",
    "hour_bucket",
    "hourly_means",
    "trend_class",
    "trend_of",
]


def hour_bucket(hours: FloatArray) -> FloatArray:
    """The hour bucket of samples (hours relative to ``at``, <= 0): (-1, 0] is bucket 0."""
    buckets: FloatArray = np.ceil(hours)
    return buckets


def hourly_means(hours: FloatArray, consumed: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Bucket samples (hours relative to ``at``) into whole hours; (mean sample time, mean)
    of each bucket that holds samples."""
    buckets = hour_bucket(hours)
    order = np.argsort(buckets, kind="stable")
    buckets, times, values = buckets[order], hours[order], consumed[order]
    _, starts, counts = np.unique(buckets, return_index=True, return_counts=True)
    if not values.size:
        return values.astype(np.float64), values.astype(np.float64)
    mean_times = np.add.reduceat(times, starts) / counts
    means = np.add.reduceat(values, starts) / counts
    return mean_times.astype(np.float64), means.astype(np.float64)


def trend_of(line: TrendLine) -> Trend:
    """Growing, flat or shrinking: where Sen's interval on the slope lies."""
    if line.low > 0:
        return Trend.GROWING
    if line.high < 0:
        return Trend.SHRINKING
    return Trend.FLAT


def trend_class(mean_hours: FloatArray, means: FloatArray, params: ForecastParams) -> Trend | None:
    """The trend of the bucket means (``mean_hours`` relative to ``at``, <= 0): growing, flat
    or shrinking, the class both forecasts' bands are calibrated by; None without
    ``min_hours_of_data`` of history."""
    line = fitted_line(mean_hours, means, params)
    return None if line is None else trend_of(line)


def fitted_line(
    mean_hours: FloatArray, means: FloatArray, params: ForecastParams
) -> TrendLine | None:
    """The trend of the bucket means in the lookback (``mean_hours``, their mean sample
    times relative to ``at``, <= 0); None without ``min_hours_of_data`` of history."""
    order = np.argsort(mean_hours)
    hours = np.asarray(mean_hours, dtype=np.float64)[order]
    values = np.asarray(means, dtype=np.float64)[order]
    keep = (hours > -params.lookback_hours) & (hours <= 0)
    hours, values = hours[keep], values[keep]
    if (
        hours.size < 2
        or hours[-1] - hours[0] < params.min_hours_of_data
        or hours.size < (params.min_hours_of_data / 2)
    ):
        return None
    return trend_line(hours, values, window_hours=params.fit_hours, confidence=params.confidence)


def forecast_hourly(
    mean_hours: FloatArray,
    means: FloatArray,
    capacity: float,
    params: ForecastParams | None = None,
    *,
    calibration: Calibration | None = None,
) -> VolumeForecast:
    """Forecast one volume from its hourly means (at ``mean_hours``, relative to ``at``,
    <= 0); with ``calibration``, a fill time gets the calibrated band of its trend."""
    params = params or ForecastParams()
    line = fitted_line(mean_hours, means, params)
    if line is None:
        level = float(means[np.argmax(mean_hours)]) if np.size(means) else math.nan
        return no_fill(Trend.INSUFFICIENT_DATA, level)
    trend = trend_of(line)
    crossing = line.crossing(capacity, params.horizon_hours)
    if crossing is None:
        return no_fill(trend, line.level, (line.slope, line.low, line.high))
    band = None
    if calibration is not None:
        band = crossing_band(
            calibration,
            trend.value,
            level=line.level,
            slope=line.slope,
            limit=capacity,
            capacity=capacity,
            horizon_hours=params.horizon_hours,
        )
    if band is None:
        return VolumeForecast(
            trend, line.slope, line.low, line.high, line.level, crossing, None, None
        )
    horizons = calibration.horizons(trend.value) if calibration is not None else []
    label = (
        f"split-conformal {100 * params.band_coverage:g}% band, {trend.value} trend, "
        f"calibrated to {horizons[-1]:g} h by fleet backtests"
    )
    return VolumeForecast(
        trend, line.slope, line.low, line.high, line.level, crossing, band[0], band[1], label
    )
