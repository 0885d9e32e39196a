"""Spark forecast: right on known traces, same as the pandas reference, better than baseline."""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import synthetic
from spark_history.forecast.pandas_trend import forecast_volumes_pandas
from spark_history.forecast.predict_linear import predict_linear_hours
from spark_history.forecast.spark_trend import (
    calibration_sample,
    forecast_volumes,
    sampled_volumes,
)
from spark_history.forecast.trend import ForecastParams

from .conftest import RowsFactory
from .history_frames import AT, volume_frame

pytestmark = pytest.mark.spark

CAPACITY = 10**12


def test_linear_and_plateau_volumes(make_rows: RowsFactory) -> None:
    hours = np.arange(-4 * 24 * 60, 1, 5) / 60.0
    rate = CAPACITY * 0.002  # 0.2% of capacity an hour
    linear = 0.5 * CAPACITY + rate * hours
    # Flat since 60 h before AT (0.3 + 0.002 * 36 = 0.372 of capacity): most of the 72 h
    # window is flat, so the line barely rises and does not fill within 60 days. Flat since
    # only 21 h (0.45): most of the window still climbs, so the line still fills.
    plateau = np.minimum(0.3 * CAPACITY + rate * (hours + 96), 0.372 * CAPACITY)
    recent = np.minimum(0.3 * CAPACITY + rate * (hours + 96), 0.45 * CAPACITY)
    frame: pd.DataFrame = pd.concat(
        [
            volume_frame([1], "/dev/linear", hours, linear, CAPACITY),
            volume_frame([1], "/dev/plateau", hours, plateau, CAPACITY),
            volume_frame([1], "/dev/recent", hours, recent, CAPACITY),
        ]
    )
    result = forecast_volumes(make_rows(frame), AT).toPandas().set_index("volumeName")
    expected_hours = (CAPACITY - 0.5 * CAPACITY) / rate  # 250 h
    assert result.loc["/dev/linear", "hoursToFull"] == pytest.approx(expected_hours, rel=0.01)
    assert result.loc["/dev/linear", "trend"] == "growing"
    assert result.loc["/dev/linear", "usedPercent"] == pytest.approx(50.0, abs=0.01)
    assert result.loc["/dev/linear", "growthPercentPerDay"] == pytest.approx(4.8, rel=0.01)
    assert math.isnan(cast(float, result.loc["/dev/plateau", "hoursToFull"]))
    assert not math.isnan(cast(float, result.loc["/dev/recent", "hoursToFull"]))
    # Three volumes of four days give each trend too few backtest errors for a 90 % band
    # (19 are needed): no band, and the reason says so.
    assert math.isnan(cast(float, result.loc["/dev/linear", "hoursToFullLow"]))
    assert "no band" in str(result.loc["/dev/linear", "reason"])


def test_spark_and_pandas_forecasts_agree(make_rows: RowsFactory) -> None:
    config = synthetic.HistoryConfig(history_hours=5 * 24, interval_seconds=900)
    traces = synthetic.make_traces(21, 12, config)
    frame = synthetic.history_frame(traces, 21, config)
    rows = frame.assign(
        free=frame["capacity"] - frame["consumed"],
        softLimitType="x",
        softLimitLevel=0.0,
        hardLimitType="x",
        hardLimitLevel=0.0,
        softThresholdBytes=0.0,
        hardThresholdBytes=0.0,
        date=frame["snapshotAt"].dt.date,
    )
    spark_result = forecast_volumes(make_rows(rows), config.at).toPandas()
    pandas_result = forecast_volumes_pandas(frame, config.at)
    key = ["brokerId", "volumeName"]
    left = spark_result.sort_values(key).reset_index(drop=True)
    right = pandas_result.sort_values(key).reset_index(drop=True)
    assert left["trend"].tolist() == right["trend"].tolist()
    assert left["reason"].tolist() == right["reason"].tolist()
    for column in ("hoursToFull", "hoursToFullLow", "hoursToFullHigh"):
        np.testing.assert_allclose(left[column], right[column], rtol=1e-9)
    assert left["hoursToFullLow"].notna().any()  # 12 volumes of 5 days calibrate a band
    # Calibrated by one volume's backtests (8 origins of 5 days), too few errors for a 90 %
    # band: no volume gets one.
    one = forecast_volumes(make_rows(rows), config.at, ForecastParams(calibration_volumes=1))
    assert one.toPandas()["hoursToFullLow"].isna().all()


