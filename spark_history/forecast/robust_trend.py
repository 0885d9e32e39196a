"""The no-usage forecast's trend: a least-squares line over the last hours (Prometheus
``predict_linear``) with an honest interval on its slope; and Theil-Sen, the median of
pairwise slopes, with Sen's interval. Pure numpy.
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


@dataclass(frozen=True, slots=True)
class TrendLine:
    """A line ``level + slope * t`` at ``t`` buckets after the origin, with a confidence
    interval (``low``, ``high``) on the slope."""

    slope: float
    low: float
    high: float
    level: float

    def used_at(self, hours: float) -> float:
        return self.level + self.slope * hours

    def crossing(self, limit: float, horizon_hours: float) -> float | None:
        """Hours until the line reaches ``limit``: 0 when already there; None when it does
        not within ``horizon_hours``."""
        if self.level >= limit:
            return 0.0
        if not self.slope > 0:
            return None
        hours = (limit - self.level) / self.slope
        return hours if hours <= horizon_hours else None


def trend_line(
    hours: FloatArray,
    values: FloatArray,
    *,
    window_hours: float = 72.0,
    confidence: float = 0.90,
) -> TrendLine | None:
    """The least-squares line through the samples of the last ``window_hours`` (``hours``
    relative to the origin, <= 0), its value at the origin as the level: Prometheus
    ``predict_linear`` over that window. The slope's interval uses the standard error on
    the autocorrelation-corrected sample size (:func:`effective_size`). None with fewer than
    three samples in the window."""
    recent = (hours > -window_hours) & (hours <= 0)
    x, y = hours[recent], values[recent]
    if x.size < 3 or float(np.ptp(x)) == 0.0:
        return None
    slope, level = (float(value) for value in np.polyfit(x, y, 1))
    residuals = y - (level + slope * x)
    scale = float(np.max(np.abs(y)))
    if float(np.max(np.abs(residuals))) <= 1e-9 * scale:
        if abs(slope) * float(np.ptp(x)) <= 1e-9 * scale:
            # A constant: polyfit's slope is rounding noise (1e-17), which must not read as
            # growth or shrinkage.
            return TrendLine(0.0, 0.0, 0.0, float(np.mean(y)))
        return TrendLine(slope, slope, slope, level)  # an exact line: nothing to doubt
    n_eff = effective_size(residuals)
    spread = float(np.sum((x - x.mean()) ** 2))
    if n_eff <= 2 or spread == 0.0:
        return TrendLine(slope, -math.inf, math.inf, level)
    variance = float(np.dot(residuals, residuals)) / (x.size - 2)
    error = math.sqrt(variance / spread * x.size / n_eff)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return TrendLine(slope, slope - z * error, slope + z * error, level)
