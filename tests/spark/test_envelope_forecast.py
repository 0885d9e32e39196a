"""The numpy forecast on hand-made series whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spark_history.envelope_forecast import (
    ForecastParams,
    Trend,
    forecast_hourly,
    hourly_maxima,
)
from spark_history.robust_trend import theil_sen

pytestmark = pytest.mark.spark

CAPACITY = 1_000_000.0


def _minutes(days: float) -> np.ndarray:
    return np.arange(-days * 24 * 60, 1) / 60.0


def test_theil_sen_ignores_an_outlier_and_brackets_the_slope() -> None:
    x = np.arange(50, dtype=np.float64)
    y = 3.0 * x + 7.0
    y[10] = 10_000.0
    estimate = theil_sen(x, y + np.random.default_rng(1).normal(0, 0.5, 50))
    assert estimate.slope == pytest.approx(3.0, abs=0.05)
    assert estimate.low <= 3.0 <= estimate.high


def test_hourly_maxima_bucket_the_last_hour_up_to_at() -> None:
    hours = np.array([-1.5, -1.2, -0.9, -0.1, 0.0])
    values = np.array([5.0, 7.0, 1.0, 3.0, 2.0])
    midpoints, maxima = hourly_maxima(hours, values)
    assert midpoints.tolist() == [-1.5, -0.5]
    assert maxima.tolist() == [7.0, 3.0]


def test_linear_growth_fills_when_the_line_says() -> None:
    hours = _minutes(5)
    rate = 2_000.0  # bytes per hour
    consumed = 500_000.0 + rate * hours
    expected = (CAPACITY - 500_000.0) / rate  # 250 h
    result = forecast_hourly(*hourly_maxima(hours, consumed), CAPACITY)
    assert result.trend is Trend.GROWING
    assert result.hours_to_full == pytest.approx(expected, rel=0.01)
    assert result.hours_to_full is not None
    assert result.hours_to_full_low is not None
    assert result.hours_to_full_high is not None
    assert result.hours_to_full_low <= result.hours_to_full <= result.hours_to_full_high


def test_daily_cycle_does_not_bias_the_fill_time() -> None:
    hours = _minutes(7)
    rate = 1_000.0
    cycle = 30_000.0 * np.sin(2 * math.pi * hours / 24)
    consumed = 400_000.0 + rate * hours + cycle
    # Full when trend + cycle first reaches capacity: solve on a fine grid.
    future = np.arange(0, 2000, 0.01)
    truth = future[
        np.argmax(
            400_000.0 + rate * future + 30_000.0 * np.sin(2 * math.pi * future / 24) >= CAPACITY
        )
    ]
    result = forecast_hourly(*hourly_maxima(hours, consumed), CAPACITY)
    assert result.hours_to_full == pytest.approx(truth, abs=0.05 * truth)


def test_plateau_after_retention_is_not_a_fill() -> None:
    hours = _minutes(7)
    consumed = np.minimum(300_000.0 + 5_000.0 * (hours + 168), 700_000.0)  # flat from -88 h
    result = forecast_hourly(*hourly_maxima(hours, consumed), CAPACITY)
    assert result.hours_to_full is None
    assert result.trend in (Trend.FLAT, Trend.PLATEAU)


@pytest.mark.parametrize("knee_hours_ago", [10.0, 20.0, 40.0])
def test_a_recent_knee_is_not_a_fill(knee_hours_ago: float) -> None:
    hours = _minutes(7)
    consumed = np.minimum(300_000.0 + 2_000.0 * (hours + 168), 636_000.0 - 2_000.0 * knee_hours_ago)
    noise = np.random.default_rng(5).normal(0, 300.0, hours.size)
    result = forecast_hourly(*hourly_maxima(hours, consumed + noise), CAPACITY)
    assert result.hours_to_full is None
    assert result.trend in (Trend.PLATEAU, Trend.FLAT)


def test_retention_sawtooth_is_not_a_fill() -> None:
    hours = _minutes(7)
    period, depth = 30.0, 80_000.0
    consumed = 600_000.0 - depth * (1 - np.mod(hours, period) / period)
    result = forecast_hourly(*hourly_maxima(hours, consumed), CAPACITY)
    assert result.hours_to_full is None
    assert result.trend is Trend.RETENTION
    assert result.drops >= 4


def test_a_step_raises_the_level_but_not_the_rate() -> None:
    hours = _minutes(7)
    rate = 1_000.0
    consumed = 300_000.0 + rate * hours + np.where(hours >= -40, 100_000.0, 0.0)
    expected = (CAPACITY - 400_000.0) / rate  # 600 h
    result = forecast_hourly(*hourly_maxima(hours, consumed), CAPACITY)
    assert result.steps == 1
    assert result.hours_to_full == pytest.approx(expected, rel=0.02)


def test_idle_volume_and_shrinking_volume_are_not_fills() -> None:
    hours = _minutes(3)
    noise = np.random.default_rng(2).normal(0, 500.0, hours.size)
    idle = forecast_hourly(*hourly_maxima(hours, 500_000.0 + noise), CAPACITY)
    shrinking = forecast_hourly(*hourly_maxima(hours, 500_000.0 - 1_000.0 * hours), CAPACITY)
    assert idle.hours_to_full is None
    assert idle.trend is Trend.FLAT
    assert shrinking.hours_to_full is None
    assert shrinking.trend is Trend.SHRINKING


def test_beyond_the_horizon_there_is_no_fill_time() -> None:
    hours = _minutes(3)
    consumed = 100_000.0 + 100.0 * hours  # 9000 h to full
    result = forecast_hourly(
        *hourly_maxima(hours, consumed), CAPACITY, ForecastParams(horizon_hours=60 * 24)
    )
    assert result.trend is Trend.GROWING
    assert result.hours_to_full is None


def test_too_little_history_is_reported_as_such() -> None:
    hours = np.arange(-5 * 60, 1) / 60.0
    result = forecast_hourly(*hourly_maxima(hours, 1000.0 * hours + 5e5), CAPACITY)
    assert result.trend is Trend.INSUFFICIENT_DATA
    assert result.hours_to_full is None