def _keys(frame: DataFrame) -> set[tuple[int, str]]:
    return {(row["brokerId"], row["volumeName"]) for row in frame.collect()}


def test_the_calibration_sample_is_a_fixed_draw_of_the_fleet(spark: SparkSession) -> None:
    volumes = [(broker, f"/v{number}") for broker in range(8) for number in range(4)]
    rows = spark.createDataFrame(
        [(broker, name, bucket) for broker, name in volumes for bucket in range(3)],
        "brokerId int, volumeName string, bucket int",
    )
    chosen = _keys(sampled_volumes(rows, 10))
    assert len(chosen) == 10
    assert chosen <= set(volumes)
    # Not the first by name: the draw spreads over the brokers.
    assert len({broker for broker, _ in chosen}) > 3, chosen
    # The same draw from the rows in another order and partitioning.
    shuffled = rows.orderBy(F.rand(seed=3)).repartition(5)
    assert _keys(sampled_volumes(shuffled, 10)) == chosen
    # A volume outside the draw leaving the fleet changes nothing.
    broker, name = next(volume for volume in volumes if volume not in chosen)
    fewer = rows.where((F.col("brokerId") != broker) | (F.col("volumeName") != name))
    assert _keys(sampled_volumes(fewer, 10)) == chosen
    # Every row of the chosen volumes and no other; a fleet within the size: all of it.
    sample = calibration_sample(rows, 10)
    assert sample.count() == 10 * 3
    assert _keys(sample.select("brokerId", "volumeName")) == chosen
    assert calibration_sample(rows, len(volumes)).count() == rows.count()


def test_beats_predict_linear_on_a_mixed_set() -> None:
    """The no-usage path's regression test on the synthetic generator (``synthetic.py``): the
    same traces, the forecast and ``predict_linear`` over 6 h, scored against the known fill
    times. The bounds are the current scores (seed 5, 36 volumes: median error 78 h against
    410 h; 14 false fills against 12 of 24 volumes that never fill), with a little room."""
    config = synthetic.HistoryConfig(interval_seconds=300)
    traces = synthetic.make_traces(5, 36, config)
    frame = synthetic.history_frame(traces, 5, config)
    params = ForecastParams()
    ours = forecast_volumes_pandas(frame, config.at, params).set_index(["brokerId", "volumeName"])
    errors: dict[str, list[float]] = {"ours": [], "baseline": []}
    false_fills = {"ours": 0, "baseline": 0}
    for trace in traces:
        volume = frame[
            (frame["brokerId"] == trace.broker_id) & (frame["volumeName"] == trace.volume_name)
        ]
        seconds = (volume["snapshotAt"] - pd.Timestamp(config.at)).dt.total_seconds()
        baseline = predict_linear_hours(
            np.asarray(seconds.to_numpy(dtype=np.float64) / 3600.0, dtype=np.float64),
            volume["consumed"].to_numpy(dtype=float),
            trace.shape.capacity,
            params.horizon_hours,
        )
        predicted = cast(float, ours.loc[(trace.broker_id, trace.volume_name), "hoursToFull"])
        mine = None if math.isnan(predicted) else predicted
        truth = trace.true_fill_hours
        for name, guess in (("ours", mine), ("baseline", baseline)):
            if truth is not None and truth <= params.horizon_hours:
                errors[name].append(abs(guess - truth) if guess is not None else truth)
            elif guess is not None and trace.plateaued:
                false_fills[name] += 1
    assert np.median(errors["ours"]) <= 85.0
    assert np.median(errors["ours"]) < np.median(errors["baseline"]) / 4
    assert false_fills["ours"] <= 15


