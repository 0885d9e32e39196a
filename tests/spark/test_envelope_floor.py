"""The line floor under the envelope forecast, and the band's widening for a drifting rate.

Hand-made series whose answer follows from their construction (rates, ceilings, capacities),
never from the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_history.envelope_band import Candidate, fill_forecast, rate_drift
from spark_history.envelope_floor import line_fill
from spark_history.envelope_forecast import ForecastParams, Trend, forecast_hourly, hourly_maxima
from spark_history.robust_trend import SlopeEstimate

pytestmark = pytest.mark.spark

CAPACITY = 1_000_000.0
PARAMS = ForecastParams()
HOURS = np.arange(-167.5, 0.0, 1.0)


@settings(max_examples=60, deadline=None)
@given(
    rate=st.floats(min_value=100.0, max_value=20_000.0),
    used=st.floats(min_value=0.05, max_value=0.95),
)
def test_the_line_of_a_line_fills_when_the_line_says(rate: float, used: float) -> None:
    level = used * CAPACITY
    line = line_fill(HOURS, level + rate * HOURS, CAPACITY, PARAMS)
    expected = (CAPACITY - level) / rate
    if expected > PARAMS.horizon_hours:
        assert line is None
        return
    assert line is not None
    assert line.slope == pytest.approx(rate, rel=1e-6)
    assert line.hours_to_full == pytest.approx(expected, rel=1e-6)
    assert line.earliest <= line.hours_to_full + 1e-6


def test_the_line_needs_growth_and_enough_hours() -> None:
    assert line_fill(HOURS, np.full(HOURS.size, 5e5), CAPACITY, PARAMS) is None
    assert line_fill(HOURS, 5e5 - 1_000.0 * HOURS, CAPACITY, PARAMS) is None
    short = HOURS[-6:]
    assert line_fill(short, 5e5 + 1e4 * short, CAPACITY, PARAMS) is None


def test_one_cut_is_not_strong_evidence_the_line_floor_fills() -> None:
    """One drop 100 h ago from 900k to 700k, then the same climb (2,000/h) back to 900k now:
    the envelope reads "below the old ceiling"; a single cut could be a clean-up, so the
    72 h line (2,000/h from 900k: full in 50 h) is reported, late side open."""
    hours = np.arange(-168 * 60, 1) / 60.0
    usage = np.where(hours < -100, 900_000.0 + 2_000.0 * (hours + 100), 0.0)
    after = hours >= -100
    usage[after] = 700_000.0 + 2_000.0 * (hours[after] + 100)
    result = forecast_hourly(*hourly_maxima(hours, usage), CAPACITY)
    assert result.trend is Trend.GROWING_LINE_FLOOR
    assert result.drops == 1
    assert result.hours_to_full == pytest.approx(50.0, rel=0.05)
    assert result.hours_to_full is not None
    assert result.hours_to_full_low is not None
    assert result.hours_to_full_low <= result.hours_to_full
    assert result.hours_to_full_high is None


def test_a_ceiling_held_across_two_cuts_overrides_the_line() -> None:
    """Cut at the same 900k ceiling 150 h and 70 h ago (2,500/h climbs, 200k deep): the
    climb since the last cut (875k now) would fill on a 72 h line, but retention has held
    this ceiling twice: strong evidence, no fill."""
    hours = np.arange(-168 * 60, 1) / 60.0
    rate, ceiling = 2_500.0, 900_000.0  # teeth 80 h long: 200k deep
    # Each tooth climbs to the ceiling at its top hour; the last one would reach it at +10.
    top_hours = np.where(hours < -150, -150.0, np.where(hours < -70, -70.0, 10.0))
    usage = ceiling - rate * (top_hours - hours)
    midpoints, maxima = hourly_maxima(hours, usage)
    assert line_fill(midpoints, maxima, CAPACITY, PARAMS) is not None
    result = forecast_hourly(midpoints, maxima, CAPACITY)
    assert result.drops == 2
    assert result.trend is Trend.RETENTION
    assert result.hours_to_full is None
    # Asking for three cuts at the ceiling, two are not enough: the line floor fills.
    weaker = forecast_hourly(midpoints, maxima, CAPACITY, ForecastParams(held_drops=3))
    assert weaker.trend is Trend.GROWING_LINE_FLOOR


def test_growth_stopped_for_60_hours_overrides_the_line() -> None:
    """Growth at 2,000/h stopped 60 h ago: the 72 h line still rises (its first 12 h climb)
    and would fill, but a stop measured over more than 48 h is strong evidence."""
    hours = np.arange(-168 * 60, 1) / 60.0
    usage = np.minimum(300_000.0 + 2_000.0 * (hours + 168), 516_000.0)
    usage = usage + np.random.default_rng(5).normal(0, 300.0, hours.size)
    midpoints, maxima = hourly_maxima(hours, usage)
    line = line_fill(midpoints, maxima, CAPACITY, ForecastParams(horizon_hours=1e6))
    assert line is not None
    assert line.slope > 0
    result = forecast_hourly(midpoints, maxima, CAPACITY, ForecastParams(horizon_hours=1e6))
    assert result.trend is Trend.PLATEAU
    assert result.hours_to_full is None


@settings(max_examples=40, deadline=None)
@given(doubling_hours=st.floats(min_value=48.0, max_value=2_000.0))
def test_rate_drift_of_an_exponential_rate_is_its_log_slope(doubling_hours: float) -> None:
    """Usage whose rate is r e^(k t): each day's growth rate is r e^(k t) times a constant,
    so the log-rate slope is k (Theil-Sen's interval collapses on exact data)."""
    k = math.log(2.0) / doubling_hours
    usage = 1_000.0 * (np.exp(k * HOURS) - 1.0) / k
    assert rate_drift(HOURS, usage, PARAMS) == pytest.approx(k, rel=1e-3)


def test_no_drift_for_a_steady_rate_and_too_few_days() -> None:
    assert rate_drift(HOURS, 1_000.0 * HOURS, PARAMS) == pytest.approx(0.0, abs=1e-12)
    recent = HOURS[HOURS > -72]
    assert rate_drift(recent, np.exp(0.01 * recent), PARAMS) == 0.0


def test_a_drifting_rate_widens_the_band_to_the_accelerating_path() -> None:
    """Rate 1,000/h, 500k left, drift k = ln 2 / 100 h: the rate r e^(k t) fills when its
    integral reaches 500k (found here on a fine grid), and the rate r e^(-k t) never does
    (it levels off r / k = 144k higher)."""
    k = math.log(2.0) / 100.0
    candidate = Candidate(SlopeEstimate(1_000.0, 990.0, 1_010.0), 500_000.0)
    steady = fill_forecast([candidate], CAPACITY, PARAMS)
    drifting = fill_forecast([candidate], CAPACITY, PARAMS, drift=k)
    grid = np.arange(0.0, 500.0, 0.01)
    accelerated = grid[np.argmax(1_000.0 * (np.exp(k * grid) - 1.0) / k >= 500_000.0)]
    assert steady.hours_to_full == drifting.hours_to_full == pytest.approx(500.0)
    assert steady.hours_to_full_high is not None
    assert drifting.hours_to_full_low == pytest.approx(accelerated, abs=0.05)
    assert drifting.hours_to_full_high is None
