"""The backtest's forecasters (``spark_history.backtest_forecasters``): the job's forecast
called on the history up to the origin, and its ablations recomposing it faithfully."""

from __future__ import annotations

import numpy as np
import pytest

from spark_history import synthetic
from spark_history.backtest import BacktestConfig, bucket_series
from spark_history.backtest_forecasters import default_forecasters, forecast_without
from spark_history.envelope_forecast import forecast_hourly
from spark_history.forecast_types import ForecastParams, Trend
from tests.spark.test_backtest import GIB, HOUR, line_series

pytestmark = pytest.mark.spark


def test_the_current_forecast_is_called_on_history_up_to_the_origin_only() -> None:
    series = line_series(hours=24 * 8, start=10 * GIB, per_hour=0.3 * GIB, capacity=100 * GIB)
    config = BacktestConfig()
    envelope = next(f for f in default_forecasters(config) if f.name == "forecast")
    history = series.history_at(150)
    expected = forecast_hourly(
        history.hours,
        history.maxima,
        history.limit,
        ForecastParams(horizon_hours=config.horizon_hours),
        minima=history.minima,
    )
    prediction = envelope.predict(history)
    assert prediction.crossing == expected.hours_to_full
    assert prediction.crossing is not None
    assert history.hours.max() == -0.5


def test_the_forecast_without_no_step_is_the_forecast_itself() -> None:
    """The ablations recompose ``forecast_hourly``: with nothing left out, the same result."""
    config = synthetic.HistoryConfig(history_hours=6 * 24, interval_seconds=900)
    frame = synthetic.history_frame(synthetic.make_traces(4, 12, config), 4, config)
    params = ForecastParams(horizon_hours=7 * 24.0)
    compose = forecast_without(None)
    trends = set()
    for _, volume in frame.groupby(["brokerId", "volumeName"]):
        seconds = (volume["snapshotAt"] - volume["snapshotAt"].min()).dt.total_seconds()
        series = bucket_series(
            seconds.to_numpy(dtype=np.float64) + 1.0,
            volume["consumed"].to_numpy(dtype=np.float64),
            volume["capacity"].to_numpy(dtype=np.float64),
            0.05 * volume["capacity"].to_numpy(dtype=np.float64),
            HOUR,
        )
        for origin in (48, 96, int(series.index[-1])):
            history = series.history_at(origin)
            expected = forecast_hourly(
                history.hours, history.maxima, history.limit, params, minima=history.minima
            )
            got = compose(history.hours, history.maxima, history.minima, history.limit, params)
            assert _same(got, expected), (origin, got, expected)
            trends.add(expected.trend)
    assert len(trends) >= 3  # growing, retention, flat...: the composition is exercised


def test_the_forecast_without_no_step_agrees_just_after_a_disk_replacement() -> None:
    hours = np.arange(-60, 0, dtype=np.float64) + 0.5
    maxima = 50 * GIB + 0.1 * GIB * (hours + 60)
    maxima[-3:] = 0.5 * GIB  # replaced 3 h ago: nothing left after the settling hours
    params = ForecastParams()
    expected = forecast_hourly(hours, maxima, 95 * GIB, params, minima=maxima)
    got = forecast_without(None)(hours, maxima, maxima, 95 * GIB, params)
    assert expected.trend is Trend.INSUFFICIENT_DATA
    assert _same(got, expected)


def test_an_unknown_step_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown step"):
        forecast_without("everything")


def _same(left: object, right: object) -> bool:
    """Equal dataclasses, NaN equal to NaN."""
    return repr(left) == repr(right)
