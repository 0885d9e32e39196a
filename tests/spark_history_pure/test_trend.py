"""The numpy forecast on hand-made series whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spark_history.forecast.conformal_bands import Calibration, Sample
from spark_history.forecast.robust_trend import theil_sen, trend_line
from spark_history.forecast.trend import (
    ForecastParams,
    Trend,
    forecast_hourly,
    hourly_means,
    trend_class,
)

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


def test_hourly_means_bucket_the_last_hour_up_to_at() -> None:
    hours = np.array([-1.5, -1.2, -0.9, -0.1, 0.0])
    values = np.array([5.0, 7.0, 1.0, 3.0, 2.0])
    times, means = hourly_means(hours, values)
    assert times.tolist() == pytest.approx([-1.35, -1.0 / 3.0])
    assert means.tolist() == pytest.approx([6.0, 2.0])


def test_linear_growth_fills_when_the_line_says() -> None:
    hours = _minutes(5)
    rate = 2_000.0  # bytes per hour
    consumed = 500_000.0 + rate * hours
    result = forecast_hourly(*hourly_means(hours, consumed), CAPACITY)
    assert result.trend is Trend.GROWING
    assert result.hours_to_full == pytest.approx((CAPACITY - 500_000.0) / rate)
    assert result.slope_per_hour == pytest.approx(rate)
    assert (result.hours_to_full_low, result.hours_to_full_high, result.band) == (
        None,
        None,
        None,
    )  # no calibration: no band


def test_a_daily_cycle_leaves_a_fill_time_but_no_significant_trend() -> None:
    """A daily cycle of +-10 kB on a line: its residuals are so autocorrelated that the
    slope's interval cannot rule out zero (trend ``flat``, the band's calibration class), but
    the positive slope still gives a fill time, near the line's (the cycle's phase at ``at``
    tilts a 72 h line a little: 5 % here)."""
    hours = _minutes(7)
    rate = 2_000.0
    consumed = 500_000.0 + rate * hours + 10_000.0 * np.sin(2 * np.pi * hours / 24.0)
    result = forecast_hourly(*hourly_means(hours, consumed), CAPACITY)
    assert result.trend is Trend.FLAT
    assert result.hours_to_full == pytest.approx((CAPACITY - 500_000.0) / rate, rel=0.1)


def test_idle_and_shrinking_volumes_do_not_fill() -> None:
    hours = _minutes(5)
    noise = np.random.default_rng(3).normal(0, 2_000.0, hours.size)
    idle = forecast_hourly(*hourly_means(hours, 500_000.0 + noise), CAPACITY)
    shrinking = forecast_hourly(*hourly_means(hours, 500_000.0 - 1_000.0 * hours + noise), CAPACITY)
    assert idle.trend is Trend.FLAT
    assert shrinking.trend is Trend.SHRINKING
    assert shrinking.hours_to_full is None
    assert idle.slope_low <= 0 <= idle.slope_high


def test_the_trend_class_is_the_forecasts_trend_and_none_without_enough_data() -> None:
    hours = _minutes(5)
    noise = np.random.default_rng(4).normal(0, 2_000.0, hours.size)
    params = ForecastParams()
    classes = set()
    for consumed in (500_000.0 + noise, 500_000.0 + 500.0 * hours + noise, 500_000.0 - hours):
        means = hourly_means(hours, consumed)
        classes.add(trend_class(*means, params))
        assert trend_class(*means, params) is forecast_hourly(*means, CAPACITY, params).trend
    assert classes == {Trend.FLAT, Trend.GROWING, Trend.SHRINKING}
    short = _minutes(0.25)
    assert trend_class(*hourly_means(short, 1000.0 * short), params) is None


def test_beyond_the_horizon_there_is_no_fill_time() -> None:
    hours = _minutes(5)
    consumed = 100_000.0 + 10.0 * hours  # 90,000 h to fill
    result = forecast_hourly(
        *hourly_means(hours, consumed), CAPACITY, ForecastParams(horizon_hours=60 * 24)
    )
    assert result.trend is Trend.GROWING
    assert result.hours_to_full is None


def test_too_little_history_is_reported_as_such() -> None:
    hours = _minutes(0.25)
    result = forecast_hourly(*hourly_means(hours, 1000.0 * hours + 5e5), CAPACITY)
    assert result.trend is Trend.INSUFFICIENT_DATA
    assert result.hours_to_full is None
    assert result.level == pytest.approx(5e5, abs=1000.0)


def test_only_the_fit_window_sets_the_rate() -> None:
    """A week of slow growth, then 72 h of fast growth: the rate is the last 72 h's."""
    hours = np.arange(-168, 0, dtype=np.float64) + 0.5
    maxima = np.where(hours > -72, 400_000.0 + 3_000.0 * hours, 400_000.0 - 144_000.0)
    maxima = np.where(hours > -72, maxima, 400_000.0 - 216_000.0 + 1_000.0 * (hours + 72))
    line = trend_line(hours, maxima)
    assert line is not None
    assert line.slope == pytest.approx(3_000.0)


