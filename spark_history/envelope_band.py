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
)


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


def fill_forecast(
    candidates: Sequence[Candidate],
    capacity: float,
    params: ForecastParams,
    rate_miss: float = math.nan,
    *,
    open_ended: bool = False,
    counts: tuple[int, int] = (0, 0),
) -> VolumeForecast:
    """A growing volume: the earliest of the candidates' fill times, the band spanning all
    of theirs (``open_ended``: no late side, growth may have stopped)."""
    z = NormalDist().inv_cdf(0.5 + params.confidence / 2)
    times = [_crossing(candidate, capacity, rate_miss, z) for candidate in candidates]
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
