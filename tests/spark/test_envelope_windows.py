"""The short line's alert, and the band spanning the short window's and the week's fill times.

Hand-made hourly series whose answer follows from their construction (rates, levels,
capacities), never from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_history.envelope_forecast import ForecastParams, Trend, VolumeForecast
from spark_history.envelope_windows import (
    WindowLines,
    line_slope,
    span_windows,
    window_lines,
    with_short_line,
)

pytestmark = pytest.mark.spark

CAPACITY = 1_000_000.0
PARAMS = ForecastParams()
HOURS = np.arange(-167.5, 0.0, 1.0)
"""Hourly bucket midpoints of the last week; the newest is -0.5."""


def _lines(values: np.ndarray) -> WindowLines | None:
    return window_lines(HOURS, values, CAPACITY, PARAMS)


def _fill(hours: float | None, low: float | None, high: float | None) -> VolumeForecast:
    return VolumeForecast(Trend.GROWING, 1.0, 0.5, 1.5, 5e5, hours, low, high, 0, 0)


@settings(max_examples=60, deadline=None)
@given(
    slope=st.floats(min_value=-5_000.0, max_value=5_000.0),
    window=st.sampled_from([6.0, 24.0, 72.0, 168.0]),
)
def test_the_slope_of_a_line_is_its_slope(slope: float, window: float) -> None:
    values = 500_000.0 + slope * HOURS
    assert line_slope(HOURS, values, window) == pytest.approx(slope, abs=1e-6)


def test_a_burst_running_now_pulls_the_early_side_to_its_own_fill_time() -> None:
    """1,000/h all week, then 20,000/h over the last 6 hours up to 880,000: at the burst's
    rate the disk is full 6 h after the newest hour."""
    values = np.where(HOURS < -6.5, 760_000.0 + 1_000.0 * (HOURS + 6.5), 0.0)
    burst = HOURS >= -6.5
    values[burst] = 760_000.0 + 20_000.0 * (HOURS[burst] + 6.5)
    level = 760_000.0 + 20_000.0 * 6.0
    result = span_windows(_fill(100.0, 60.0, 140.0), _lines(values))
    assert result.hours_to_full == 100.0
    assert result.hours_to_full_low == pytest.approx(-0.5 + (CAPACITY - level) / 20_000.0)
    # The week's line, burst included, fills within 140 h: the late side stays.
    assert result.hours_to_full_high == 140.0


def test_a_week_that_grew_slower_pushes_the_late_side_out() -> None:
    """The week's line rises 500/h: from 900,000 full 200 h after the newest hour."""
    values = 900_000.0 + 500.0 * (HOURS + 0.5)
    result = span_windows(_fill(50.0, 40.0, 60.0), _lines(values))
    assert result.hours_to_full_high == pytest.approx(-0.5 + 100_000.0 / 500.0)
    assert result.hours_to_full_low == 40.0  # the short window says the same 200 h


def test_a_week_that_did_not_grow_opens_the_late_side() -> None:
    values = 900_000.0 - 100.0 * (HOURS + 0.5)
    result = span_windows(_fill(50.0, 40.0, 60.0), _lines(values))
    assert result.hours_to_full_high is None
    assert result.hours_to_full_low == 40.0  # a falling short window says nothing early


def test_no_fill_and_an_open_late_side_stay_as_they_are() -> None:
    values = 900_000.0 + 5_000.0 * (HOURS + 0.5)
    none = _fill(None, None, None)
    assert span_windows(none, _lines(values)) == none
    opened = span_windows(_fill(50.0, 40.0, None), _lines(values))
    assert opened.hours_to_full_high is None
    assert opened.hours_to_full_low == pytest.approx(-0.5 + 100_000.0 / 5_000.0)


def test_the_band_never_starts_before_now() -> None:
    values = 990_000.0 + 50_000.0 * (HOURS + 0.5)
    result = span_windows(_fill(2.0, 1.0, 3.0), _lines(values))
    assert result.hours_to_full_low == 0.0


def test_a_burst_the_envelope_reads_as_a_step_is_reported_at_the_short_line_s_time() -> None:
    """Flat at 760,000, then 20,000/h for the last 6 h: from 880,000 the short line fills
    6 h after the newest hour; the forecast before it said "no fill"."""
    values = np.full(HOURS.size, 760_000.0)
    burst = HOURS >= -6.5
    values[burst] = 760_000.0 + 20_000.0 * (HOURS[burst] + 6.5)
    none = VolumeForecast(Trend.RETENTION, 0.0, 0.0, 0.0, 7.6e5, None, None, None, 0, 1)
    result = with_short_line(none, _lines(values), PARAMS)
    assert result.trend is Trend.GROWING_SHORT_LINE
    assert result.hours_to_full == pytest.approx(-0.5 + 120_000.0 / 20_000.0)
    assert result.hours_to_full_low == result.hours_to_full
    assert result.hours_to_full_high is None
    assert result.slope_per_hour == pytest.approx(20_000.0)
    assert result.drops == 1


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(min_value=500.0, max_value=50_000.0), point=st.floats(1.0, 2_000.0))
def test_the_short_line_only_moves_a_fill_within_a_day_and_earlier(
    rate: float, point: float
) -> None:
    values = 800_000.0 + rate * (HOURS + 0.5)
    short = -0.5 + 200_000.0 / rate
    result = with_short_line(_fill(point, point / 2, point * 2), _lines(values), PARAMS)
    if short <= PARAMS.short_line_alert_hours and short < point:
        assert result.trend is Trend.GROWING_SHORT_LINE
        assert result.hours_to_full == pytest.approx(short)
        assert result.hours_to_full_high == point * 2
    else:
        assert result.trend is Trend.GROWING
        assert result.hours_to_full == point


def test_a_falling_short_line_says_nothing() -> None:
    values = 990_000.0 - 1_000.0 * (HOURS + 0.5)
    none = _fill(None, None, None)
    assert with_short_line(none, _lines(values), PARAMS) == none