def _plateau_hours_ago(trace: synthetic.Trace) -> float:
    """How long ago a trace reached its retention ceiling (inf: not a plateau trace)."""
    shape = trace.shape
    if shape.plateau_level is None or shape.growth_per_hour <= 0:
        return math.inf
    return (shape.level_at - shape.plateau_level) / shape.growth_per_hour


def test_synthetic_linear_traces_fill_near_time_and_old_plateaus_never(
    make_rows: RowsFactory,
) -> None:
    """Plateaus reached before the trend's window (72 h) never fill; three linear traces
    in four get a fill time within 30 % of the truth (the fourth, slow with a strong daily
    cycle, is missed: the 72 h line, tilted by the cycle's phase, reads it low)."""
    config = synthetic.HistoryConfig(interval_seconds=600, kinds=("linear", "plateau"))
    traces = synthetic.make_traces(4, 8, config)
    frame = synthetic.history_frame(traces, 4, config)
    rows = frame.assign(
        free=frame["capacity"] - frame["consumed"],
        softLimitType="MinFreePercentage",
        softLimitLevel=10.0,
        hardLimitType="MinFreePercentage",
        hardLimitLevel=5.0,
        softThresholdBytes=0.1 * frame["capacity"],
        hardThresholdBytes=0.05 * frame["capacity"],
        date=frame["snapshotAt"].dt.date,
    )
    result = forecast_volumes(make_rows(rows), config.at).toPandas()
    by_volume = result.set_index(["brokerId", "volumeName"])["hoursToFull"]
    fit_hours = ForecastParams().fit_hours
    on_time, linear = 0, 0
    for trace in traces:
        predicted = cast(float, by_volume.loc[(trace.broker_id, trace.volume_name)])
        if trace.kind == "plateau":
            if _plateau_hours_ago(trace) >= fit_hours:
                assert math.isnan(predicted), trace
        else:
            assert trace.true_fill_hours is not None
            linear += 1
            on_time += abs(predicted - trace.true_fill_hours) <= 0.3 * trace.true_fill_hours
    assert linear == 4
    assert on_time >= 3


def test_a_run_in_compressed_time_is_forecast_like_the_same_run_in_hours(
    make_rows: RowsFactory,
) -> None:
    """The same four days of model time, once in hours (1 h buckets) and once with each hour
    lasting a minute (1 min buckets): Spark and pandas give the same forecast, in buckets."""
    model_hours = np.arange(-4 * 24 * 60, 1, 5) / 60.0
    rate = CAPACITY * 0.002
    linear = 0.5 * CAPACITY + rate * model_hours
    plateau = np.minimum(0.3 * CAPACITY + rate * (model_hours + 96), 0.372 * CAPACITY)
    columns = ["volumeName", "trend", "hoursToFull", "usedPercent", "growthPercentPerDay"]

    def forecasts(scale: float, bucket_seconds: float) -> list[pd.DataFrame]:
        frame = pd.concat(
            [
                volume_frame([1], "/dev/linear", model_hours * scale, linear, CAPACITY),
                volume_frame([1], "/dev/plateau", model_hours * scale, plateau, CAPACITY),
            ]
        )
        params = ForecastParams(bucket_seconds=bucket_seconds)
        spark = forecast_volumes(make_rows(frame), AT, params).toPandas()
        return [
            table[columns].sort_values("volumeName").reset_index(drop=True)
            for table in (spark, forecast_volumes_pandas(frame, AT, params))
        ]

    in_hours = forecasts(1.0, 3600.0)
    in_minutes = forecasts(1 / 60.0, 60.0)
    assert in_hours[0].loc[0, "hoursToFull"] == pytest.approx(250.0, rel=0.01)
    for hours, minutes in zip(in_hours, in_minutes, strict=True):
        pd.testing.assert_frame_equal(hours, minutes, rtol=1e-6)
