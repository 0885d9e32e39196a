"""A conservative floor under the envelope forecast: a plain line over the last 72 hours.

The envelope method (``envelope_forecast``) reads retention, plateaus, steps and weekly cycles
into the data, and each reading can say "no fill". On data it was not developed on those
readings can be wrong, and a missed fill (a broker out of disk with no warning) is the outcome
the product exists to prevent. So a "no fill" (or a fill later than a simple line's) must
agree with a second, independent piece of evidence: a least-squares line through the hourly
envelope over the last ``fit_hours`` (72 h, three daily cycles), extrapolated as Prometheus'
``predict_linear`` would. When that line fills within the horizon, its fill time is reported
unless the envelope method has *specific, strong* evidence for a stop that a line cannot see
(``envelope_forecast``: growth measured stopped for ``stop_hours``, or a retention ceiling
reached and held across several drops). Pure numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from spark_history.forecast_types import ForecastParams, Trend, VolumeForecast
from spark_history.robust_trend import FloatArray, crossing_band, effective_size


@dataclass(frozen=True, slots=True)
class LineFill:
    """Where the 72 h line reaches capacity (hours from ``at``), and its early side."""

    hours_to_full: float
    earliest: float
    slope: float
    slope_low: float
    slope_high: float
    level: float
    """The line's value at ``at``."""


def line_fill(
    hours: FloatArray, values: FloatArray, capacity: float, params: ForecastParams
) -> LineFill | None:
    """Least squares through the envelope's last ``fit_hours`` before ``at`` (hour 0); None
    when the line does not rise, does not reach capacity within the horizon, or stands on
    fewer than ``min_hours_of_data`` hours.

    The slope's standard error is the textbook one on an effective sample size (AR(1) of
    the residuals: hourly points are not independent); the early side is where the line,
    give or take ``z`` standard deviations of level (the residuals' spread) and slope,
    crosses capacity.
    """
    window = hours > -params.fit_hours
    x, y = hours[window], values[window]
    if x.size < 3 or x[-1] - x[0] < params.min_hours_of_data:
        return None
    centre = float(x.mean())
    dx = x - centre
    sxx = float(np.dot(dx, dx))
    slope = float(np.dot(dx, y - y.mean())) / sxx
    level = float(y.mean()) + slope * (0.0 - centre)
    remaining = max(capacity - level, 0.0)
    if not slope > 0 or remaining / slope > params.horizon_hours:
        return None
    residuals = y - (level + slope * x)
    n_eff = max(effective_size(residuals), 3.0)
    noise = math.sqrt(float(np.dot(residuals, residuals)) / (x.size - 2))
    slope_error = noise / math.sqrt(sxx) * math.sqrt(x.size / n_eff)
    z = NormalDist().inv_cdf(0.5 + params.confidence / 2)
    earliest, _ = crossing_band(remaining, slope, noise, slope_error, z)
    spread = z * slope_error
    return LineFill(remaining / slope, earliest, slope, slope - spread, slope + spread, level)


def with_floor(
    result: VolumeForecast, line: LineFill | None, *, strong_stop: bool
) -> VolumeForecast:
    """The envelope's forecast, or the line's fill when it is earlier and nothing strong
    says growth stopped.

    - the envelope says "no fill" and the line fills: the line's fill time, trend
      ``growing-line-floor``, the band from the line's early side to an open late side (the
      envelope's "never" is not ruled out);
    - both fill, the line earlier: the envelope's point stands (its readings of steps and
      cycles are better on growing volumes), but the band's early side reaches the line's;
    - ``strong_stop``: the envelope's verdict stands whatever the line says.
    """
    if line is None or strong_stop:
        return result
    if result.hours_to_full is None:
        return VolumeForecast(
            Trend.GROWING_LINE_FLOOR,
            line.slope,
            line.slope_low,
            line.slope_high,
            line.level,
            line.hours_to_full,
            line.earliest,
            None,
            result.steps,
            result.drops,
        )
    low = result.hours_to_full_low
    if low is not None and line.earliest < low:
        return replace(result, hours_to_full_low=line.earliest)
    return result
