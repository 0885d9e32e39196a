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
   retention cycle (no fill) unless three or more teeth that ended in a drop (the first one
   too, even if the window cut its start) show significantly rising peaks; usage above the
   old ceiling is fitted from the last drop on.
4. **Robust slopes.** Theil-Sen (median of pairwise slopes) over the last ``fit_hours`` (three
   daily cycles) after subtracting the daily cycle (24 h and 12 h harmonics, detrended with the
   seasonal Sen slope), with Sen's interval on an effective sample size that accounts for the
   autocorrelation of the residuals (hourly points are not independent; an interval that
   ignored it would be far too narrow). A rate over the last ``recent_hours`` significantly
   above it replaces it (a new heavy topic). With about a week of history, the same fit over
   the whole week gives a second, long rate, which averages a weekly cycle.
5. **Growth or not** (``growth_evidence``). A missed fill costs more than a false one, so
   "no fill" needs strong evidence: flat (neither rate significantly positive), shrinking
   (the fit window's rate significantly negative), or a plateau: growth stopped for longer
   than ``stop_hours`` (two daily cycles, a weekend), i.e. over those hours (less their own
   daily cycle) the rate is significantly under ``knee_fraction`` of the slower significant
   rate and not significantly positive. A night, a weekend, a noisy or bent stretch is a
   slowdown: the fill time stands.
6. **Level and time.** For each significant rate, the level at ``at`` is its line through the
   high quantile of the recent residuals (a disk fills at the daily peak) and hours =
   (capacity - level) / rate. The forecast is the earliest of these (conflicting windows:
   the more conservative). Past the horizon there is no forecast.
7. **Band** (``envelope_band``). Back-tests inside the volume's own history (origins every
   6 h: fit the rate as above on the data before the origin, compare with the growth
   realised from there to now) give the rate's typical miss (root mean square); the rate's
   standard error is the larger of that and Sen's interval. Per rate, the band is where
   usage, ``level + rate t`` give or take ``z sqrt(noise^2 + (sigma_rate t)^2)``, crosses
   capacity; the band spans all the rates' bands. When the last daily cycle looks stopped
   (not yet ``stop_hours``), the late side is open: growth may not resume. The band also
   takes in the paths on which the rate keeps changing as fast as the week's days allow
   (``rate_drift``): an acceleration the back-tests cannot see.
8. **Line floor** (``envelope_floor``). "No fill" must agree with a least-squares line
   over the last ``fit_hours``: when that line fills within the horizon, its fill time is
   reported (trend ``growing-line-floor``, late side open) unless the envelope has strong
   evidence of a stop the line cannot see: a plateau measured over ``stop_hours``, or a
   retention ceiling held across ``held_drops`` drops.
9. **Next-day floor** (``envelope_next_day``). Yesterday's climb from this hour, on the
   step-free envelope, repeated from the level now for ``next_day_hours``: when it reaches
   capacity before any other fill time, its time is reported (trend ``growing-next-day``).
   Not after a retention drop in the last three days, nor against a strong stop.
