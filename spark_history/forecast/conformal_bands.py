"""Calibrated bands: split conformal prediction on the errors of rolling-origin backtests.

A forecast made at a past origin of the fleet's own history is scored against what followed:
its **signed level error** at horizon ``h`` is ``(bucket maximum at origin + h - predicted used
bytes at h) / capacity``. Per trend (``growing``, ``flat``, ``shrinking``: the sign and
significance of the slope) and horizon, these errors are the calibration set of split
conformal prediction: with ``n`` errors sorted, the band at coverage ``1 - alpha`` is the
``floor((n + 1) alpha / 2)``-th smallest to the ``ceil((n + 1) (1 - alpha / 2))``-th smallest
error added to the prediction. When a new forecast's error is exchangeable with the
calibration errors, each side is crossed with probability at most ``alpha / 2``, so the band
holds the truth at least ``1 - alpha`` of the time; with too few errors for a side, that side
is infinite (open).

Why the level at a horizon and not the fill time: every origin gives a level error at every
horizon the history reaches, whether or not the volume filled; a fill-time error exists only
for the few origins followed by a fill, too few to calibrate on. Errors are in fractions of
capacity so that volumes of different sizes pool.

The band on the fill time follows from the level band: its early side is the first hour at
which the upper side of the level band reaches the limit, its late side the first hour at
which the lower side does. Between calibrated horizons the error quantiles are interpolated
linearly (the first horizon's below it); past the last calibrated horizon the early side
scales that horizon's upper quantile with time, and the late side is open (no error was
measured that far ahead). Pure numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def conformal_bounds(errors: FloatArray, coverage: float) -> tuple[float, float]:
    """(lower, upper) split-conformal quantiles of ``errors`` at two-sided ``coverage``;
    -inf / inf when there are too few errors for that side."""
    if not 0 < coverage < 1:
        raise ValueError(f"coverage must be in (0, 1): {coverage}")
    ordered = np.sort(np.asarray(errors, dtype=np.float64))
    n = ordered.size
    tail = (1.0 - coverage) / 2.0
    upper_rank = math.ceil((n + 1) * (1.0 - tail) - 1e-9)
    lower_rank = math.floor((n + 1) * tail + 1e-9)
    upper = float(ordered[upper_rank - 1]) if 1 <= upper_rank <= n else math.inf
    lower = float(ordered[lower_rank - 1]) if 1 <= lower_rank <= n else -math.inf
    return lower, upper


@dataclass(frozen=True, slots=True)
class Sample:
    """One backtest error: the trend at the origin, the horizon, the signed level error
    (fraction of capacity)."""

    trend: str
    horizon_hours: float
    error: float


@dataclass(frozen=True, slots=True)
class Calibration:
    """Split-conformal bounds per (trend, horizon), from backtest errors."""

    coverage: float
    bounds: Mapping[tuple[str, float], tuple[float, float]]
    counts: Mapping[tuple[str, float], int] = field(default_factory=dict)

    @classmethod
    def of(cls, samples: Iterable[Sample], coverage: float = 0.9) -> Calibration:
        groups: dict[tuple[str, float], list[float]] = {}
        for sample in samples:
            if math.isfinite(sample.error):
                groups.setdefault((sample.trend, sample.horizon_hours), []).append(sample.error)
        bounds = {
            key: conformal_bounds(np.asarray(values, dtype=np.float64), coverage)
            for key, values in groups.items()
        }
        return cls(coverage, bounds, {key: len(values) for key, values in groups.items()})

    def horizons(self, trend: str) -> list[float]:
        """The calibrated horizons of ``trend`` (both sides finite), ascending."""
        return sorted(
            horizon
            for (name, horizon), (low, high) in self.bounds.items()
            if name == trend and math.isfinite(low) and math.isfinite(high)
        )

    def errors_at(self, trend: str, hours: FloatArray) -> tuple[FloatArray, FloatArray] | None:
        """(lower, upper) level-error bounds at ``hours`` (interpolated; the upper side
        scaled with time past the last horizon, the lower side NaN there); None when the
        trend has no calibrated horizon."""
        horizons = self.horizons(trend)
        if not horizons:
            return None
        lows = np.array([self.bounds[(trend, h)][0] for h in horizons])
        highs = np.array([self.bounds[(trend, h)][1] for h in horizons])
        last = horizons[-1]
        lower = np.interp(hours, horizons, lows)
        upper = np.interp(hours, horizons, highs)
        beyond = hours > last
        upper = np.where(beyond, highs[-1] * np.maximum(hours, 1e-9) / last, upper)
        if highs[-1] < 0:  # an upper bound below the line does not shrink with time
            upper = np.where(beyond, highs[-1], upper)
        lower = np.where(beyond, np.nan, lower)
        return lower.astype(np.float64), upper.astype(np.float64)


def crossing_band(
    calibration: Calibration,
    trend: str,
    *,
    level: float,
    slope: float,
    limit: float,
    capacity: float,
    horizon_hours: float,
    resolution_hours: float = 0.25,
) -> tuple[float, float | None] | None:
    """The band on the time at which the line ``level + slope t`` reaches ``limit``:
    :func:`path_crossing_band` of that line."""
    return path_crossing_band(
        calibration,
        trend,
        path=lambda hours: level + slope * hours,
        limit=limit,
        capacity=capacity,
        horizon_hours=horizon_hours,
        resolution_hours=resolution_hours,
    )


def path_crossing_band(
    calibration: Calibration,
    trend: str,
    *,
    path: Callable[[FloatArray], FloatArray],
    limit: float,
    capacity: float,
    horizon_hours: float,
    resolution_hours: float = 0.25,
) -> tuple[float, float | None] | None:
    """The band on the time at which the predicted used bytes ``path(hours)`` reach ``limit``:
    (early, late), late None when open (the lower side of the level band does not reach the
    limit within the calibrated horizons); None when ``trend`` has no calibration, or when the
    upper side does not reach the limit within ``horizon_hours``."""
    steps = max(math.ceil(horizon_hours / resolution_hours), 1)
    hours = np.linspace(0.0, horizon_hours, steps + 1)
    errors = calibration.errors_at(trend, hours)
    if errors is None:
        return None
    lower, upper = errors
    predicted = path(hours)
    early_hits = np.flatnonzero(predicted + upper * capacity >= limit)
    if early_hits.size == 0:
        return None
    late_hits = np.flatnonzero(predicted + np.nan_to_num(lower, nan=-np.inf) * capacity >= limit)
    early = float(hours[early_hits[0]])
    late = float(hours[late_hits[0]]) if late_hits.size else None
    return early, late
