"""Weekly growth per broker and clock skew per broker, on hand-made histories whose answers
follow from how they were built.

Growth: three weeks before AT, snapshots every 30 minutes (5 and 35 past the hour); the
level of an hour is the sum of its volumes' hourly maxima.

- broker 0, one 1 TiB volume: 400 GiB at AT, +10 GiB a day (70 GiB a week), plus a daily
  cycle of 5 GiB amplitude (whole weeks average it out);
- broker 1, two 1 TiB volumes: one +1 GiB a day (7 GiB a week), one flat; no snapshots for
  48 hours in the middle week (its level then sits off the week's centre, and the rate must
  still be exact);
- broker 2: only the last 30 hours (no week before it to compare with).

Skew: the record timestamp is ``snapshotAt`` shifted by a known number of seconds per message.
"""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.clock_skew import skew_per_broker, skew_sentence, with_clock_skew
from spark_history.history_input import load_window
from spark_history.weekly_growth import broker_hours, growth_pivot, weekly_growth

from .conftest import RowsFactory
from .history_frames import AT, FloatArray, volume_frame

pytestmark = pytest.mark.spark

GIB = 1024.0**3
TIB = 1024**4
HOURS: FloatArray = -504.0 + 1.0 / 12.0 + np.arange(1008) / 2.0  # 12:05, 12:35, ... 3 weeks


def _growth_history() -> pd.DataFrame:
    cycle = 5 * GIB * np.sin(2 * math.pi * HOURS / 24.0)
    gap = (HOURS > -250.0) & (HOURS <= -202.0)
    recent = HOURS > -30.0
    return pd.concat(
        [
            volume_frame([0], "/dev/a", HOURS, 400 * GIB + 10 * GIB * HOURS / 24 + cycle, TIB),
            volume_frame([1], "/dev/a", HOURS[~gap], 100 * GIB + GIB * HOURS[~gap] / 24, TIB),
            volume_frame([1], "/dev/b", HOURS[~gap], np.full((~gap).sum(), 300 * GIB), TIB),
            volume_frame([2], "/dev/a", HOURS[recent], np.full(recent.sum(), 10 * GIB), TIB),
        ],
        ignore_index=True,
    )


def test_weekly_growth_per_broker(spark: SparkSession, make_rows: RowsFactory) -> None:
    growth = weekly_growth(broker_hours(make_rows(_growth_history()), AT, 2), AT, 2)
    table = growth.set_index(["brokerId", "week"])

    for week in (0, 1):
        assert table.loc[(0, week), "growthBytesPerWeek"] == pytest.approx(70 * GIB, rel=1e-9)
        assert table.loc[(0, week), "growthPercentPerWeek"] == pytest.approx(70 / 1024 * 100)
        assert table.loc[(1, week), "growthBytesPerWeek"] == pytest.approx(7 * GIB, rel=1e-9)
        # Two 1 TiB volumes: 7 GiB is 7/2048 of the broker's capacity.
        assert table.loc[(1, week), "growthPercentPerWeek"] == pytest.approx(7 / 2048 * 100)
    assert table.loc[(0, 0), "hoursOfData"] == 168
    assert table.loc[(1, 1), "hoursOfData"] == 120  # the 48-hour gap
    # Broker 1's hourly maximum is its growing volume at 35 past (-168 + 7/12 + k h, k = 0..167:
    # their mean is 83.5 h later) plus the flat 300 GiB.
    mean_hours = -168.0 + 7.0 / 12.0 + 83.5
    expected_level = 100 * GIB + GIB * mean_hours / 24 + 300 * GIB
    assert table.loc[(1, 0), "meanConsumedBytes"] == pytest.approx(expected_level, rel=1e-9)
    assert table.loc[(0, 0), "weekStart"] == "2026-11-15 12:00"
    assert table.loc[(0, 0), "weekEnd"] == "2026-11-22 12:00"

    assert table.loc[(2, 0), "hoursOfData"] == 30
    assert table.loc[(2, 0), "meanConsumedBytes"] == pytest.approx(10 * GIB)
    assert pd.isna(table.loc[(2, 0), "growthBytesPerWeek"])  # nothing the week before

    pivot = growth_pivot(growth).set_index("brokerId")
    assert list(pivot.columns) == ["to 2026-11-15", "to 2026-11-22"]
    assert pivot.loc[1, "to 2026-11-15"] == pytest.approx(7.0, rel=1e-9)  # GiB a week


