"""The forecast's vocabulary: its parameters, the trends it names and its result.

Pure data, shared by the forecast (``trend``), its calibrated band
(``conformal_bands``) and the backtest; ``trend`` re-exports all of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class Trend(StrEnum):
    """The sign and significance of the trend's slope, or why there is none.

    Any positive slope gets a fill time when its line reaches capacity within the horizon;
    the trend says whether the slope is significantly positive (``growing``) or not
    (``flat``), and it picks the calibration set of the band."""

    GROWING = "growing"
    """The slope's interval lies above zero."""
    FLAT = "flat"
    """The slope's interval holds zero."""
    SHRINKING = "shrinking"
    """The slope's interval lies below zero."""
    INSUFFICIENT_DATA = "insufficient-data"
    FULL = "full"
    """Already full now: hours to full is 0."""
    RETIRED = "retired"
    """The broker left (a tombstone after its last snapshot) or has been silent too long:
    flagged, not forecast."""
    ERROR = "error"
    """The forecast of this volume failed; the reason says why. The other volumes are fine."""


TREND, MECHANISM = "trend", "mechanism"
"""The forecast methods (the ``method`` column): the trend of a volume's total, or the
mechanism of its topics; ``mechanism`` also names the class the mechanism's band is calibrated
by."""

FITTED_TRENDS: tuple[Trend, ...] = (Trend.GROWING, Trend.FLAT, Trend.SHRINKING)
"""The trends a fitted line has: the classes the band is calibrated by."""


@dataclass(frozen=True, slots=True)
class ForecastParams:
    """Tuning of the forecast; the defaults are the documented ones (docs/history.md)."""

    lookback_hours: float = 7 * 24.0
    fit_hours: float = 72.0
    """The trend's window: the least-squares line over these last hours."""
    horizon_hours: float = 60 * 24.0
    confidence: float = 0.90
    """Of the slope's interval, which sorts it into growing, flat or shrinking."""
    min_hours_of_data: float = 12.0
    band_coverage: float = 0.90
    """The calibrated band's nominal coverage (split conformal, ``conformal_bands``)."""
    calibration_step_hours: float = 6.0
    """Hours between the past origins whose errors calibrate the band."""
    calibration_horizons_hours: tuple[float, ...] = (6.0, 24.0, 72.0)
    """The horizons at which those errors are measured (each within the lookback)."""
    calibration_volumes: int = 2000
    """At most this many volumes calibrate each band: a fixed sample, by a hash of their key
    (``spark_trend.sampled_volumes``). A quantile's error shrinks with the sample's size,
    not the fleet's, so a larger fleet calibrates at the sample's cost."""
    full_free_fraction: float = 0.001
    """A volume whose newest snapshot has at most this fraction of capacity free is full."""
    retired_after_hours: float = 24.0
    """A volume without a snapshot for longer than this before ``at`` is retired (silent)."""
    bucket_seconds: float = 3600.0
    """The width of the forecast's hour: the history is cut into buckets this wide and every
    duration above counts buckets (a minute lets a cluster run in compressed time be scored
    like a day of hours)."""


@dataclass(frozen=True, slots=True)
class VolumeForecast:
    """The forecast of one volume; hours are counted from ``at``."""

    trend: Trend
    slope_per_hour: float
    slope_low: float
    slope_high: float
    level: float
    hours_to_full: float | None
    hours_to_full_low: float | None
    hours_to_full_high: float | None
    band: str | None = None
    """Which band ``hours_to_full_low``/``high`` are (None: no band)."""


def no_fill(
    trend: Trend,
    level: float,
    slope: tuple[float, float, float] = (math.nan, math.nan, math.nan),
) -> VolumeForecast:
    """A forecast without a fill time; ``slope`` = (rate, low, high) when one was fitted."""
    rate, low, high = slope
    return VolumeForecast(trend, rate, low, high, level, None, None, None)
