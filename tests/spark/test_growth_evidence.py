"""When is growth "stopped"? The evidence of several windows, and the band over candidates.

Hand-made series whose answer follows from their construction (rates, capacities), never
from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from spark_history.envelope_band import Candidate, fill_forecast
from spark_history.envelope_forecast import ForecastParams, Trend, forecast_hourly, hourly_maxima
from spark_history.envelope_steps import teeth_of
from spark_history.growth_evidence import judge_growth, long_rate, stopped_for
from spark_history.robust_trend import SlopeEstimate

pytestmark = pytest.mark.spark

CAPACITY = 1_000_000.0
PARAMS = ForecastParams()


def _minutes(days: float) -> np.ndarray:
    return np.arange(-days * 24 * 60, 1) / 60.0


def _usage(hours: np.ndarray, rate: np.ndarray, now: float) -> np.ndarray:
    """Usage at ``hours`` (minute steps) integrating ``rate`` (bytes/h), ``now`` at hour 0."""
    grown: np.ndarray = np.cumsum(rate) / 60.0
    usage: np.ndarray = now + grown - grown[-1]
    return usage


def test_a_weekend_slowdown_is_not_a_plateau() -> None:
    """The last 36 h grew at 30% of the weekday rate: slower, still growing. The forecast
    keeps a fill time, from the faster (weekly) rate: at most the weekend-only answer."""
    hours = _minutes(7)
    rate = np.where(hours > -36, 600.0, 2_000.0)
    noise = np.random.default_rng(7).normal(0, 1_000.0, hours.size)
    result = forecast_hourly(
        *hourly_maxima(hours, _usage(hours, rate, 600_000.0) + noise), CAPACITY
    )
    assert result.trend is Trend.GROWING
    assert result.hours_to_full is not None
    assert result.hours_to_full < 400_000.0 / 600.0
    assert result.hours_to_full_low is not None
    assert result.hours_to_full_low < result.hours_to_full


def test_a_weekend_without_any_growth_keeps_the_fill_with_an_open_band() -> None:
    """36 h without growth (shorter than ``stop_hours``): a fill, but it may never come."""
    hours = _minutes(7)
    rate = np.where(hours > -36, 0.0, 2_000.0)
    noise = np.random.default_rng(7).normal(0, 1_000.0, hours.size)
    result = forecast_hourly(
        *hourly_maxima(hours, _usage(hours, rate, 600_000.0) + noise), CAPACITY
    )
    assert result.trend is Trend.GROWING
    assert result.hours_to_full is not None
    assert result.hours_to_full_high is None


def test_business_hours_growth_is_not_a_knee_every_night() -> None:
    """Growth only 08:00-18:00 (4,000 bytes/h, 10 h a day): every night is a 14 h lull. On
    average 1,667 bytes/h: full in 400,000 / 1,667 = 240 h."""
    hours = _minutes(7)
    hour_of_day = np.mod(hours, 24)
    rate = np.where((hour_of_day >= 8) & (hour_of_day < 18), 4_000.0, 0.0)
    noise = np.random.default_rng(8).normal(0, 500.0, hours.size)
    result = forecast_hourly(
        *hourly_maxima(hours, _usage(hours, rate, 600_000.0) + noise), CAPACITY
    )
    assert result.trend is Trend.GROWING
    assert result.hours_to_full == pytest.approx(240.0, rel=0.1)
    assert result.hours_to_full_low is not None
    assert result.hours_to_full_high is not None
    assert result.hours_to_full_low <= 240.0 <= result.hours_to_full_high


def test_stopped_for_needs_a_significant_stop_and_enough_hours() -> None:
    hours = np.arange(-71.5, 0.0, 1.0)
    rng = np.random.default_rng(3)
    flat = 500_000.0 + rng.normal(0, 200.0, hours.size)
    slow = 500_000.0 + 1_500.0 * hours + rng.normal(0, 200.0, hours.size)
    assert stopped_for(hours, flat, 2_000.0, 48.0, PARAMS)
    # Growing at 75% of the rate: a slowdown, not a stop.
    assert not stopped_for(hours, slow, 2_000.0, 48.0, PARAMS)
    # Only 6 of the last 48 hours have data (a gap): not judged.
    sparse = (hours < -48.0) | (hours > -6.0)
    assert not stopped_for(hours[sparse], flat[sparse], 2_000.0, 48.0, PARAMS)


def test_judge_growth_takes_the_week_when_the_fit_window_is_inconclusive() -> None:
    hours = np.arange(-167.5, 0.0, 1.0)
    values = 500_000.0 + 1_000.0 * hours + np.random.default_rng(4).normal(0, 100.0, hours.size)
    week = long_rate(hours, values, PARAMS)
    assert week is not None
    assert week.slope == pytest.approx(1_000.0, rel=0.02)
    inconclusive = SlopeEstimate(800.0, -50.0, 1_700.0)
    fit = hours > -72
    growth = judge_growth(hours[fit], values[fit], inconclusive, week, PARAMS)
    assert growth.trend is Trend.GROWING
    assert growth.rates == (week,)
    assert judge_growth(hours[fit], values[fit], inconclusive, None, PARAMS).trend is Trend.FLAT
    shrinking = SlopeEstimate(-900.0, -1_000.0, -800.0)
    assert judge_growth(hours[fit], values[fit], shrinking, week, PARAMS).trend is Trend.SHRINKING


def test_long_rate_needs_about_a_week() -> None:
    hours = np.arange(-100.5, 0.0, 1.0)
    assert long_rate(hours, 1_000.0 * hours, PARAMS) is None


def test_the_band_spans_the_candidates_and_the_point_is_the_earliest() -> None:
    fast = Candidate(SlopeEstimate(2_000.0, 1_900.0, 2_100.0), 600_000.0)
    slow = Candidate(SlopeEstimate(1_000.0, 950.0, 1_050.0), 600_000.0)
    result = fill_forecast([slow, fast], CAPACITY, PARAMS)
    assert result.hours_to_full == pytest.approx(200.0)
    assert result.slope_per_hour == 2_000.0
    assert result.hours_to_full_low is not None
    assert result.hours_to_full_high is not None
    assert result.hours_to_full_low < 200.0
    assert result.hours_to_full_high > 400.0  # the slow candidate's fill time, 400 h
    open_band = fill_forecast([slow, fast], CAPACITY, PARAMS, open_ended=True)
    assert open_band.hours_to_full == pytest.approx(200.0)
    assert open_band.hours_to_full_high is None


def test_the_first_tooth_counts_as_a_peak_even_if_the_window_cut_its_start() -> None:
    """Three drops: two whole teeth and the first, cut by the window, which still ended at
    its top. The rising ceiling is judged on all three peaks."""
    hours = np.arange(0.0, 100.0, 1.0)
    values = 1_000.0 * hours - 20_000.0 * np.floor((hours + 10.0) / 30.0)
    drops = np.zeros(hours.size, dtype=bool)
    drops[1:] = np.diff(values) < 0
    teeth = teeth_of(hours, values, drops)
    assert teeth.peaks.shape == (2, 3)
    assert teeth.peaks[0].tolist() == [19.0, 49.0, 79.0]
