"""The report's planner panels on a hand-made fleet: full first, incidents, data quality,
Prometheus textfile.

Broker 0's volume climbs 0.25 point an hour from 80% used (96 h before AT) and is full from
16 h before AT: under the limits in force (10/5) the cluster throttles from 56 h before AT and
pauses from 36 h. Broker 1 publishes nothing for 5 hours (80-75 h before AT: a missing-data
pause) and stopped 3 hours before AT (stale). Broker 2 left: last snapshot 31 h before AT,
tombstone 30.5 h before. Kafka stamped broker 0's messages 2 minutes before their snapshotAt
(its clock runs ahead) and broker 1's 5 seconds after.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_history.forecast.trend import ForecastParams
from spark_history.report import PanelParams, write_report
from spark_history.thresholds import TuningParams

from .conftest import RowsFactory
from .history_frames import AT, volume_frame

pytestmark = pytest.mark.spark

CAPACITY = 10**12


def _fleet() -> pd.DataFrame:
    hours = -96.0 + np.arange(96 * 6) / 6.0 + 1.0 / 12.0  # every 10 min, 5 min off the hour
    filling = np.minimum(80.0 + 0.25 * (hours + 96.0), 100.0) * CAPACITY / 100.0
    one = ((hours <= -80.0) | (hours > -75.0)) & (hours <= -3.0)
    two = hours <= -31.0
    return pd.concat(
        [
            volume_frame([0], "/dev/a", hours, filling, CAPACITY),
            volume_frame([1], "/dev/a", hours[one], 0.5 * CAPACITY + 1e8 * hours[one], CAPACITY),
            volume_frame([2], "/dev/a", hours[two], np.full(two.sum(), 0.5 * CAPACITY), CAPACITY),
        ],
        ignore_index=True,
    )


def test_report_panels(spark: SparkSession, make_rows: RowsFactory, tmp_path: Path) -> None:
    stones = spark.createDataFrame(
        pd.DataFrame({"brokerId": [2], "snapshotAt": [AT - timedelta(hours=30.5)]}).astype(
            {"brokerId": "int32"}
        )
    )
    # Kafka stamped broker 0's messages 2 minutes before their snapshotAt, broker 1's 5 s
    # after; broker 2's rows kept no record timestamp.
    fleet = _fleet()
    skew = fleet["brokerId"].map({0: 120.0, 1: -5.0, 2: np.nan})
    fleet["receivedAt"] = fleet["snapshotAt"] - pd.to_timedelta(skew, unit="s")
    receipts = spark.createDataFrame(
        fleet[["brokerId", "snapshotAt", "receivedAt", "date"]].astype({"brokerId": "int32"})
    )
    out = tmp_path / "report"
    write_report(
        make_rows(fleet),
        AT,
        out.as_uri(),
        forecast_params=ForecastParams(),
        tuning=TuningParams(soft_grid=(10.0,), hard_grid=(5.0,), lookback_hours=100.0),
        tombstones=stones,
        receipts=receipts,
        panels=PanelParams(growth_weeks=2, max_clock_skew_seconds=60.0),
    )
    forecast = pd.read_csv(out / "forecast.csv")
    assert (forecast.loc[0, "brokerId"], forecast.loc[0, "trend"]) == (0, "full")
    assert forecast.loc[0, "hoursToFull"] == 0.0
    assert forecast.set_index("brokerId").loc[2, "trend"] == "retired"

    incidents = pd.read_csv(out / "incidents.csv")
    # AT is 2026-11-22 12:00 UTC: 56 h before is 11-20 04:00, 80 h before 11-19 04:00.
    assert incidents["start"].tolist() == ["2026-11-20 04:00", "2026-11-19 04:00"]
    assert incidents["end"].tolist() == ["2026-11-22 12:00", "2026-11-19 09:00"]
    assert incidents["hours"].tolist() == [56.0, 5.0]
    assert incidents["worstState"].tolist() == ["PAUSE", "PAUSE"]
    assert incidents["cause"].tolist() == ["limits", "missing data"]
    assert incidents.loc[0, "drivingBroker"] == 0
    assert incidents.loc[0, "drivingVolume"] == "/dev/a"

    quality = pd.read_csv(out / "data_quality.csv").set_index("brokerId")
    assert quality["status"].to_dict() == {0: "ok", 1: "stale", 2: "retired"}
    assert quality.loc[1, "hoursWithoutSnapshots"] == 5.0
    assert quality.loc[1, "lastSnapshotHoursAgo"] == pytest.approx(3.0 + 1 / 12, abs=1e-6)
    assert quality.loc[[0, 1], "medianSkewSeconds"].tolist() == [120.0, -5.0]
    assert quality.loc[0, "clockSkewed"] is True
    assert quality.loc[1, "clockSkewed"] is False
    assert pd.isna(quality.loc[2, "clockSkewed"])  # not measured

    # Four days of history: a level for week 0 (hours with snapshots), no week to compare.
    growth = pd.read_csv(out / "weekly_growth.csv").set_index(["brokerId", "week"])
    assert growth["hoursOfData"].to_dict() == {
        (0, 0): 96, (0, 1): 0, (1, 0): 88, (1, 1): 0, (2, 0): 65, (2, 1): 0
    }  # fmt: skip
    assert growth["growthBytesPerWeek"].isna().all()

    prom = (out / "hours_to_full.prom").read_text()
    assert 'volume_quota_history_hours_to_full{broker="0",volume="/dev/a"} 0.0\n' in prom
    assert 'volume_quota_history_hours_to_full{broker="2"' not in prom
    assert (
        'volume_quota_history_forecast_info{broker="2",volume="/dev/a",trend="retired"} 1' in prom
    )

    summary = json.loads((out / "summary.json").read_text())
    assert summary["volumesFull"] == 1
    assert "1 stale, 1 retired" in summary["dataQuality"]
    assert "1 of 2 brokers beyond 60 s: broker 0 +120 s" in summary["dataQuality"]
    assert summary["clockSkewedBrokers"] == [0]
    html = (out / "report.html").read_text()
    assert 'id="incidents"' in html
    assert 'id="data-quality"' in html
    assert 'id="weekly-growth"' in html