def test_a_calibrated_fill_gets_its_trends_band_and_says_which() -> None:
    hours = _minutes(5)
    consumed = 500_000.0 + 2_000.0 * hours
    samples = [
        Sample("growing", horizon, float(error))
        for horizon in (6.0, 24.0, 72.0)
        for error in np.linspace(-0.01, 0.01, 19)
    ]
    calibration = Calibration.of(samples, 0.9)
    params = ForecastParams()
    result = forecast_hourly(
        *hourly_means(hours, consumed), CAPACITY, params, calibration=calibration
    )
    assert result.hours_to_full is not None
    assert result.hours_to_full_low is not None
    # +-1 % of capacity = +-10,000 bytes = +-5 h at 2,000 bytes an hour; the fill is 250 h
    # out, past the last calibrated horizon (72 h): the late side is open, the early side
    # scales the 72 h error with time.
    assert result.hours_to_full_high is None
    assert result.hours_to_full_low < result.hours_to_full
    expected_early = 500_000.0 / (2_000.0 + 10_000.0 / 72.0)
    assert result.hours_to_full_low == pytest.approx(expected_early, abs=1.5)
    assert result.band is not None
    assert "split-conformal 90% band, growing trend, calibrated to 72 h" in result.band


def test_a_near_fill_gets_a_closed_band() -> None:
    hours = _minutes(5)
    consumed = 900_000.0 + 2_000.0 * hours  # 50 h to fill
    samples = [
        Sample("growing", horizon, float(error))
        for horizon in (6.0, 24.0, 72.0)
        for error in np.linspace(-0.01, 0.01, 19)
    ]
    result = forecast_hourly(
        *hourly_means(hours, consumed),
        CAPACITY,
        calibration=Calibration.of(samples, 0.9),
    )
    assert result.hours_to_full is not None
    assert result.hours_to_full_low is not None
    assert result.hours_to_full_high is not None
    assert result.hours_to_full_low == pytest.approx(result.hours_to_full - 5.0, abs=1.0)
    assert result.hours_to_full_high == pytest.approx(result.hours_to_full + 5.0, abs=1.0)
    assert not math.isnan(result.level)


def test_an_exact_line_is_growing_with_its_slope_known() -> None:
    """No residual to speak of (a noiseless line sampled every 15 minutes): the slope's
    interval is the slope, not a guess from the rounding errors' autocorrelation."""
    hours = np.arange(-6 * 24 * 60, 1, 15) / 60.0
    result = forecast_hourly(*hourly_means(hours, 1.0e12 + 1.0e9 * (hours + 144)), 2.0e12)
    assert result.trend is Trend.GROWING
    assert result.slope_low == result.slope_high == pytest.approx(1.0e9)
    assert result.hours_to_full == pytest.approx(856.0)


def test_a_constant_volume_is_flat_not_growing_by_rounding() -> None:
    hours = _minutes(3)
    values = np.full(hours.shape, 412_345.678)  # polyfit's slope here is about 1e-17
    line = trend_line(hours, values)
    assert line is not None
    assert line.slope == 0.0
    result = forecast_hourly(hours, values, CAPACITY)
    assert result.trend is Trend.FLAT
    assert result.hours_to_full is None
