"""When will one volume fill? A robust trend on the upper envelope of its usage.

Pure numpy on one volume's hourly maxima; Spark (``forecast.py``) and the single-process pandas
reference (``pandas_forecast.py``) both call :func:`forecast_hourly`, so they cannot disagree.

Why not a least-squares line over the last hours (Prometheus ``predict_linear``): Kafka usage is
not a line. Retention deletes whole segments, so usage climbs and drops in a sawtooth and then
plateaus; traffic has daily cycles, so a 6-hour slope is mostly the phase of the day; a new
topic adds a step that a line reads as fast growth. The method here:

1. **Upper envelope.** Hourly maxima of consumed bytes: a disk fills at a peak, not on average.
2. **Steps out, drops kept.** Each hour-to-hour change is compared with the changes at the same
   hour of the other days (so a daily cycle's own rises and falls hide nothing); a change beyond
   ``jump_sigmas`` robust standard deviations and ``min_jump_fraction`` of capacity is a jump.
   A jump up is a step (new topic): the older points are shifted up by it, so it raises the
   level but not the rate. A jump down is a retention drop.
3. **Retention regime.** With drops, usage below the ceiling where it was cut before is a
   retention cycle (no fill) unless three or more whole teeth show significantly rising peaks;
   usage above the old ceiling is fitted from the last drop on.
4. **Robust slope.** Theil-Sen (median of pairwise slopes) over the last ``fit_hours`` (three
   daily cycles) after subtracting the daily cycle (24 h and 12 h harmonics, detrended with the
   seasonal Sen slope), with Sen's interval on an effective sample size that accounts for the
   autocorrelation of the residuals (hourly points are not independent; an interval that
   ignored it would be far too narrow).
5. **Plateau tests.** No fill when the interval reaches zero (flat), lies below zero
   (shrinking), or when the last ``recent_hours`` grew at under ``knee_fraction`` of the fitted
   rate although that rate would have shown above the noise (retention reached inside the
   window). A recent rate significantly above the window's replaces it (a new heavy topic).
6. **Level and time.** The level at ``at`` is the fitted line through the high quantile of the
   recent residuals (a disk fills at the daily peak). hours = (capacity - level) / slope.
   Past the horizon there is no forecast.
7. **Band.** Back-tests inside the volume's own history (origins every 6 h: fit the rate as
   above on the data before the origin, compare with the growth realised from there to
   now) give the rate's typical miss (root mean square); the rate's standard error is the
   larger of that and Sen's interval. The band is where usage, ``level + slope t`` give or
   take ``z sqrt(noise^2 + (sigma_rate t)^2)``, crosses capacity: the level's noise matters
   for a fill within hours, the rate's error for one weeks out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from statistics import NormalDist

import numpy as np

from spark_history.envelope_steps import Teeth, after_replacement, remove_steps, teeth_of
from spark_history.robust_trend import (
    FloatArray,
    SlopeEstimate,
    backtest_rate_errors,
    crossing_band,
    theil_sen,
    without_daily_cycle,
)


class Trend(StrEnum):
    """What the envelope is doing; only ``GROWING`` volumes can get a fill time."""

    GROWING = "growing"
    PLATEAU = "plateau"
    """Growth stopped inside the window (retention reached)."""
    RETENTION = "retention"
    """Sawtooth: retention drops and peaks that do not rise."""
    FLAT = "flat"
    """No significant growth (an idle volume, or noise)."""
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
    knee_fraction: float = 0.5
    """Plateau when the last ``recent_hours`` grew significantly slower than this fraction of
    the fitted slope."""
    replacement_fraction: float = 0.1
    """An hour whose minimum is under this fraction of capacity, after an hour whose maximum
    was over three times it, is a disk replacement: the history before is not this disk's."""
    replacement_settle_hours: float = 8.0
    """Re-replication after a replacement: hours skipped after the collapse."""
    weekly_min_hours: float = 160.0
    """History needed (about a week) before the weekly rate may replace a flat 72 h fit."""
    weekly_recent_fraction: float = 0.2
    full_free_fraction: float = 0.001
    """A volume whose newest snapshot has at most this fraction of capacity free is full."""
    retired_after_hours: float = 24.0
    """A volume without a snapshot for longer than this before ``at`` is retired (silent)."""


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


