"""The envelope forecast's vocabulary: its parameters, the trends it names and its result.

Pure data, shared by the forecast's steps (``envelope_forecast``, ``growth_evidence``,
``envelope_band``, ``envelope_steps``); ``envelope_forecast`` re-exports all of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class Trend(StrEnum):
    """What the envelope is doing; only the ``GROWING`` trends get a fill time."""

    GROWING = "growing"
    GROWING_LINE_FLOOR = "growing-line-floor"
    """The envelope method saw no fill (or a later one) without strong evidence of a stop,
    and a plain line over the last ``fit_hours`` fills within the horizon: the line's fill
    time is reported (``envelope_floor``)."""
    GROWING_NEXT_DAY = "growing-next-day"
    """Yesterday's climb from this hour, repeated from the level now, fills within
    ``next_day_hours``, before any other fill time (``envelope_next_day``)."""
    GROWING_SHORT_LINE = "growing-short-line"
    """The least-squares line over the last ``short_window_hours`` (node_exporter's alert)
    fills within ``short_line_alert_hours``, before any other fill time (``envelope_windows``)."""
    PLATEAU = "plateau"
    """Growth stopped for longer than ``stop_hours`` (retention reached)."""
    RETENTION = "retention"
    """Sawtooth: retention drops and peaks that do not rise."""
    FLAT = "flat"
    """No significant growth over the fit window nor over the longer window."""
    SHRINKING = "shrinking"
    INSUFFICIENT_DATA = "insufficient-data"
    FULL = "full"
    """Already full now: hours to full is 0."""
    RETIRED = "retired"
    """The broker left (a tombstone after its last snapshot) or has been silent too long:
    flagged, not forecast."""
    ERROR = "error"
    """The forecast of this volume failed; the reason says why. The other volumes are fine."""


@dataclass(frozen=True, slots=True)
class ForecastParams:
    """Tuning of the forecast; the defaults are the documented ones (docs/history.md)."""

    lookback_hours: float = 7 * 24.0
    fit_hours: float = 72.0
    horizon_hours: float = 60 * 24.0
    confidence: float = 0.90
    min_hours_of_data: float = 12.0
    jump_sigmas: float = 8.0
    min_jump_fraction: float = 0.005
    level_quantile: float = 0.9
    level_hours: float = 48.0
    recent_hours: float = 12.0
    """A rate over the last ``recent_hours`` significantly above the window's replaces it."""
    knee_fraction: float = 0.5
    """Growth has stopped when the last ``stop_hours`` grew at under this fraction of the
    rate before, and not significantly."""
    stop_hours: float = 48.0
    """How long growth must have stopped before it is a plateau: two daily cycles, the length
    of a weekend. A shorter lull (a night, a quiet day, a weekend) is a slowdown: the fill
    time stands, with an open-ended band."""
    held_drops: int = 2
    """A retention ceiling is strong evidence of no fill (the line floor does not override
    it) once at least this many drops cut usage at it (within a noise tolerance)."""
    replacement_fraction: float = 0.1
    """An hour whose minimum is under this fraction of capacity, after an hour whose maximum
    was over three times it, is a disk replacement: the history before is not this disk's."""
    replacement_settle_hours: float = 8.0
    """Re-replication after a replacement: hours skipped after the collapse."""
    weekly_min_hours: float = 160.0
    """History needed (about a week) for the long-window rate, which averages a weekly
    cycle, to stand beside the rate over ``fit_hours``."""
    full_free_fraction: float = 0.001
    """A volume whose newest snapshot has at most this fraction of capacity free is full."""
    next_day_hours: float = 24.0
    """How far ahead yesterday's climb is repeated from the level now (``envelope_next_day``):
    one daily cycle."""
    short_window_hours: float = 6.0
    """The short line's window (``envelope_windows``): node_exporter's ``predict_linear``."""
    short_line_alert_hours: float = 24.0
    """How soon the short line must fill to be reported: node_exporter's alert's 24 h."""
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
    steps: int
    drops: int


def no_fill(
    trend: Trend,
    level: float,
    slope: tuple[float, float, float] = (math.nan, math.nan, math.nan),
    steps: int = 0,
    drops: int = 0,
) -> VolumeForecast:
    """A forecast without a fill time; ``slope`` = (rate, low, high) when one was fitted."""
    rate, low, high = slope
    return VolumeForecast(trend, rate, low, high, level, None, None, None, steps, drops)
