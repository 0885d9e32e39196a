"""The fleet-scale benchmark's pure helpers: step lines, process roles, textfile series and the
extrapolation."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

import pytest

from benchmarks.fleet_measure import (
    DRIVER_JVM,
    DRIVER_PYTHON,
    EXECUTOR_JVM,
    EXECUTOR_PYTHON,
    Measured,
    calibration_origins,
    extrapolate,
    fit_costs,
    held_out,
    parse_size,
    parse_steps,
    process_role,
    prometheus_series,
    rows_read,
)
from spark_history.forecast.backtest.rolling_origin import origins_of
from spark_history.forecast.envelope import calibration_config
from spark_history.forecast.vocabulary import ForecastParams
from tests.spark_history_pure.usage_factory import growing_buckets

STDERR = """\
26/11/27 07:30:00 WARN NativeCodeLoader: Unable to load native-hadoop library
[history] forecast ...
[history] forecast: 12.5 s
[history] topics and headroom ...
[Stage 3:====>    (2 + 2) / 8]
[history] topics and headroom: 40.0 s
[history] backtest of the forecast: 3 s
[history] forecast: 1.5 s
"""


def test_step_lines_are_parsed_in_order_and_a_repeated_step_is_summed() -> None:
    assert parse_steps(STDERR) == {
        "forecast": 14.0,
        "topics and headroom": 40.0,
        "backtest of the forecast": 3.0,
    }


def test_a_step_still_running_has_no_time() -> None:
    assert parse_steps("[history] balance ...\n") == {}


@pytest.mark.parametrize(
    ("command", "role"),
    [
        (["/usr/lib/jvm/bin/java", "-cp", "x", "org.apache.spark.deploy.SparkSubmit"], DRIVER_JVM),
        (["java", "org.apache.spark.executor.CoarseGrainedExecutorBackend"], EXECUTOR_JVM),
        (["/usr/bin/python3", "/w/spark_history/job.py", "report"], DRIVER_PYTHON),
        (["python3", "-m", "pyspark.daemon"], EXECUTOR_PYTHON),
        (["java", "org.apache.spark.deploy.worker.Worker"], None),
        (["bash", "spark-submit", "job.py"], None),
        ([], None),
    ],
)
def test_process_roles_come_from_the_command_line(command: list[str], role: str | None) -> None:
    assert process_role(command) == role


def test_textfile_series_are_counted_per_metric_without_comments() -> None:
    text = (
        "# HELP a_hours x\n# TYPE a_hours gauge\n"
        'a_hours{broker="1",volume="/dev/vdb"} 3.5\n'
        'a_hours{broker="2",volume="/dev/vdb"} 4\n'
        "b_total 7\n\n"
    )
    assert prometheus_series(text) == {"a_hours": 2, "b_total": 1}


def test_the_costs_are_fitted_by_least_squares() -> None:
    # 10 s fixed, 2 s per row, 0.5 s per volume.
    points = [((rows, volumes), 10.0 + 2.0 * rows + 0.5 * volumes) for rows, volumes in
              [(1.0, 10.0), (3.0, 10.0), (1.0, 40.0), (9.0, 20.0)]]  # fmt: skip
    model = fit_costs(points)
    assert model.fixed == pytest.approx(10.0)
    assert model.per_unit == pytest.approx((2.0, 0.5))


def test_a_unit_whose_cost_comes_out_negative_is_dropped() -> None:
    # More volumes ran slightly faster here: no volume makes a report faster, so that unit goes.
    model = fit_costs([((1.0, 10.0), 12.0), ((3.0, 10.0), 16.0), ((2.0, 40.0), 13.0)])
    assert model.per_unit[1] == 0.0
    assert model.per_unit[0] > 0.0


def test_one_point_goes_through_the_origin_in_its_first_unit() -> None:
    assert fit_costs([((4.0, 2.0), 8.0)]).at((10.0, 2.0)) == pytest.approx(20.0)
    assert fit_costs([((0.0, 5.0), 2.0)]).at((0.0, 50.0)) == pytest.approx(20.0)


def test_a_step_reads_only_its_window() -> None:
    assert rows_read(100.0, 90.0, 30.0) == 3000.0
    assert rows_read(100.0, 3.0, 30.0) == 300.0
    assert rows_read(100.0, 90.0, None) == 9000.0


def test_extrapolation_scales_windowed_steps_by_their_window_and_files_by_volumes() -> None:
    runs = [
        Measured(10, days, 1000.0, 0.0, {"forecast": 5.0 + days, "plots and files": 2.0})
        for days in (1.0, 3.0)
    ]
    # forecast: 5 s + 1 s per 1000 rows; at 10x the volumes and 90 days it reads 7 days.
    target = extrapolate(runs, volumes=100, days=90.0)
    assert target["forecast"] == pytest.approx(5.0 + 70.0)
    # plots and files: the same volumes in both runs, so its line is through the origin.
    assert target["plots and files"] == pytest.approx(20.0)


@pytest.mark.parametrize("hours", [24, 72, 73, 77, 78, 79, 100, 168])
def test_calibration_origins_are_those_of_the_backtest_on_the_lookback_window(hours: int) -> None:
    params = ForecastParams()
    config = calibration_config(params)
    assert config is not None
    series = growing_buckets(datetime(2026, 11, 1, tzinfo=UTC), hours)
    assert calibration_origins(hours / 24.0) == len(origins_of(series, config))


def test_past_the_lookback_the_origins_stop_growing() -> None:
    assert calibration_origins(3.0) == 0
    assert calibration_origins(90.0) == calibration_origins(7.0) > 0


def test_a_calibrating_step_adds_its_cost_per_volume_and_origin_to_its_line() -> None:
    # topics and headroom: 5 s + 1 s per 1000 rows, plus 0.01 s per volume and origin.
    def seconds(volumes: int, days: float) -> float:
        rows = 1000.0 * volumes / 10 * min(days, 7.0)
        return 5.0 + rows / 1000.0 + 0.01 * volumes * calibration_origins(days)

    sizes = [(10, 1.0), (10, 3.0), (40, 1.0), (10, 10.0)]
    runs = [
        Measured(
            v, d, 100.0 * v, 0.0, {"topics and headroom": seconds(v, d), "balance": v * min(d, 7.0)}
        )
        for v, d in sizes
    ]
    target = extrapolate(runs, volumes=1000, days=90.0)
    assert target["topics and headroom"] == pytest.approx(seconds(1000, 90.0))
    # A step that does not calibrate keeps one line through every run: 1 s per 100 rows.
    assert target["balance"] == pytest.approx(1000 * 7.0)


def test_past_the_calibration_sample_a_larger_fleet_calibrates_no_more() -> None:
    sample = ForecastParams().calibration_volumes

    def seconds(volumes: int, days: float) -> float:
        rows = 1000.0 * volumes / 10 * min(days, 7.0)
        return 5.0 + rows / 1000.0 + 0.01 * min(volumes, sample) * calibration_origins(days)

    sizes = [(10, 1.0), (10, 3.0), (40, 1.0), (10, 10.0)]
    runs = [Measured(v, d, 100.0 * v, 0.0, {"forecast": seconds(v, d)}) for v, d in sizes]
    for volumes in (sample, 10 * sample):
        target = extrapolate(runs, volumes=volumes, days=90.0)
        assert target["forecast"] == pytest.approx(seconds(volumes, 90.0))


def test_each_run_left_out_is_predicted_by_the_others() -> None:
    # 3 s fixed, 1 s per 1000 rows, 0.02 s per volume; 4 runs, so any 3 give the model.
    def seconds(volumes: int, days: float) -> float:
        return 3.0 + 100.0 * volumes * min(days, 7.0) / 1000.0 + 0.02 * volumes

    sizes = [(10, 1.0), (10, 3.0), (40, 1.0), (80, 2.0)]
    runs = [Measured(v, d, 100.0 * v, 0.0, {"balance": seconds(v, d)}) for v, d in sizes]
    assert held_out(runs) == pytest.approx([seconds(v, d) for v, d in sizes])


def test_a_step_not_known_to_the_model_is_taken_to_read_the_whole_history() -> None:
    runs = [Measured(10, days, 1000.0, 0.0, {"new step": days}) for days in (1.0, 3.0)]
    assert extrapolate(runs, volumes=10, days=90.0)["new step"] == pytest.approx(90.0)


def test_a_size_is_brokers_and_days() -> None:
    assert parse_size("1000:1") == (1000, 1.0)
    assert parse_size("50:2.5") == (50, 2.5)
    for wrong in ("1000", "x:1", "0:1", "10:0", "10:-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_size(wrong)
