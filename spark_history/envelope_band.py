"""Level, fill time and band of a growing volume (``envelope_forecast`` steps 6-7). Pure numpy.

The band is where usage, ``level + slope t`` give or take ``z sqrt(noise^2 + (sigma_rate
t)^2)``, crosses capacity. With several candidate rates (the fit window's and the week's),
the point is the earliest of their fill times and the band spans all of theirs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from spark_history.forecast_types import ForecastParams, Trend, VolumeForecast
from spark_history.robust_trend import (
    FloatArray,
    SlopeEstimate,
    backtest_rate_errors,
    crossing_band,
    theil_sen,
)

DAY_HOURS = 24.0
DRIFT_MIN_DAYS = 4
"""Days of growth needed to measure how the rate changes (``rate_drift``)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One rate the data supports, with the level now on its line."""

    rate: SlopeEstimate
    level: float
    noise: float = 0.0
    """Robust standard deviation of the level around the line."""


def level_now(
    hours: FloatArray, adjusted: FloatArray, slope: float, params: ForecastParams
) -> float:
    """Usage at ``at`` on the line through the recent peaks (the high quantile of residuals)."""
    recent = hours > hours[-1] - params.level_hours
    residuals = adjusted[recent] - slope * hours[recent]
    return float(np.quantile(residuals, params.level_quantile))


def robust_noise(hours: FloatArray, smooth: FloatArray, slope: float) -> float:
    """Robust standard deviation (MAD) of the deseasonalized series around its line."""
    residuals = smooth - slope * hours
    return 1.4826 * float(np.median(np.abs(residuals - np.median(residuals))))


def rate_error(hours: FloatArray, adjusted: FloatArray, params: ForecastParams) -> float:
    """Root mean square of the back-tests' rate misses in this volume's own history
    (``backtest_rate_errors``; NaN without a back-test): what the fitted rate can be
    expected to miss the future rate by."""
    errors = backtest_rate_errors(hours, adjusted, params.fit_hours)
    return float(np.sqrt(np.mean(errors * errors))) if errors.size else math.nan


def rate_drift(hours: FloatArray, adjusted: FloatArray, params: ForecastParams) -> float:
    """How fast the rate itself changes, per hour, in log terms: the Theil-Sen slope of the
    logarithm of each whole day's growth rate (days counted back from the newest point; a
    whole day holds a whole daily cycle, so the cycle cancels) against the day's middle,
    in absolute value. Theil-Sen, so a day or two of weekend among a week's days bends it
    little. 0 with fewer than ``DRIFT_MIN_DAYS`` days of positive growth (each at least half
    covered): no ratio to take.

    The sign is dropped: a week cannot tell a trend (acceleration) from a cycle (a weekend
    at its end), so the band uses the drift both ways (``_drift_band``)."""
    end = float(hours[-1])
    middles, logs = [], []
    start = end - DAY_HOURS
    while start >= hours[0] - 1.0:
        day = (hours > start) & (hours <= start + DAY_HOURS)
        if np.count_nonzero(day) >= DAY_HOURS / 2:
            span = float(hours[day][-1] - hours[day][0])
            growth = float(adjusted[day][-1] - adjusted[day][0])
            if growth > 0 and span > 0:
                middles.append(start + DAY_HOURS / 2)
                logs.append(math.log(growth / span))
        start -= DAY_HOURS
    if len(middles) < DRIFT_MIN_DAYS:
        return 0.0
    x = np.asarray(middles[::-1], dtype=np.float64)
    y = np.asarray(logs[::-1], dtype=np.float64)
    trend = theil_sen(x, y, params.confidence)
    bound = max(abs(trend.low), abs(trend.high))
    return bound if math.isfinite(bound) else abs(trend.slope)


def fill_forecast(
    candidates: Sequence[Candidate],
    capacity: float,
    params: ForecastParams,
    rate_miss: float = math.nan,
    *,
    open_ended: bool = False,
    counts: tuple[int, int] = (0, 0),
    drift: float = 0.0,
) -> VolumeForecast:
    """A growing volume: the earliest of the candidates' fill times, the band spanning all
    of theirs (``open_ended``: no late side, growth may have stopped); ``drift``: the rate's
    relative change per hour (``rate_drift``), which widens the band both ways."""
    z = NormalDist().inv_cdf(0.5 + params.confidence / 2)
    times = [
        _drift_band(candidate, capacity, drift, _crossing(candidate, capacity, rate_miss, z))
        for candidate in candidates
    ]
    best = min(range(len(times)), key=lambda index: times[index][0])
    hours_to_full = times[best][0]
    low = min(time[1] for time in times)
    highs = [time[2] for time in times]
    high = None if open_ended or None in highs else max(h for h in highs if h is not None)
    rate = candidates[best].rate
    beyond = hours_to_full > params.horizon_hours
    return VolumeForecast(
        Trend.GROWING,
        rate.slope,
        rate.low,
        rate.high,
        candidates[best].level,
        None if beyond else hours_to_full,
        None if low > params.horizon_hours else low,
        None if beyond else high,
        *counts,
    )


def _drift_band(
    candidate: Candidate,
    capacity: float,
    drift: float,
    band: tuple[float, float, float | None],
) -> tuple[float, float, float | None]:
    """Widen ``band`` (point, earliest, latest) to the paths on which the rate keeps
    changing at ``drift`` per hour (log-rate linear in time), up or down.

    Rate ``r e^(+k t)``: full when ``r (e^(k t) - 1) / k`` reaches the room left, i.e. at
    ``ln(1 + room k / r) / k``; rate ``r e^(-k t)`` levels off at ``r / k`` more, so it
    never fills when the room is larger, else at ``-ln(1 - room k / r) / k``."""
    point, low, high = band
    rate = candidate.rate.slope
    if not (drift > 0 and rate > 0):
        return band
    room = max(capacity - candidate.level, 0.0) * drift / rate
    low = min(low, math.log1p(room) / drift)
    if high is not None:
        high = None if room >= 1.0 else max(high, -math.log1p(-room) / drift)
    return point, low, high


def _crossing(
    candidate: Candidate, capacity: float, rate_miss: float, z: float
) -> tuple[float, float, float | None]:
    """(hours to full, earliest, latest) for one candidate.

    The rate's standard error is the larger of Sen's interval (estimation alone) and the
    back-tested miss (estimation, daily and weekly cycles and rate changes together).
    """
    rate = candidate.rate
    remaining = max(capacity - candidate.level, 0.0)
    hours_to_full = remaining / rate.slope
    sen = (rate.high - rate.low) / (2 * z)
    if not math.isfinite(sen):
        low = remaining / rate.high if math.isfinite(rate.high) else 0.0
        return hours_to_full, low, None
    sigma_rate = max(sen, rate_miss) if math.isfinite(rate_miss) else sen
    low, high = crossing_band(remaining, rate.slope, candidate.noise, sigma_rate, z)
    return hours_to_full, low, high
