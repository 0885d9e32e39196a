"""Robust slope tools for the envelope forecast: Theil-Sen with an honest interval, and the
removal of a daily cycle before fitting. Pure numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class SlopeEstimate:
    slope: float
    low: float
    high: float


def theil_sen(x: FloatArray, y: FloatArray, confidence: float = 0.90) -> SlopeEstimate:
    """Median pairwise slope with Sen's interval on an autocorrelation-corrected sample size."""
    n = x.size
    if n < 2:
        return SlopeEstimate(0.0, -math.inf, math.inf)
    first, second = np.triu_indices(n, k=1)
    dx = x[second] - x[first]
    usable = dx != 0
    slopes = np.sort((y[second] - y[first])[usable] / dx[usable])
    if slopes.size == 0:
        return SlopeEstimate(0.0, -math.inf, math.inf)
    slope = float(np.median(slopes))
    intercept = float(np.median(y - slope * x))
    n_eff = effective_size(y - slope * x - intercept)
    if n_eff < 3:
        return SlopeEstimate(slope, -math.inf, math.inf)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    pairs_eff = n_eff * (n_eff - 1) / 2
    spread = z * math.sqrt(n_eff * (n_eff - 1) * (2 * n_eff + 5) / 18) / (2 * pairs_eff)
    if not spread < 0.5:  # also NaN
        return SlopeEstimate(slope, -math.inf, math.inf)
    low, high = np.quantile(slopes, [0.5 - spread, 0.5 + spread])
    return SlopeEstimate(slope, float(low), float(high))


def effective_size(residuals: FloatArray) -> float:
    """AR(1) effective sample size: n (1 - rho) / (1 + rho), rho the lag-1 autocorrelation."""
    n = residuals.size
    centred = residuals - residuals.mean()
    denominator = float(np.dot(centred, centred))
    if n < 3 or denominator == 0:
        return float(n)
    rho = float(np.dot(centred[1:], centred[:-1])) / denominator
    rho = min(max(rho, 0.0), 0.95)
    return n * (1 - rho) / (1 + rho)


def without_daily_cycle(hours: FloatArray, values: FloatArray) -> FloatArray:
    """Subtract the daily cycle (24 h and 12 h harmonics of the detrended series).

    A daily cycle is deterministic, not noise: left in, it makes the residuals look strongly
    autocorrelated and the slope's interval uselessly wide. Four harmonic coefficients, not an
    hour-of-day profile: a 24-value profile fitted on three days would absorb the noise too
    and make the interval falsely narrow. Needs two days of data.
    """
    if hours.size < 24 or hours[-1] - hours[0] < 47:
        return values
    hour_of_day = np.mod(np.floor(hours), 24).astype(np.int64)
    # The seasonal Sen slope (pairs at the same hour of day, whole days apart) is blind to
    # the cycle, so the harmonics below are not tilted by a biased trend.
    first, second = np.triu_indices(hours.size, k=1)
    same_hour = hour_of_day[first] == hour_of_day[second]
    first, second = first[same_hour], second[same_hour]
    if first.size < 24:
        # A gap can leave no hour of the day seen twice in the window (e.g. 48 h missing
        # that ended within the last day): no seasonal slope, so the cycle cannot be
        # separated from the trend. Leave the series as it is.
        return values
    rough_slope = float(
        np.median((values[second] - values[first]) / (hours[second] - hours[first]))
    )
    residuals = values - rough_slope * hours
    angle = 2 * math.pi * hours / 24.0
    design = np.column_stack(
        [np.ones_like(hours), np.sin(angle), np.cos(angle), np.sin(2 * angle), np.cos(2 * angle)]
    )
    coefficients, *_ = np.linalg.lstsq(design, residuals, rcond=None)
    cycle = design[:, 1:] @ coefficients[1:]
    deseasonalized: FloatArray = values - cycle
    return deseasonalized


def backtest_rate_errors(
    hours: FloatArray,
    values: FloatArray,
    fit_hours: float,
    *,
    every_hours: float = 6.0,
    min_train_hours: float = 24.0,
    level_hours: float = 6.0,
) -> FloatArray:
    """How far the fitted rate missed the growth that followed, inside this history.

    Origins every ``every_hours`` back from the newest point: at each origin ``o``, the slope
    is fitted as the forecast fits it (Theil-Sen on the last ``fit_hours`` before ``o``,
    daily cycle removed) and compared with the growth realised from ``o`` to the newest
    point: the change of the series' level (median of ``level_hours`` of the deseasonalized
    series) divided by the hours between. Returns realised minus fitted rate, one per origin
    (the newest origins first); the spread of these is what a rate fitted now can be expected
    to miss by, rate changes (weekly cycles, acceleration) included.
    """
    if hours.size < 2:
        return np.empty(0)
    smooth = without_daily_cycle(hours, values)
    end = float(hours[-1])
    newest = hours > end - level_hours
    end_hour, end_level = float(np.median(hours[newest])), float(np.median(smooth[newest]))
    errors = []
    origin = end - 2 * level_hours
    while origin - hours[0] >= min_train_hours:
        train = (hours <= origin) & (hours > origin - fit_hours)
        at_origin = (hours <= origin) & (hours > origin - level_hours)
        if np.count_nonzero(train) >= min_train_hours / 2 and np.any(at_origin):
            fitted = theil_sen(hours[train], without_daily_cycle(hours[train], values[train]))
            start_hour = float(np.median(hours[at_origin]))
            realised = (end_level - float(np.median(smooth[at_origin]))) / (end_hour - start_hour)
            errors.append(realised - fitted.slope)
        origin -= every_hours
    return np.asarray(errors, dtype=np.float64)


def crossing_band(
    remaining: float, slope: float, sigma_level: float, sigma_rate: float, z: float
) -> tuple[float, float | None]:
    """When a path ``slope * t`` with uncertainty ``sqrt(sigma_level^2 + (sigma_rate t)^2)``
    crosses ``remaining``: (earliest, latest) at ``z`` standard deviations; latest None when
    the rate may be zero at that confidence (the path may never cross).

    Solves ``(remaining - slope t)^2 = z^2 (sigma_level^2 + sigma_rate^2 t^2)`` for t.
    """
    a = slope * slope - (z * sigma_rate) ** 2
    c = remaining * remaining - (z * sigma_level) ** 2
    if c <= 0:
        low = 0.0
    else:
        disc = max(remaining * remaining * slope * slope - a * c, 0.0)
        low = c / (remaining * slope + math.sqrt(disc))
    if a <= 0:
        return low, None
    disc = max(remaining * remaining * slope * slope - a * c, 0.0)
    high = (remaining * slope + math.sqrt(disc)) / a
    return low, high
