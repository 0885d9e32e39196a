"""What plain lines over other windows say (``envelope_forecast`` steps 10 and 11). Pure numpy.

**Step 10, the short line's alert.** node_exporter's standard alert (``NodeFilesystemSpace
FillingUp`` in its mixin) fires when ``predict_linear`` over the last 6 h reaches zero free
space within 24 h (and under 40 % is free; this step asks no such level). Operators have
that alert already; the forecast must never tell them later. So when
the least-squares line through the hourly envelope over the last ``short_window_hours``,
from the level now, reaches capacity within ``short_line_alert_hours`` and before the
forecast's fill time (or where it has none), its time is reported (trend
``growing-short-line``). A burst or a reassignment running now is such a climb: the
envelope takes its steps out, the line does not.

**Step 11, every window's rate in the band.**

The band of steps 7 to 9 comes from rates the method trusts: the fit window's, the week's
when significant, their back-tested misses, the next day's climb. The future can follow a
rate it does not trust: a burst or a reassignment running now (the last hours climb faster
than any fitted rate), or a climb that ends (the rate falls back to what the week shows).
So the band of a forecast fill also spans the fill times of two plain least-squares lines
through the hourly envelope, steps left in, from the level now:

- **early side**: the last ``short_window_hours`` (6 h, the window of node_exporter's
  ``predict_linear`` alert): the band never starts later than that alert's fill time;
- **late side**: the whole ``lookback_hours`` (a week): the band never ends before the
  fill time at the week's rate, and is open when the week did not grow.

The point forecast does not move: only how sure it says it is.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from spark_history.forecast_types import ForecastParams, Trend, VolumeForecast
from spark_history.robust_trend import FloatArray

MIN_POINTS = 3
"""Hours a window needs for its line."""


def line_slope(hours: FloatArray, values: FloatArray, window_hours: float) -> float:
    """Least-squares slope through the points of the last ``window_hours`` (before the
    newest); NaN with fewer than ``MIN_POINTS`` points."""
    keep = hours > hours[-1] - window_hours
    x, y = hours[keep], values[keep]
    if x.size < MIN_POINTS:
        return math.nan
    dx = x - x.mean()
    return float(np.dot(dx, y - y.mean()) / np.dot(dx, dx))


def span_windows(
    result: VolumeForecast,
    hours: FloatArray,
    values: FloatArray,
    capacity: float,
    params: ForecastParams,
) -> VolumeForecast:
    """``result`` with its band widened to the short window's and the week's fill times
    (``hours``: hourly bucket midpoints before ``at``, ascending; ``values``: the envelope,
    steps left in). A forecast without a fill, or without a band, is returned as it is."""
    low, high = result.hours_to_full_low, result.hours_to_full_high
    if result.hours_to_full is None or low is None or hours.size < MIN_POINTS:
        return result
    room = max(capacity - float(values[-1]), 0.0)
    now = float(hours[-1])
    short = line_slope(hours, values, params.short_window_hours)
    if short > 0:
        low = max(min(low, now + room / short), 0.0)
    if high is not None:
        week = line_slope(hours, values, params.lookback_hours)
        high = max(high, now + room / week) if week > 0 else None
    return replace(result, hours_to_full_low=low, hours_to_full_high=high)


def with_short_line(
    result: VolumeForecast,
    hours: FloatArray,
    values: FloatArray,
    capacity: float,
    params: ForecastParams,
) -> VolumeForecast:
    """``result``, or the short line's fill when it comes within ``short_line_alert_hours``
    and before ``result``'s (step 10). Its band's early side is its own time (step 11 widens
    it); the late side stays the forecast's, open where the forecast had no fill."""
    if hours.size < MIN_POINTS:
        return result
    slope = line_slope(hours, values, params.short_window_hours)
    if not slope > 0:
        return result
    room = max(capacity - float(values[-1]), 0.0)
    fill = max(float(hours[-1]) + room / slope, 0.0)
    if fill > params.short_line_alert_hours:
        return result
    if result.hours_to_full is not None and result.hours_to_full <= fill:
        return result
    low = result.hours_to_full_low
    return replace(
        result,
        trend=Trend.GROWING_SHORT_LINE,
        slope_per_hour=slope,
        slope_low=math.nan,
        slope_high=math.nan,
        level=float(values[-1]),
        hours_to_full=fill,
        hours_to_full_low=fill if low is None else min(low, fill),
    )
