"""The numpy forecast on hand-made series whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spark_history.envelope_forecast import (
    ForecastParams,
    Trend,
    VolumeForecast,
    forecast_hourly,
    hourly_maxima,
)
from spark_history.robust_trend import backtest_rate_errors, crossing_band, theil_sen

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


def _knee(knee_hours_ago: float) -> VolumeForecast:
    hours = _minutes(7)
    consumed = np.minimum(300_000.0 + 2_000.0 * (hours + 168), 636_000.0 - 2_000.0 * knee_hours_ago)
    noise = np.random.default_rng(5).normal(0, 300.0, hours.size)
    return forecast_hourly(*hourly_maxima(hours, consumed + noise), CAPACITY)


@pytest.mark.parametrize("knee_hours_ago", [40.0, 60.0])
def test_growth_stopped_for_longer_than_a_weekend_is_a_plateau(knee_hours_ago: float) -> None:
    result = _knee(knee_hours_ago)
    assert result.hours_to_full is None
    assert result.trend is Trend.PLATEAU


@pytest.mark.parametrize("knee_hours_ago", [10.0, 20.0, 30.0])
def test_a_stop_shorter_than_stop_hours_keeps_the_fill_time(knee_hours_ago: float) -> None:
    """A few flat hours cannot be told from a night or a weekend: the fill time stands, at
    the rate before (full in (1e6 - 636e3) / 2e3 = 182 h), and a stop as long as a daily
    cycle leaves the band's late side open."""
    result = _knee(knee_hours_ago)
    assert result.trend is Trend.GROWING
    assert result.hours_to_full == pytest.approx(182.0, rel=0.05)
    if knee_hours_ago >= 20.0:
        assert result.hours_to_full_high is None


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


def _band(result: VolumeForecast) -> tuple[float, float, float]:
    assert result.trend is Trend.GROWING
    assert result.hours_to_full is not None
    assert result.hours_to_full_low is not None
    assert result.hours_to_full_high is not None
    return result.hours_to_full_low, result.hours_to_full, result.hours_to_full_high


def test_a_noiseless_line_gets_a_tight_band_around_the_true_time() -> None:
    hours = _minutes(7)
    consumed = 500_000.0 + 2_000.0 * hours  # full in 250 h
    low, point, high = _band(forecast_hourly(*hourly_maxima(hours, consumed), CAPACITY))
    assert low <= point <= high
    assert low >= 250.0 * 0.99
    assert high <= 250.0 * 1.01


def test_noise_widens_the_band_and_it_still_contains_the_point() -> None:
    hours = _minutes(7)
    line = 500_000.0 + 2_000.0 * hours
    noise = np.random.default_rng(3).normal(0, 4_000.0, hours.size)
    clean = _band(forecast_hourly(*hourly_maxima(hours, line), CAPACITY))
    noisy = _band(forecast_hourly(*hourly_maxima(hours, line + noise), CAPACITY))
    assert noisy[0] <= noisy[1] <= noisy[2]
    assert noisy[2] - noisy[0] > 5 * (clean[2] - clean[0])
    assert noisy[0] <= 250.0 <= noisy[2]


def test_a_rate_that_changed_in_the_history_widens_the_band() -> None:
    """Same last three days and noise; only the week before differs (steady, or half the
    rate on alternate days): the back-tests see the rate change and the band widens."""
    hours = _minutes(7)
    noise = np.random.default_rng(4).normal(0, 300.0, hours.size)
    steady = 500_000.0 + 2_000.0 * hours
    day = np.floor(hours / 24.0)
    rate = np.where((day % 2 == 0) & (hours < -72), 1_000.0, 2_000.0)
    changing = 500_000.0 + np.cumsum(rate[::-1] * -1 / 60.0)[::-1] + 2_000.0 / 60.0
    changing = changing - changing[-1] + 500_000.0
    steady_band = _band(forecast_hourly(*hourly_maxima(hours, steady + noise), CAPACITY))
    result = forecast_hourly(*hourly_maxima(hours, changing + noise), CAPACITY)
    assert result.hours_to_full_low is not None
    # The rate halving on alternate days may also open the late side (rate drift): wider.
    high = math.inf if result.hours_to_full_high is None else result.hours_to_full_high
    steady_width = steady_band[2] - steady_band[0]
    assert high - result.hours_to_full_low > 2 * steady_width


