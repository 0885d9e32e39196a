"""``volume-quota history backtest``: the table, --json, --help, one-line errors; and the
Spark bucketing agreeing with the pure one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_history import synthetic
from spark_history.forecast.backtest.rolling_origin import bucket_series
from spark_history.forecast.backtest.spark_buckets import bucket_rows, series_by_volume
from spark_history.synthetic_jsonl import write_jsonl
from volume_quota.cli import main

pytestmark = pytest.mark.spark

CONFIG = synthetic.HistoryConfig(history_hours=4 * 24, interval_seconds=900)
SPARK = ["--master", "local[2]"]


@pytest.fixture(scope="module")
def history_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("history") / "snapshots.jsonl"
    traces = synthetic.make_traces(5, 6, CONFIG)
    write_jsonl(synthetic.history_frame(traces, 5, CONFIG), path)
    return path


def test_help_explains_every_column(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["history", "backtest", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for column in (
        "origins",
        "crossings",
        "misses",
        "false fills",
        "unscored",
        "err p50",
        "err p90",
        "band",
        "open",
    ):
        assert column in text, column
    assert "VOLUME_QUOTA_HISTORY_BUCKET" in text


def test_json_scores_every_forecaster_at_every_horizon(
    spark: SparkSession, history_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["history", "backtest", "--input", str(history_file), "--json", *SPARK])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    document = json.loads(captured.out)
    rows = document["rows"]
    assert {row["forecaster"] for row in rows} == {"linear-6h", "linear-72h", "forecast"}
    assert {row["horizonHours"] for row in rows} == {6.0, 24.0, 72.0, 168.0}
    # 4 days of hourly buckets: origins at 24, 30, ..., 90 h for each of 6 volumes, less the
    # ones already over the limit.
    by_key = {(row["forecaster"], row["horizonHours"]): row for row in rows}
    assert 0 < by_key[("forecast", 6.0)]["origins"] <= 6 * 12
    assert by_key[("forecast", 6.0)]["origins"] == by_key[("linear-6h", 6.0)]["origins"]
    assert by_key[("forecast", 6.0)]["errorP50Percent"] is not None
    assert by_key[("linear-72h", 168.0)]["errors"] == 0  # nothing 7 days past a 4-day history
    assert document["volumes"] == 6
    assert document["bucketSeconds"] == 3600.0
    assert "[backtest]" in captured.err  # progress on stderr


def test_table_has_one_line_per_forecaster_and_horizon(
    spark: SparkSession, history_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        ["history", "backtest", "--input", str(history_file), "--horizons", "6,24", *SPARK]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    lines = captured.out.strip().splitlines()
    assert lines[0].split()[:3] == ["forecaster", "horizon", "origins"]
    body = [line for line in lines[1:] if line.strip() and not line.startswith("-")]
    assert [line.split()[0] for line in body] == [
        "linear-6h",
        "linear-6h",
        "linear-72h",
        "linear-72h",
        "forecast",
        "forecast",
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--input", "{missing}"], "does not exist"),
        (["--input", "{input}", "--horizons", "6,x"], "--horizons"),
        (["--input", "{input}", "--horizons", "500"], "within"),
        (["--input", "{input}", "--origin-step", "0"], "--origin-step"),
        (["--input", "{input}", "--warmup", "1.5"], "--warmup"),
        (["--input", "{input}", "--history-bucket", "0"], "--history-bucket"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    arguments: list[str],
    message: str,
    history_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        part.replace("{input}", str(history_file)).replace("{missing}", str(tmp_path / "no"))
        for part in arguments
    ]
    assert main(["history", "backtest", *argv, *SPARK]) == 2
    _assert_one_line(capsys.readouterr().err, message)


def test_a_bad_bucket_in_the_environment_is_one_line_and_exit_2(
    history_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_HISTORY_BUCKET", "soon")
    assert main(["history", "backtest", "--input", str(history_file), *SPARK]) == 2
    _assert_one_line(capsys.readouterr().err, "VOLUME_QUOTA_HISTORY_BUCKET")


def _assert_one_line(stderr: str, message: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert message in lines[0]
    assert lines[0].startswith("volume-quota: error: ")


@pytest.mark.parametrize("bucket_seconds", [3600.0, 60.0])
def test_spark_buckets_as_the_pure_core_does(spark: SparkSession, bucket_seconds: float) -> None:
    seconds = np.array([1.0, 1799.0, 3600.0, 3601.0, 9000.0, 9001.0]) + 1.7e9
    frame = pd.DataFrame(
        {
            "brokerId": 1,
            "volumeName": "/data",
            "snapshotAt": pd.to_datetime(pd.Series(seconds), unit="s", utc=True),
            "capacity": 1000,
            "consumed": [10, 30, 20, 50, 40, 45],
            "hardThresholdBytes": [50.0, 50.0, 50.0, 60.0, 70.0, 80.0],
        }
    )
    rows = spark.createDataFrame(frame)
    collected = bucket_rows(rows, bucket_seconds, None).toPandas()
    ((broker, volume, series),) = series_by_volume(collected)
    expected = bucket_series(
        seconds,
        frame["consumed"].to_numpy(dtype=np.float64),
        frame["capacity"].to_numpy(dtype=np.float64),
        frame["hardThresholdBytes"].to_numpy(dtype=np.float64),
        bucket_seconds,
    )
    assert (broker, volume) == (1, "/data")
    assert series.index.tolist() == expected.index.tolist()
    for name in ("maxima", "means", "minima", "capacity", "limit", "mean_times"):
        assert np.allclose(getattr(series, name), getattr(expected, name)), name