def hour_bucket(hours: FloatArray) -> FloatArray:
    """The hour bucket of samples (hours relative to ``at``, <= 0): (-1, 0] is bucket 0."""
    buckets: FloatArray = np.ceil(hours)
    return buckets


def bucket_midpoint(buckets: FloatArray) -> FloatArray:
    """Where a bucket's maximum is placed on the time axis."""
    midpoints: FloatArray = buckets - 0.5
    return midpoints


def hourly_maxima(hours: FloatArray, consumed: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Bucket samples (hours relative to ``at``) into whole hours; (bucket midpoints, maxima)."""
    buckets = hour_bucket(hours)
    order = np.argsort(buckets, kind="stable")
    buckets, values = buckets[order], consumed[order]
    unique, starts = np.unique(buckets, return_index=True)
    maxima = np.maximum.reduceat(values, starts) if values.size else values
    return bucket_midpoint(unique), maxima.astype(np.float64)


def forecast_hourly(
    bucket_hours: FloatArray,
    maxima: FloatArray,
    capacity: float,
    params: ForecastParams | None = None,
    *,
    minima: FloatArray | None = None,
) -> VolumeForecast:
    """Forecast one volume from its hourly maxima (``bucket_hours`` relative to ``at``, < 0);
    the hourly minima, when given, reveal a disk replacement the maxima hide."""
    params = params or ForecastParams()
    order = np.argsort(bucket_hours)
    hours = np.asarray(bucket_hours, dtype=np.float64)[order]
    values = np.asarray(maxima, dtype=np.float64)[order]
    lows = values if minima is None else np.asarray(minima, dtype=np.float64)[order]
    keep = (hours > -params.lookback_hours) & (hours <= 0)
    hours, values = after_replacement(hours[keep], values[keep], lows[keep], capacity, params)
    if (
        hours.size < 2
        or hours[-1] - hours[0] < params.min_hours_of_data
        or hours.size < (params.min_hours_of_data / 2)
    ):
        level = float(values[-1]) if values.size else math.nan
        return _no_fill(Trend.INSUFFICIENT_DATA, level)

    adjusted, steps, drop_mask, jump_threshold = remove_steps(hours, values, capacity, params)
    drops = int(drop_mask.sum())
    fit_start = hours[-1] - params.fit_hours
    # After a gap, reach back whole days until the window holds half its hours of data.
    while np.count_nonzero(hours > fit_start) < params.fit_hours / 2 and fit_start > hours[0]:
        fit_start -= 24.0
    segment_start = -math.inf
    if drops:
        teeth = teeth_of(hours, adjusted, drop_mask)
        # A quarter of a typical drop above the old ceiling is a new regime, not jitter.
        tolerance = max(jump_threshold, 0.25 * teeth.typical_drop)
        if teeth.tail_peak <= teeth.previous_peak + tolerance:
            return _retention(teeth, capacity, params, steps, drops)
        # Climbed past its old ceiling: only the climb since the last drop tells the rate.
        if np.count_nonzero(hours > teeth.last_drop_hour) >= params.min_hours_of_data / 2:
            fit_start = max(fit_start, teeth.last_drop_hour - 1.0)
            segment_start = teeth.last_drop_hour - 1.0
    return _fit_trend(
        hours, adjusted, (fit_start, segment_start), capacity, params, counts=(steps, drops)
    )


def _retention(
    teeth: Teeth, capacity: float, params: ForecastParams, steps: int, drops: int
) -> VolumeForecast:
    """Below the ceiling where retention (or a clean-up) cut usage before."""
    level = float(teeth.tail_peak)
    if teeth.complete.shape[1] < 3:
        return _no_fill(Trend.RETENTION, level, None, steps, drops)
    peaks = theil_sen(teeth.complete[0], teeth.complete[1], params.confidence)
    if not peaks.low > 0:
        return _no_fill(Trend.RETENTION, level, peaks, steps, drops)
    # The ceiling itself rises: fill when the peaks' line reaches capacity.
    level = float(teeth.complete[1][-1]) - peaks.slope * float(teeth.complete[0][-1])
    return _fill(peaks, level, capacity, params, steps=steps, drops=drops)


def _fit_trend(
    hours: FloatArray,
    adjusted: FloatArray,
    starts: tuple[float, float],
    capacity: float,
    params: ForecastParams,
    *,
    counts: tuple[int, int],
) -> VolumeForecast:
    """``starts``: where the fit window begins, and where the regime it belongs to begins
    (after the last retention drop; the back-tests of the band use all of it)."""
    steps, drops = counts
    fit_start, segment_start = starts
    in_fit = hours > fit_start
    fit_hours = hours[in_fit]
    smooth = without_daily_cycle(fit_hours, adjusted[in_fit])
    estimate = theil_sen(fit_hours, smooth, params.confidence)
    recent = fit_hours > fit_hours[-1] - params.recent_hours
    recent_estimate = theil_sen(fit_hours[recent], smooth[recent], params.confidence)
    if recent_estimate.low > estimate.high:
        # Growth accelerated inside the window (a new heavy topic): the recent rate rules.
        estimate = recent_estimate
    level = _level(hours[in_fit], adjusted[in_fit], estimate.slope, params)
    if estimate.high < 0:
        return _no_fill(Trend.SHRINKING, level, estimate, steps, drops)
    stopped = estimate.low > 0 and _growth_stopped(
        fit_hours, smooth, estimate, recent_estimate, params
    )
    if estimate.low > 0 and not stopped:
        spread = _spread(hours[hours > segment_start], adjusted[hours > segment_start], params)
        noise = _noise(fit_hours, smooth, estimate.slope)
        return _fill(estimate, level, capacity, params, (noise, spread), steps=steps, drops=drops)
    # A knee (growth stopped inside the window) is a plateau even if the week grew: only a
    # window that looks flat overall may be the quiet part of a weekly cycle.
    weekly = None if stopped else _weekly_rate(hours, adjusted, recent_estimate, params)
    if weekly is not None:
        level = _level(hours[in_fit], adjusted[in_fit], weekly.slope, params)
        spread = _spread(hours[hours > segment_start], adjusted[hours > segment_start], params)
        noise = _noise(fit_hours, smooth, weekly.slope)
        return _fill(weekly, level, capacity, params, (noise, spread), steps=steps, drops=drops)
    trend = Trend.PLATEAU if stopped else Trend.FLAT
    return _no_fill(trend, level, estimate, steps, drops)


def _weekly_rate(
    hours: FloatArray, adjusted: FloatArray, recent: SlopeEstimate, params: ForecastParams
) -> SlopeEstimate | None:
    """The rate over a whole week, when the last days look flat but the week grew.

    A weekend (or a quiet day) slows growth to a fraction of the weekday rate: over three
    days it reads as flat or as a knee. With a week of data, the slope over the whole week
    averages the weekly cycle; it is used when significant and when the recent hours still
    grew significantly, at ``weekly_recent_fraction`` of it or more (a true plateau does not).
    """
    if hours[-1] - hours[0] < params.weekly_min_hours:
        return None
    smooth = without_daily_cycle(hours, adjusted)
    week = theil_sen(hours, smooth, params.confidence)
    if (
        week.low > 0
        and recent.low > 0
        and recent.slope >= params.weekly_recent_fraction * week.slope
    ):
        return week
    return None


def _growth_stopped(
    hours: FloatArray,
    smooth: FloatArray,
    estimate: SlopeEstimate,
    recent: SlopeEstimate,
    params: ForecastParams,
) -> bool:
    """A knee inside the fit window: the last hours grew far slower than the window did.

    Only judged when the growth expected over the recent hours stands well above the noise;
    otherwise a slow grower's noisy recent slope would too often read as a stop.
    """
    noise = _noise(hours, smooth, estimate.slope)
    expected = estimate.slope * params.recent_hours
    return expected > 4 * noise and recent.slope < params.knee_fraction * estimate.slope


def _noise(hours: FloatArray, smooth: FloatArray, slope: float) -> float:
    """Robust standard deviation (MAD) of the deseasonalized series around its line."""
    residuals = smooth - slope * hours
    return 1.4826 * float(np.median(np.abs(residuals - np.median(residuals))))


def _spread(hours: FloatArray, adjusted: FloatArray, params: ForecastParams) -> float:
    """Root mean square of the back-tests' rate errors in this volume's own history (NaN
    without a back-test): what the fitted rate can be expected to miss the future rate by."""
    errors = backtest_rate_errors(hours, adjusted, params.fit_hours)
    return float(np.sqrt(np.mean(errors * errors))) if errors.size else math.nan


def _fill(
    estimate: SlopeEstimate,
    level: float,
    capacity: float,
    params: ForecastParams,
    uncertainty: tuple[float, float] = (0.0, math.nan),
    *,
    steps: int,
    drops: int,
) -> VolumeForecast:
    """A growing volume: hours until ``level`` reaches ``capacity`` at the estimated slope.

    The band: where the line's usage, give or take its uncertainty at that time, crosses
    ``capacity``. ``uncertainty`` = (level noise, back-tested rate error). The rate's
    standard error is the larger of Sen's interval (estimation alone) and the back-tested
    error (how far a rate fitted earlier in this volume's own history missed the growth that
    followed: estimation, daily and weekly cycles and rate changes together).
    """
    remaining = max(capacity - level, 0.0)
    hours_to_full = remaining / estimate.slope
    z = NormalDist().inv_cdf(0.5 + params.confidence / 2)
    noise, backtested = uncertainty
    sen = (estimate.high - estimate.low) / (2 * z)
    if not math.isfinite(sen):
        low: float = remaining / estimate.high if math.isfinite(estimate.high) else 0.0
        high: float | None = None
    else:
        sigma_rate = max(sen, backtested) if math.isfinite(backtested) else sen
        low, high = crossing_band(remaining, estimate.slope, noise, sigma_rate, z)
    if hours_to_full > params.horizon_hours:
        return VolumeForecast(
            Trend.GROWING,
            estimate.slope,
            estimate.low,
            estimate.high,
            level,
            None,
            low if low <= params.horizon_hours else None,
            None,
            steps,
            drops,
        )
    return VolumeForecast(
        Trend.GROWING,
        estimate.slope,
        estimate.low,
        estimate.high,
        level,
        hours_to_full,
        low,
        high,
        steps,
        drops,
    )


def _no_fill(
    trend: Trend,
    level: float,
    estimate: SlopeEstimate | None = None,
    steps: int = 0,
    drops: int = 0,
) -> VolumeForecast:
    estimate = estimate or SlopeEstimate(math.nan, math.nan, math.nan)
    return VolumeForecast(
        trend, estimate.slope, estimate.low, estimate.high, level, None, None, None, steps, drops
    )


def _level(hours: FloatArray, adjusted: FloatArray, slope: float, params: ForecastParams) -> float:
    """Usage at ``at`` on the line through the recent peaks (the high quantile of residuals)."""
    recent = hours > hours[-1] - params.level_hours
    residuals = adjusted[recent] - slope * hours[recent]
    return float(np.quantile(residuals, params.level_quantile))