def test_a_week_with_less_than_a_day_of_data_has_no_level() -> None:
    # Broker 5: 23 hours in week 1, 168 in week 0: no growth for week 0.
    hours = pd.DataFrame(
        {
            "brokerId": 5,
            "bucket": np.r_[np.arange(-190, -167), np.arange(-167, 1)],
            "consumed": 1e12,
            "capacity": 2e12,
        }
    )
    growth = weekly_growth(hours, AT, 1)
    assert growth["hoursOfData"].tolist() == [168]
    assert pd.isna(growth.loc[0, "growthBytesPerWeek"])


def _receipts_frame() -> pd.DataFrame:
    """Brokers 0 and 1 with known skews per message; broker 2 without record timestamps."""
    hours = [-10.0, -8.0, -6.0, -4.0, -2.0]
    level = [1e9] * 5
    skews: dict[int, list[float]] = {
        0: [2, 2, 2, -300, 2],
        1: [88, 95, 90, 92, np.nan],
        2: [np.nan] * 5,
    }
    frames = []
    for broker, names in ((0, ("a", "b")), (1, ("a", "b")), (2, ("a",))):
        for name in names:
            frame = volume_frame([broker], name, hours, level, 10**12)
            # The same skew for every volume of a message (one snapshot, one record).
            frame["receivedAt"] = frame["snapshotAt"] - pd.to_timedelta(skews[broker], unit="s")
            frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    return frame[["brokerId", "snapshotAt", "receivedAt", "date"]].astype({"brokerId": "int32"})


def test_clock_skew_per_broker(spark: SparkSession) -> None:
    skews = skew_per_broker(spark.createDataFrame(_receipts_frame()), AT, 24.0)
    table = skews.set_index("brokerId")
    # Each message once, although it carried two volumes; broker 1's last has no timestamp.
    assert table["skewMessages"].to_dict() == {0: 5, 1: 4}
    assert table.loc[0, "medianSkewSeconds"] == 2.0
    assert table.loc[0, "worstSkewSeconds"] == -300.0  # a delayed message, not a wrong clock
    assert table.loc[1, "medianSkewSeconds"] == 91.0  # (90 + 92) / 2
    assert table.loc[1, "worstSkewSeconds"] == 95.0

    quality = pd.DataFrame({"brokerId": [0, 1, 2], "status": ["ok", "ok", "ok"]})
    flagged = with_clock_skew(quality, skews, 60.0)
    assert flagged["clockSkewed"].tolist() == [False, True, pd.NA]  # broker 2: not measured
    assert flagged["skewMessages"].tolist() == [5, 4, 0]
    sentence = skew_sentence(flagged, 60.0)
    assert "1 of 2 brokers beyond 60 s: broker 1 +91 s" in sentence
    # A looser limit flags nobody.
    assert not with_clock_skew(quality, skews, 100.0)["clockSkewed"].fillna(False).any()


def test_receipts_are_read_from_datasets_with_and_without_the_column(
    spark: SparkSession, make_rows: RowsFactory, tmp_path: Path
) -> None:
    dataset = tmp_path / "dataset"
    # A file written before the ingest kept receivedAt, then one with it, in one partition.
    old = make_rows(volume_frame([3], "a", [-5.0, -4.0], [1e9, 1e9], 10**12))
    old.write.partitionBy("date").parquet(str(dataset))
    new = make_rows(volume_frame([0], "a", [-3.0], [1e9], 10**12))
    new = new.withColumn("receivedAt", new["snapshotAt"] - F.expr("INTERVAL 2 SECONDS"))
    new.drop("date").write.mode("append").parquet(str(dataset / "date=2026-11-22"))

    window = load_window(spark, str(dataset), AT, 24.0)
    loaded = window.receipts
    assert loaded is not None
    rows = sorted(
        (row["brokerId"], row["snapshotAt"] - row["receivedAt"])
        for row in loaded.where("receivedAt IS NOT NULL").collect()
    )
    assert rows == [(0, timedelta(seconds=2))]
    assert loaded.where("receivedAt IS NULL").count() == 2  # broker 3's rows

    snapshots = tmp_path / "snapshots.jsonl"
    snapshots.write_text('{"schemaVersion": 1}\n')
    window.unpersist()
    # JSONL values carry no timestamp.
    assert load_window(spark, str(snapshots), AT, 24.0).receipts is None
