"""The rolling-origin backtest core (``spark_history.forecast.backtest.rolling_origin``): pure
numpy, no Spark."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spark_history.forecast.backtest.forecasters import (
    default_forecasters,
    predict_linear_forecaster,
)
from spark_history.forecast.backtest.rolling_origin import (
    BacktestConfig,
    BucketSeries,
    Forecaster,
    History,
    Prediction,
    bucket_series,
    origins_of,
    score_series,
    summarize,
)

GIB = 1024**3
HOUR = 3600.0


def line_series(hours: int, start: float, per_hour: float, capacity: float) -> BucketSeries:
    """An exact line sampled every 10 minutes, bucketed hourly."""
    seconds = np.arange(1, hours * 6 + 1, dtype=np.float64) * 600.0
    used = start + per_hour * seconds / HOUR
    return bucket_series(
        seconds,
        used,
        np.full(seconds.size, capacity),
        np.full(seconds.size, 0.05 * capacity),
        bucket_seconds=HOUR,
    )


def test_bucketing_takes_max_mean_and_the_limit_per_bucket() -> None:
    seconds = np.array([600.0, 1800.0, 3600.0, 3700.0, 7000.0])
    used = np.array([1.0, 5.0, 3.0, 10.0, 2.0])
    series = bucket_series(
        seconds, used, np.full(5, 100.0), np.array([5.0, 5.0, 5.0, 10.0, 10.0]), HOUR
    )
    assert series.index.tolist() == [1, 2]  # (0, 1h] and (1h, 2h], as the job's ceil
    assert series.maxima.tolist() == [5.0, 10.0]
    assert series.means.tolist() == [3.0, 6.0]
    assert series.minima.tolist() == [1.0, 2.0]
    assert series.limit.tolist() == [95.0, 90.0]  # capacity minus the newest hard threshold


def test_bucket_width_changes_the_clock_not_the_result_of_a_compressed_run() -> None:
    """The same shape replayed 60 times faster, bucketed by the minute, scores the same."""
    hours = np.arange(1, 24 * 10 + 1, dtype=np.float64)
    used = 10 * GIB + 0.2 * GIB * hours
    capacity = np.full(hours.size, 100.0 * GIB)
    hard = np.full(hours.size, 5.0 * GIB)
    real = bucket_series(hours * HOUR, used, capacity, hard, bucket_seconds=HOUR)
    compressed = bucket_series(hours * 60.0, used, capacity, hard, bucket_seconds=60.0)
    config = BacktestConfig()
    forecasters = default_forecasters(config)
    assert summarize(score_series(real, forecasters, config)) == summarize(
        score_series(compressed, forecasters, config)
    )


def test_origins_step_after_the_warm_up_and_leave_a_future() -> None:
    series = line_series(hours=60, start=0.0, per_hour=1.0, capacity=1e9)
    origins = origins_of(series, BacktestConfig(origin_step_hours=6.0, warmup_hours=24.0))
    assert origins == [24, 30, 36, 42, 48, 54]


@pytest.mark.parametrize("window", [6.0, 72.0])
def test_an_exact_line_gets_zero_error_from_predict_linear(window: float) -> None:
    series = line_series(hours=24 * 12, start=10 * GIB, per_hour=0.25 * GIB, capacity=100 * GIB)
    scores = score_series(series, [predict_linear_forecaster(window)], BacktestConfig())
    errors = [score.abs_error for score in scores if score.abs_error is not None]
    assert len(errors) > 100
    # The bucket maximum of a line is its value at the bucket's end: fitted on bucket means
    # (the line at the bucket's mean time), the prediction is exact.
    assert max(errors) < 1e-3 * GIB


def test_an_exact_line_crossing_the_hard_limit_is_neither_missed_nor_falsely_filled() -> None:
    # 10 GiB + 0.5 GiB/h reaches 95 GiB (capacity minus a 5 % hard limit) after 170 h.
    series = line_series(hours=24 * 10, start=10 * GIB, per_hour=0.5 * GIB, capacity=100 * GIB)
    scores = score_series(series, [predict_linear_forecaster(72.0)], BacktestConfig())
    crossings = [score for score in scores if score.real_crossing]
    assert crossings
    assert not [score for score in scores if score.miss]
    assert not [score for score in scores if score.false_fill]
    assert not [score for score in scores if score.real_crossing is False and score.predicted]


def test_a_jump_just_after_the_origin_changes_no_forecast() -> None:
    """No forecaster sees a point after its origin."""
    base = line_series(hours=24 * 5, start=10 * GIB, per_hour=0.1 * GIB, capacity=100 * GIB)
    jumped_maxima = base.maxima.copy()
    jumped_means = base.means.copy()
    origin = 72
    after = base.index > origin
    jumped_maxima[after] += 50 * GIB
    jumped_means[after] += 50 * GIB
    jumped = BucketSeries(
        base.index,
        jumped_maxima,
        jumped_means,
        base.minima,
        base.capacity,
        base.limit,
        base.mean_times,
    )
    config = BacktestConfig()
    for forecaster in default_forecasters(config):
        plain = forecaster.predict(base.history_at(origin))
        with_jump = forecaster.predict(jumped.history_at(origin))
        assert plain == with_jump, forecaster.name
    seen: list[float] = []

    def spy(history: History) -> Prediction:
        seen.append(float(history.hours.max()))
        return Prediction(None, float(history.maxima[-1]), 0.0)

    score_series(jumped, [Forecaster("spy", spy)], config)
    assert seen
    assert max(seen) <= 0.0


def test_a_missed_fill_and_a_false_fill_are_counted_and_an_open_future_is_unscored() -> None:
    flat_then_fill = line_series(hours=24 * 6, start=10 * GIB, per_hour=0.0, capacity=100 * GIB)
    maxima = flat_then_fill.maxima.copy()
    maxima[flat_then_fill.index > 100] = 99 * GIB  # a sudden fill nobody can see coming
    series = BucketSeries(
        flat_then_fill.index,
        maxima,
        maxima,
        flat_then_fill.minima,
        flat_then_fill.capacity,
        flat_then_fill.limit,
    )

    def always_fills(history: History) -> Prediction:
        return Prediction(1.0, float(history.maxima[-1]), 0.0)

    def never_fills(history: History) -> Prediction:
        return Prediction(None, float(history.maxima[-1]), 0.0)

    config = BacktestConfig(horizons_hours=(6.0, 24.0))
    scores = score_series(
        series, [Forecaster("always", always_fills), Forecaster("never", never_fills)], config
    )
    rows = {(row.forecaster, row.horizon_hours): row for row in summarize(scores)}
    # Origins 24..96 step 6; the fill at bucket 101 is within 24 h of origins 78..96 only.
    assert rows[("never", 24.0)].misses == 4
    assert rows[("never", 24.0)].false_fills == 0
    assert rows[("always", 24.0)].misses == 0
    assert rows[("always", 24.0)].false_fills == 9  # origins 24..72: the fill is later
    assert rows[("always", 6.0)].crossings == 1  # origin 96: crossing at 101
    # Origins after the fill are already over the limit: not scored at all.
    assert rows[("always", 6.0)].origins == 13


def test_a_band_open_on_one_side_is_reported_open_and_not_covering() -> None:
    series = line_series(hours=24 * 10, start=10 * GIB, per_hour=0.5 * GIB, capacity=100 * GIB)

    def exact(history: History, high: float | None) -> Prediction:
        line = predict_linear_forecaster(72.0).predict(history)
        if line.crossing is None:
            return line
        return Prediction(line.crossing, line.intercept, line.slope, (line.crossing - 2, high))

    closed = Forecaster("closed", lambda history: exact(history, math.inf))
    opened = Forecaster("open", lambda history: exact(history, None))
    rows = {
        row.forecaster: row
        for row in summarize(score_series(series, [closed, opened], BacktestConfig()))
        if row.horizon_hours == 168.0
    }
    assert rows["closed"].banded > 0
    assert rows["closed"].covered == rows["closed"].banded
    assert rows["closed"].open_bands == 0
    assert rows["open"].open_bands == rows["closed"].banded
    assert rows["open"].covered == 0
