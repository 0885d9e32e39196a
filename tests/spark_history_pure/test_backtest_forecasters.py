"""The backtest's forecasters (``spark_history.forecast.backtest.forecasters``): the job's forecast
called on the history up to the origin, its calibration samples, and the cross-fitting that
keeps a volume's band from being calibrated on the volume itself."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from spark_history.forecast.backtest.forecasters import (
    calibration_samples,
    cross_fitted,
    default_forecasters,
    forecast_forecaster,
    forecast_params,
)
from spark_history.forecast.backtest.rolling_origin import BacktestConfig
from spark_history.forecast.trend import forecast_hourly
from spark_history.forecast.vocabulary import ForecastParams
from tests.spark_history_pure.test_rolling_origin import GIB, line_series


def test_the_forecast_is_the_72_hour_line_called_on_history_up_to_the_origin_only() -> None:
    series = line_series(hours=24 * 8, start=10 * GIB, per_hour=0.3 * GIB, capacity=100 * GIB)
    config = BacktestConfig()
    forecast = next(f for f in default_forecasters(config) if f.name == "forecast")
    history = series.history_at(150)
    expected = forecast_hourly(
        history.mean_hours,
        history.means,
        history.limit,
        ForecastParams(horizon_hours=config.horizon_hours),
    )
    prediction = forecast.predict(history)
    assert prediction.crossing == expected.hours_to_full
    line = next(f for f in default_forecasters(config) if f.name == "linear-72h")
    assert prediction.crossing == pytest.approx(line.predict(history).crossing)
    assert prediction.crossing is not None
    assert prediction.trend == "growing"
    assert prediction.band is None  # not calibrated
    assert history.hours.max() == -0.5


def test_an_exact_line_calibrates_to_zero_errors() -> None:
    series = line_series(hours=24 * 6, start=10 * GIB, per_hour=0.1 * GIB, capacity=100 * GIB)
    config = BacktestConfig()
    samples = calibration_samples(series, forecast_forecaster(forecast_params(config)), config)
    assert {sample.horizon_hours for sample in samples} == {6.0, 24.0, 72.0}
    assert {sample.trend for sample in samples} == {"growing"}
    # The line through the means at their mean times is the line itself, and a bucket's
    # maximum is its last sample, on the line at the bucket's end.
    assert max(abs(sample.error) for sample in samples) < 1e-9


def test_a_volume_is_never_calibrated_on_its_own_history() -> None:
    rng = np.random.default_rng(7)
    volumes = []
    for number in range(6):
        series = line_series(
            hours=24 * 6, start=10 * GIB, per_hour=(0.1 + 0.02 * number) * GIB, capacity=100 * GIB
        )
        noisy = series.maxima + rng.normal(0, 0.2 * GIB, series.maxima.size)
        volumes.append(dataclasses.replace(series, maxima=noisy))
    config = BacktestConfig()
    before = cross_fitted(volumes, config)
    changed = list(volumes)
    wild = volumes[0].maxima + rng.normal(0, 5 * GIB, volumes[0].maxima.size)
    changed[0] = dataclasses.replace(volumes[0], maxima=wild)
    after = cross_fitted(changed, config)
    assert after[0] == before[0]  # volume 0's band ignores volume 0
    assert after[2] == before[2]  # and so does its fold's
    assert after[1] != before[1]  # the other fold's is calibrated on it
    assert before[0].counts
    assert before[1].counts


def test_a_calibrated_forecast_gives_its_band_in_the_prediction() -> None:
    volumes = [
        line_series(hours=24 * 7, start=10 * GIB, per_hour=0.3 * GIB, capacity=100 * GIB)
        for _ in range(2)
    ]
    config = BacktestConfig()
    calibration = cross_fitted(volumes, config)[0]
    forecast = next(f for f in default_forecasters(config, calibration) if f.name == "forecast")
    prediction = forecast.predict(volumes[0].history_at(150))
    assert prediction.crossing is not None
    assert prediction.band is not None
    early, late = prediction.band
    # Exact lines: zero errors at 6, 24 and 72 h; the fill (about 133 h out) is past 72 h,
    # so the late side is open.
    assert early == pytest.approx(prediction.crossing, abs=0.25)
    assert late is None
