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
from dataclasses import dataclass, replace

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


@dataclass(frozen=True, slots=True)
class WindowLines:
    """The two plain lines of steps 10 and 11, measured once per volume: their slopes (NaN
    without enough points) and where the envelope stands now."""

    short_slope: float
    week_slope: float
    level: float
    now: float
    """The newest hour (its bucket midpoint, hours from ``at``)."""
    room: float
    """Capacity left above ``level``."""

    def fill(self, slope: float) -> float:
        """Hours from ``at`` until a line of ``slope`` (> 0) from the level now is full."""
        return max(self.now + self.room / slope, 0.0)


def window_lines(
    hours: FloatArray, values: FloatArray, capacity: float, params: ForecastParams
) -> WindowLines | None:
    """The short window's and the week's lines through the envelope (steps left in); None
    with fewer than ``MIN_POINTS`` hours."""
    if hours.size < MIN_POINTS:
        return None
    level = float(values[-1])
    return WindowLines(
        line_slope(hours, values, params.short_window_hours),
        line_slope(hours, values, params.lookback_hours),
        level,
        float(hours[-1]),
        max(capacity - level, 0.0),
    )


def span_windows(result: VolumeForecast, lines: WindowLines | None) -> VolumeForecast:
    """``result`` with its band widened to the short window's and the week's fill times
    (step 11). A forecast without a fill, or without a band, is returned as it is."""
    low, high = result.hours_to_full_low, result.hours_to_full_high
    if lines is None or result.hours_to_full is None or low is None:
        return result
    if lines.short_slope > 0:
        low = min(low, lines.fill(lines.short_slope))
    if high is not None:
        high = max(high, lines.fill(lines.week_slope)) if lines.week_slope > 0 else None
    return replace(result, hours_to_full_low=low, hours_to_full_high=high)


def with_short_line(
    result: VolumeForecast, lines: WindowLines | None, params: ForecastParams
) -> VolumeForecast:
    """``result``, or the short line's fill when it comes within ``short_line_alert_hours``
    and before ``result``'s (step 10). Its band's early side is its own time (step 11 widens
    it); the late side stays the forecast's, open where the forecast had no fill."""
    if lines is None or not lines.short_slope > 0:
        return result
    fill = lines.fill(lines.short_slope)
    if fill > params.short_line_alert_hours:
        return result
    if result.hours_to_full is not None and result.hours_to_full <= fill:
        return result
    low = result.hours_to_full_low
    return replace(
        result,
        trend=Trend.GROWING_SHORT_LINE,
        slope_per_hour=lines.short_slope,
        slope_low=math.nan,
        slope_high=math.nan,
        level=lines.level,
        hours_to_full=fill,
        hours_to_full_low=fill if low is None else min(low, fill),
    )
