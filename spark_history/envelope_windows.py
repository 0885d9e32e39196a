"""The band spans what every window's rate says (``envelope_forecast`` step 10). Pure numpy.

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

from spark_history.forecast_types import ForecastParams, VolumeForecast
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