10. **Short line's alert** (``envelope_windows``). When the least-squares line over the last
    ``short_window_hours`` (node_exporter's) fills within ``short_line_alert_hours`` and
    before any other fill time, its time is reported (trend ``growing-short-line``).
11. **Every window's rate in the band** (``envelope_windows``). A fill's band also spans the
    fill times at the least-squares rates of the last ``short_window_hours`` (its early
    side) and of the week (its late side; open when the week did not grow).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from spark_history.envelope_band import (
    Candidate,
    fill_forecast,
    level_now,
    rate_drift,
    rate_error,
    robust_noise,
)
from spark_history.envelope_floor import line_fill, with_floor
from spark_history.envelope_next_day import next_day_fill, with_next_day
from spark_history.envelope_steps import (
    Teeth,
    after_replacement,
    ceiling_held,
    remove_steps,
    teeth_of,
)
from spark_history.envelope_windows import span_windows, window_lines, with_short_line
from spark_history.forecast_types import ForecastParams, Trend, VolumeForecast, no_fill
from spark_history.growth_evidence import judge_growth, long_rate
from spark_history.robust_trend import FloatArray, theil_sen, without_daily_cycle

BoolArray = npt.NDArray[np.bool_]

__all__ = [
    "ForecastParams",
    "Trend",
    "VolumeForecast",
    "bucket_midpoint",
    "forecast_hourly",
    "hour_bucket",
    "hourly_maxima",
]


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
        return no_fill(Trend.INSUFFICIENT_DATA, level)

    reading = _envelope_verdict(hours, values, capacity, params)
    if reading.strong_stop:  # it stands against both floors: do not fit them
        return reading.forecast
    verdict = with_floor(
        reading.forecast, line_fill(hours, values, capacity, params), strong_stop=False
    )
    repeat = next_day_fill(hours, reading.adjusted, capacity, params, drops=reading.drop_mask)
    lines = window_lines(hours, values, capacity, params)
    return span_windows(with_short_line(with_next_day(verdict, repeat), lines, params), lines)


class _Reading(NamedTuple):
    forecast: VolumeForecast
    strong_stop: bool
    """Its "no fill" rests on strong evidence of a stop (a plateau measured for
    ``stop_hours``, or a retention ceiling held across ``held_drops`` drops), which the
    line floor must not override."""
    adjusted: FloatArray
    """The step-free envelope."""
    drop_mask: BoolArray
    """The hours that follow a retention drop."""


def _envelope_verdict(
    hours: FloatArray, values: FloatArray, capacity: float, params: ForecastParams
) -> _Reading:
    """The envelope method's forecast (steps 2-7) and what it read on the way."""
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
            result = _retention(teeth, capacity, params, steps, drops)
            held = ceiling_held(teeth, tolerance, params.held_drops)
            return _Reading(result, held and result.hours_to_full is None, adjusted, drop_mask)
        # Climbed past its old ceiling: only the climb since the last drop tells the rate.
        if np.count_nonzero(hours > teeth.last_drop_hour) >= params.min_hours_of_data / 2:
            fit_start = max(fit_start, teeth.last_drop_hour - 1.0)
            segment_start = teeth.last_drop_hour - 1.0
    result = _fit_trend(
        hours, adjusted, (fit_start, segment_start), capacity, params, counts=(steps, drops)
    )
    return _Reading(result, result.trend is Trend.PLATEAU, adjusted, drop_mask)


def _retention(
    teeth: Teeth, capacity: float, params: ForecastParams, steps: int, drops: int
) -> VolumeForecast:
    """Below the ceiling where retention (or a clean-up) cut usage before."""
    level = float(teeth.tail_peak)
    if teeth.peaks.shape[1] < 3:
        return no_fill(Trend.RETENTION, level, steps=steps, drops=drops)
    peaks = theil_sen(teeth.peaks[0], teeth.peaks[1], params.confidence)
    if not peaks.low > 0:
        slope = (peaks.slope, peaks.low, peaks.high)
        return no_fill(Trend.RETENTION, level, slope, steps, drops)
    # The ceiling itself rises: fill when the peaks' line reaches capacity.
    level = float(teeth.peaks[1][-1]) - peaks.slope * float(teeth.peaks[0][-1])
    return fill_forecast([Candidate(peaks, level)], capacity, params, counts=(steps, drops))


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
    (after the last retention drop; the long rate and the back-tests use all of it)."""
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
    in_segment = hours > segment_start
    longer = long_rate(hours[in_segment], adjusted[in_segment], params)
    growth = judge_growth(fit_hours, adjusted[in_fit], estimate, longer, params)
    if growth.trend is not Trend.GROWING:
        level = level_now(fit_hours, adjusted[in_fit], estimate.slope, params)
        slope = (estimate.slope, estimate.low, estimate.high)
        return no_fill(growth.trend, level, slope, *counts)
    candidates = [
        Candidate(
            rate,
            level_now(fit_hours, adjusted[in_fit], rate.slope, params),
            robust_noise(fit_hours, smooth, rate.slope),
        )
        for rate in growth.rates
    ]
    rate_miss = rate_error(hours[in_segment], adjusted[in_segment], params)
    return fill_forecast(
        candidates,
        capacity,
        params,
        rate_miss,
        open_ended=growth.lull,
        counts=counts,
        drift=rate_drift(hours[in_segment], adjusted[in_segment], params),
    )
