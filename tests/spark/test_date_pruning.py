"""The report's whole-fleet analyses read only the date partitions of their window: the newest
snapshot per volume (balance), the limits in force, the brokers' tombstones (the replay's and
the forecast's), the fleet and broker totals and the backtest panel. A dataset whose
old partitions cannot be read proves it: pruned, they are never opened; unpruned, Spark fails
on them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_history.balance import balance
from spark_history.broker_samples import tombstone_times
from spark_history.forecast.spark_trend import forecast_volumes
from spark_history.forecast.vocabulary import ForecastParams
from spark_history.report_capacity import backtest_panel, broker_hours
from spark_history.snapshot_rows import tombstone_rows
from spark_history.thresholds import limits_in_force

from .conftest import RowsFactory
from .history_frames import AT, volume_frame

pytestmark = pytest.mark.spark

CAPACITY = 1_000_000
LOOKBACK_HOURS = 30 * 24.0


def dataset_with_an_unreadable_old_day(
    spark: SparkSession, make_rows: RowsFactory, directory: Path
) -> DataFrame:
    """Three days of two volumes before AT (and a tombstone), plus a day 60 days before AT
    whose only file is not Parquet."""
    hours = np.arange(-72.0, 0.0, 0.5)
    frames = [
        volume_frame([0, 1], volume, hours, np.full(hours.size, 0.5 * CAPACITY), CAPACITY)
        for volume in ("/dev/a", "/dev/b")
    ]
    rows = make_rows(pd.concat(frames))
    tombstone = rows.limit(1).selectExpr(
        "brokerId",
        "CAST(NULL AS STRING) AS volumeName",
        *[f"`{name}`" for name in rows.columns if name not in ("brokerId", "volumeName")],
    )
    rows.unionByName(tombstone).write.partitionBy("date").parquet(str(directory))
    old_day = (AT - timedelta(days=60)).date().isoformat()
    broken = directory / f"date={old_day}"
    broken.mkdir()
    (broken / "part-00000-broken.parquet").write_bytes(b"not a parquet file at all")
    return spark.read.schema(rows.schema).parquet(str(directory))


def test_the_fleet_wide_analyses_never_open_a_day_outside_their_window(
    spark: SparkSession, make_rows: RowsFactory, tmp_path: Path
) -> None:
    stored = dataset_with_an_unreadable_old_day(spark, make_rows, tmp_path / "history")
    volumes = stored.where("volumeName IS NOT NULL")
    tombstones = tombstone_rows(stored)
    assert len(balance(volumes, AT).toPandas()) == 4
    in_force = limits_in_force(volumes, AT, LOOKBACK_HOURS)
    assert in_force.volumes == 4
    assert set(tombstone_times(tombstones, AT, LOOKBACK_HOURS)) == {0}
    assert len(forecast_volumes(volumes, AT, ForecastParams(), tombstones).toPandas()) == 4
    hours = broker_hours(stored, AT, ForecastParams())
    assert set(hours["brokerId"]) == {0, 1}
    assert (hours["capacity"] == 2 * CAPACITY).all()  # two volumes each, the tombstone none
    assert backtest_panel(stored, AT, LOOKBACK_HOURS, 3600.0).volumes == 4
    # Without the window every day is read, the broken one too: the check above can fail.
    with pytest.raises(Exception, match=r"(?i)parquet"):
        limits_in_force(volumes, AT, None)
    with pytest.raises(Exception, match=r"(?i)parquet"):
        tombstone_times(tombstones, AT)
    with pytest.raises(Exception, match=r"(?i)parquet"):
        balance(volumes, AT, lookback_hours=None).toPandas()
    with pytest.raises(Exception, match=r"(?i)parquet"):
        broker_hours(stored, AT, ForecastParams(lookback_hours=90 * 24.0))
