"""The fleet benchmark's datasets are what ``history ingest`` writes: Spark reads them through
their sink log, and the hourly rollups of both are kept and read as after an ingest."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from benchmarks.fleet_datasets import FleetShape, ensure_fleet
from spark_history import rollup_store
from spark_history.forecast.spark_mechanism import load_usage
from spark_history.history_input import load_history

pytestmark = pytest.mark.spark


def test_the_fleet_datasets_are_read_through_their_log_and_keep_their_rollups(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Two brokers of two volumes over three hours across midnight: two date partitions each.
    shape = FleetShape(2, 2, 0.125, datetime(2026, 11, 22, 1, 0, tzinfo=UTC))
    written = ensure_fleet(shape, tmp_path)
    volumes, usage = str(tmp_path / "volumes"), str(tmp_path / "usage")
    assert load_history(spark, volumes).count() == written.volume_rows
    assert load_usage(spark, usage).count() == written.usage_rows
    # A file the log does not list is not read, as from a dataset the file sink wrote.
    stray = tmp_path / "usage" / "date=2026-11-22" / "stray.parquet"
    stray.write_bytes((next((tmp_path / "usage").glob("date=*/part-*.parquet"))).read_bytes())
    assert load_usage(spark, usage).count() == written.usage_rows

    for dataset, kind in ((volumes, rollup_store.SNAPSHOTS), (usage, rollup_store.USAGE)):
        refreshed = rollup_store.refresh_rollup(spark, dataset, kind=kind)
        assert refreshed.dates == ("2026-11-21", "2026-11-22")
        state = rollup_store.rollup_state(spark, dataset, kind)
        assert (sorted(state.valid), state.stale) == (["2026-11-21", "2026-11-22"], ())
        said = io.StringIO()
        raw = (
            load_usage(spark, dataset)
            if kind is rollup_store.USAGE
            else load_history(spark, dataset)
        )
        stored = rollup_store.load_rollup(spark, dataset, raw, stream=said, kind=kind)
        assert said.getvalue() == ""
        assert stored.count() == refreshed.rows
    # Written again (a later run of the benchmark): the logs are kept, nothing is recomputed.
    ensure_fleet(shape, tmp_path)
    assert rollup_store.refresh_rollup(spark, usage, kind=rollup_store.USAGE).dates == ()
