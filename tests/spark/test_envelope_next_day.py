"""The next-day floor: yesterday's climb repeated from the level now.

Hand-made hourly series whose answer follows from their construction (rates, levels,
capacities), never from the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_history.envelope_forecast import ForecastParams, Trend, VolumeForecast, forecast_hourly
from spark_history.envelope_next_day import DayRepeat, next_day_fill, with_next_day

pytestmark = pytest.mark.spark

CAPACITY = 1_000_000.0
PARAMS = ForecastParams()
HOURS = np.arange(-167.5, 0.0, 1.0)
"""Hourly bucket midpoints of the last week; the newest is -0.5."""


@settings(max_examples=80, deadline=None)
@given(
    rate=st.floats(min_value=1_000.0, max_value=50_000.0),
    room=st.floats(min_value=0.0, max_value=0.3),
)
def test_a_steady_climb_fills_when_its_hourly_rate_says(rate: float, room: float) -> None:
    """Noise-free: the day-over-day change never moves, so the band is the point."""
    level = CAPACITY * (1.0 - room)
    values = level + rate * (HOURS + 0.5)
    repeat = next_day_fill(HOURS, values, CAPACITY, PARAMS)
    hours = CAPACITY * room / rate
    if hours > PARAMS.next_day_hours:
        assert repeat is None
        return
    assert repeat is not None
    assert repeat.hours_to_full == pytest.approx(max(-0.5 + hours, 0.0), abs=1e-6)
    assert repeat.earliest == pytest.approx(repeat.hours_to_full, abs=1e-6)
    assert repeat.latest == pytest.approx(repeat.hours_to_full, abs=1e-6)
    assert repeat.rate == pytest.approx(rate)


def test_a_climb_past_the_peak_before_a_weekend_fills_today() -> None:
    """Up 2,000/h to a peak 90 h ago, down 2,500/h over a weekend, up 4,500/h since 36 h
    ago: the envelope could read the old peak as a retention ceiling, but at 4,500/h from
    the level now the disk is full within hours."""
    values = np.where(
        HOURS < -90,
        956_000.0 + 2_000.0 * (HOURS + 90),
        np.where(
            HOURS < -36, 956_000.0 - 2_500.0 * (HOURS + 90), 821_000.0 + 4_500.0 * (HOURS + 36)
        ),
    )
    level = 821_000.0 + 4_500.0 * 35.5
    expected = -0.5 + (CAPACITY - level) / 4_500.0
    result = forecast_hourly(HOURS, values, CAPACITY, PARAMS)
    assert result.trend is Trend.GROWING_NEXT_DAY
    assert result.hours_to_full == pytest.approx(expected, abs=0.05)
    assert result.hours_to_full is not None
    assert result.hours_to_full_low is not None
    assert result.hours_to_full_low <= result.hours_to_full


def test_a_daily_cycle_under_capacity_does_not_fill() -> None:
    """Flat at 900,000 give or take 60,000 a day, peaks at 960,000: repeating yesterday
    repeats the peak, in the morning rise as at any other hour."""
    for phase in range(0, 24, 3):
        values = 900_000.0 + 60_000.0 * np.sin(2 * math.pi * (HOURS + phase) / 24.0)
        assert next_day_fill(HOURS, values, CAPACITY, PARAMS) is None, phase
        result = forecast_hourly(HOURS, values, CAPACITY, PARAMS)
        assert result.trend is not Trend.GROWING_NEXT_DAY, phase


def test_a_step_yesterday_does_not_repeat_today() -> None:
    """Flat at 700,000; partitions moved in 20 h ago added 250,000. Repeating the raw
    envelope would add another 250,000 (over capacity); the forecast repeats the step-free
    envelope, where the day gained nothing (the 72 h line may still read the step as growth:
    ``envelope_floor``)."""
    values = np.where(HOURS < -20, 700_000.0, 950_000.0)
    assert next_day_fill(HOURS, values, CAPACITY, PARAMS) is not None  # why steps go first
    result = forecast_hourly(HOURS, values, CAPACITY, PARAMS)
    assert result.trend is not Trend.GROWING_NEXT_DAY


def test_it_needs_a_fresh_level_and_the_same_hour_yesterday() -> None:
    climbing = 900_000.0 + 10_000.0 * (HOURS + 0.5)
    assert next_day_fill(HOURS, climbing, CAPACITY, PARAMS) is not None
    stale = HOURS < -3.0
    assert next_day_fill(HOURS[stale], climbing[stale], CAPACITY, PARAMS) is None
    no_yesterday = (HOURS > -23.0) | (HOURS < -25.0)
    assert next_day_fill(HOURS[no_yesterday], climbing[no_yesterday], CAPACITY, PARAMS) is None
    last_day = HOURS > -25.0
    assert next_day_fill(HOURS[last_day], climbing[last_day], CAPACITY, PARAMS) is None


def test_noise_in_the_day_over_day_change_widens_the_band() -> None:
    rng = np.random.default_rng(5)
    values = 900_000.0 + 10_000.0 * (HOURS + 0.5) + rng.normal(0.0, 3_000.0, HOURS.size)
    repeat = next_day_fill(HOURS, values, CAPACITY, PARAMS)
    assert repeat is not None
    assert repeat.earliest < repeat.hours_to_full
    assert repeat.latest is not None
    assert repeat.latest > repeat.hours_to_full
    # The truth of the noise-free climb (full 9.5 h after the midpoint of the newest hour)
    # lies inside.
    assert repeat.earliest <= 9.5 <= repeat.latest


def _forecast(hours: float | None, low: float | None, high: float | None) -> VolumeForecast:
    trend = Trend.GROWING if hours is not None else Trend.RETENTION
    return VolumeForecast(trend, 1.0, 0.5, 1.5, 9e5, hours, low, high, 0, 2)


def test_an_earlier_fill_stands_and_its_band_reaches_the_day_s_early_side() -> None:
    repeat = DayRepeat(10.0, 4.0, 14.0, 1.0, 9e5)
    earlier = with_next_day(_forecast(8.0, 6.0, 30.0), repeat)
    assert (earlier.trend, earlier.hours_to_full) == (Trend.GROWING, 8.0)
    assert (earlier.hours_to_full_low, earlier.hours_to_full_high) == (4.0, 30.0)


def test_the_day_s_fill_replaces_a_later_one_or_none() -> None:
    repeat = DayRepeat(10.0, 4.0, 14.0, 1.0, 9e5)
    later = with_next_day(_forecast(200.0, 120.0, 400.0), repeat)
    assert (later.trend, later.hours_to_full) == (Trend.GROWING_NEXT_DAY, 10.0)
    assert (later.hours_to_full_low, later.hours_to_full_high) == (4.0, 400.0)
    none = with_next_day(_forecast(None, None, None), repeat)
    assert (none.trend, none.hours_to_full) == (Trend.GROWING_NEXT_DAY, 10.0)
    assert (none.hours_to_full_low, none.hours_to_full_high) == (4.0, None)
    assert none.drops == 2
    assert with_next_day(_forecast(None, None, None), None).hours_to_full is None
