"""Data never stops the forecast: gaps, full volumes, retired brokers, a corrupt volume.

Expected values come from the hand-made scenarios (rates, capacities, instants), never from
the code under test.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.commands import main
from spark_history.forecast.pandas_trend import forecast_volumes_pandas
from spark_history.forecast.spark_trend import forecast_volumes
from spark_history.forecast.trend import Trend, forecast_hourly
from spark_history.synthetic_jsonl import write_jsonl

from .conftest import RowsFactory
from .history_frames import AT, volume_frame

CAPACITY = 2 * 10**12
RATE = 10**9  # bytes an hour


def _gap_hours() -> np.ndarray:
    """Five-minute snapshots over 7 days, except a 48 h hole that ended 22 h before AT."""
    minutes = np.arange(-7 * 24 * 60, 1, 5) / 60.0
    return minutes[(minutes <= -70.0) | (minutes > -22.0)]


def test_a_48_hour_gap_ending_within_the_last_day_gives_the_true_fill_time() -> None:
    # Hourly maxima of a line: 1.0e12 + RATE per hour; at AT it is 1.168e12, full in 832 h.
    hours = np.concatenate([np.arange(-167.5, -70.0, 1.0), np.arange(-21.5, 0.0, 1.0)])
    consumed = 1.0e12 + RATE * (hours + 168.0)
    result = forecast_hourly(hours, consumed, float(CAPACITY))
    assert result.trend is Trend.GROWING
    assert result.hours_to_full == pytest.approx((CAPACITY - 1.168e12) / RATE, rel=0.01)


@pytest.mark.spark
def test_one_bad_volume_is_marked_and_the_others_are_forecast(
    spark: SparkSession, make_rows: RowsFactory
) -> None:
    hours = _gap_hours()
    full_hours = np.arange(-7 * 24 * 60, 1, 5) / 60.0
    frame = pd.concat(
        [
            volume_frame([1], "/dev/gap", hours, 1.0e12 + RATE * (hours + 168), CAPACITY),
            # Filled 12 h before AT and stayed full.
            volume_frame([1], "/dev/full", full_hours,
                         np.minimum(1.5e12 + RATE * 10 * (full_hours + 62), CAPACITY), CAPACITY),
        ]
    )  # fmt: skip
    good = make_rows(frame)
    # A corrupt row (no capacity) in a third volume: its forecast fails, alone.
    newest = F.lit(AT - timedelta(minutes=1))
    bad = good.where(F.col("volumeName") == "/dev/gap").select(
        *[
            F.lit("/dev/corrupt").alias(name)
            if name == "volumeName"
            else F.when(F.col("snapshotAt") < newest, F.col(name)).alias(name)
            if name == "capacity"
            else F.col(name)
            for name in good.columns
        ]
    )
    result = forecast_volumes(good.unionByName(bad), AT).toPandas().set_index("volumeName")
    assert set(result.index) == {"/dev/gap", "/dev/full", "/dev/corrupt"}
    assert result.loc["/dev/corrupt", "trend"] == "error"
    assert "ValueError" in str(result.loc["/dev/corrupt", "reason"])
    assert result.loc["/dev/gap", "trend"] == "growing"
    # 1.168e12 used at AT, 1e9 an hour: 832 h to the 2e12 capacity.
    assert result.loc["/dev/gap", "hoursToFull"] == pytest.approx(832.0, rel=0.02)
    assert result.loc["/dev/full", "trend"] == "full"
    assert result.loc["/dev/full", "hoursToFull"] == 0.0
    assert result.loc["/dev/full", "usedPercent"] == pytest.approx(100.0)


def _retirement_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    hours = np.arange(-6 * 24 * 60, 1, 15) / 60.0
    growing = 1.0e12 + RATE * (hours + 144)
    live = volume_frame([1], "/dev/a", hours, growing, CAPACITY)
    # Broker 2 left 4 days ago: snapshots stop at -96 h and a tombstone follows a minute later.
    left = volume_frame([2], "/dev/a", hours[hours <= -96], growing[hours <= -96], CAPACITY)
    # Broker 3 went silent 30 h ago with no tombstone (over the 24 h default).
    silent = volume_frame([3], "/dev/a", hours[hours <= -30], growing[hours <= -30], CAPACITY)
    # Broker 4 left an hour ago, with a tombstone: the tombstone decides, not the silence.
    recent = volume_frame([4], "/dev/a", hours[hours <= -2], growing[hours <= -2], CAPACITY)
    tombstones = pd.DataFrame(
        {
            "brokerId": [2, 4, 1],
            "snapshotAt": pd.to_datetime(
                [AT - timedelta(hours=95.98), AT - timedelta(hours=1), AT - timedelta(days=6.5)],
                utc=True,
            ),
        }
    )
    return pd.concat([live, left, silent, recent], ignore_index=True), tombstones


@pytest.mark.spark
def test_retired_brokers_are_flagged_and_not_forecast(
    spark: SparkSession, make_rows: RowsFactory
) -> None:
    frame, tombstones = _retirement_frames()
    rows = make_rows(frame)
    stones = spark.createDataFrame(tombstones.astype({"brokerId": "int32"}))
    result = forecast_volumes(rows, AT, tombstones=stones).toPandas().set_index("brokerId")
    # Broker 1's tombstone is older than its snapshots: it came back, it is forecast.
    assert result.loc[1, "trend"] == "growing"
    assert result.loc[1, "hoursToFull"] == pytest.approx((CAPACITY - 1.144e12) / RATE, rel=0.02)
    for broker in (2, 3, 4):
        assert result.loc[broker, "trend"] == "retired", broker
        assert pd.isna(result.loc[broker, "hoursToFull"])
    reasons = {broker: str(result.loc[broker, "reason"]) for broker in (2, 3, 4)}
    assert "tombstone" in reasons[2]
    assert "silent" in reasons[3]
    assert "tombstone" in reasons[4]
    reference = forecast_volumes_pandas(frame, AT, tombstones=tombstones).set_index("brokerId")
    assert list(reference.loc[[1, 2, 3, 4], "trend"]) == list(result.loc[[1, 2, 3, 4], "trend"])


@pytest.mark.spark
def test_forecast_command_survives_the_gap_and_writes_the_csv(
    spark: SparkSession, tmp_path: Path
) -> None:
    hours = _gap_hours()
    frame = volume_frame([1, 2], "/dev/gap", hours, 1.0e12 + RATE * (hours + 168), CAPACITY)
    source = tmp_path / "gap.jsonl"
    write_jsonl(frame, source)
    output = tmp_path / "forecast.csv"
    metrics = tmp_path / "textfile" / "volume_quota.prom"
    argv = ["forecast", "--input", str(source), "--at", AT.isoformat(), "--output", str(output)]
    argv += ["--prometheus-textfile", metrics.as_uri(), "--master", "local[2]"]
    assert main(argv) == 0
    table = pd.read_csv(output)
    assert list(table["trend"]) == ["growing", "growing"]
    assert table["hoursToFull"].to_numpy() == pytest.approx([832.0, 832.0], rel=0.02)
    samples = [
        line
        for line in metrics.read_text().splitlines()
        if line.startswith("volume_quota_history_hours_to_full{")
    ]
    assert len(samples) == 2
    assert float(samples[0].rsplit(" ", 1)[1]) == pytest.approx(832.0, rel=0.02)
    assert not (tmp_path / "textfile" / "volume_quota.prom.tmp").exists()