def test_crossing_band_without_uncertainty_is_the_point_and_widens_with_it() -> None:
    assert crossing_band(100.0, 2.0, 0.0, 0.0, 1.645) == pytest.approx((50.0, 50.0))
    low, high = crossing_band(100.0, 2.0, 10.0, 0.2, 1.645)
    assert high is not None
    assert low < 50.0 < high
    # Usage 10 below capacity with a level noise of 10: may be full already at 90%.
    assert crossing_band(10.0, 2.0, 10.0, 0.0, 1.645)[0] == 0.0
    # A rate error as large as the rate: the latest time is "never".
    assert crossing_band(100.0, 2.0, 0.0, 2.0, 1.645)[1] is None


def test_backtests_of_a_steady_line_miss_by_nothing_and_of_a_speed_up_by_the_change() -> None:
    hours = np.arange(-167.5, 0.0, 1.0)
    errors = backtest_rate_errors(hours, 1_000.0 * hours, 72.0)
    assert errors.size >= 10
    assert np.abs(errors).max() < 1e-6
    # Twice the rate for the last 48 h: origins before then missed the speed-up.
    faster = np.where(hours > -48, 2_000.0 * hours, 1_000.0 * hours - 48_000.0)
    errors = backtest_rate_errors(hours, faster, 72.0)
    assert errors.max() > 300.0
    assert errors.min() > -1e-6


def test_a_fill_within_hours_gets_a_band_as_wide_as_the_level_noise() -> None:
    hours = _minutes(7)
    noise = np.random.default_rng(6).normal(0, 3_000.0, hours.size)
    consumed = 980_000.0 + 2_000.0 * hours + noise  # 10 h from full, noisy level
    low, point, high = _band(forecast_hourly(*hourly_maxima(hours, consumed), CAPACITY))
    assert low <= point <= high
    # The rate's error is negligible over a few hours: the width is the level's noise.
    assert high - low > 1.0


@pytest.mark.parametrize("replaced_hours_ago", [20.0, 60.0])
def test_a_replaced_disk_keeps_the_rate_of_the_history_before_it(
    replaced_hours_ago: float,
) -> None:
    hours = _minutes(7)
    rate = 1_000.0
    line = 500_000.0 + rate * hours
    # Replaced: down to 2%, then re-replication brings back 90% within hours. 20 h ago, the
    # hours since (less the re-replication) are too few to forecast from on their own.
    since = np.maximum(hours + replaced_hours_ago, 0.0)
    lost = 500_000.0 - rate * replaced_hours_ago
    refilled = 20_000.0 + 0.9 * lost * (1 - np.exp(-since / 2.0)) + rate * since
    consumed = np.where(hours >= -replaced_hours_ago, refilled, line)
    level = 20_000.0 + 0.9 * lost + rate * replaced_hours_ago
    hourly = hourly_maxima(hours, consumed)
    _, minima = hourly_maxima(hours, -consumed)
    result = forecast_hourly(*hourly, CAPACITY, minima=-minima)
    assert result.trend is Trend.GROWING
    assert result.steps == 0
    assert result.drops == 0
    # Within 10%: the tail of the re-replication, past the 8 h skipped, tilts the join a bit.
    assert result.hours_to_full == pytest.approx((CAPACITY - level) / rate, rel=0.1)
    # The history before the replacement takes part: a finite band, around the truth.
    low, _, high = _band(result)
    assert low <= (CAPACITY - level) / rate <= high
    assert high - low < 0.5 * (CAPACITY - level) / rate


def test_slower_growth_across_a_gap_is_not_a_retention_drop() -> None:
    """A weekend inside a 48 h hole: usage grew, less than the weekday rate says."""
    hours = np.concatenate([np.arange(-167.5, -50.0, 1.0), np.arange(-1.5, 0.0, 1.0)])
    hours = np.concatenate([hours[:-2], np.arange(-12.5, 0.0, 1.0)])
    consumed = np.where(hours < -50.0, 400_000.0 + 2_000.0 * (hours + 50.0), 0.0)
    after = hours > -50.0
    consumed[after] = 430_000.0 + 2_000.0 * (hours[after] + 12.5)
    result = forecast_hourly(hours, consumed, CAPACITY)
    assert result.drops == 0
    assert result.trend is Trend.GROWING
    assert result.hours_to_full is not None
