"""The refresh benchmark appends the day's last hour as an ingest does, and its extended rollup
is the recomputed one."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from benchmarks.rollup_refresh import AT, CUT, LAST_DATE, measure
from spark_history import rollup_store

pytestmark = pytest.mark.spark


def _rows_after_cut(dataset: Path, column: str) -> int:
    table = pq.read_table(dataset, columns=[column])
    return sum(1 for value in table.column(column).to_pylist() if value > CUT)


def test_the_last_hour_is_appended_and_extends_the_rollups_to_the_recomputed_ones(
    spark: SparkSession, tmp_path: Path
) -> None:
    result = measure(spark, tmp_path, 2, 2)
    fleet = tmp_path / "b2-v2"
    # Every row after 22:00 was in the hour's own files, and all of them were ingested.
    after = _rows_after_cut(fleet / "volumes", "snapshotAt")
    after += _rows_after_cut(fleet / "usage", "surveyedAt")
    assert after > 0
    assert result["lastHourRows"] == after
    assert sorted((fleet / "volumes" / LAST_DATE).glob("*-last-hour.parquet"))
    # The stored rollup reaches the hour ending at 23:00, the last hour's.
    stored = rollup_store.load_rollup(
        spark,
        str(fleet / "volumes"),
        spark.read.parquet(str(fleet / "volumes")).limit(0),
        kind=rollup_store.SNAPSHOTS,
    )
    newest = stored.select(F.max("hourEnd")).first()
    assert newest is not None
    assert newest[0].timestamp() == AT.timestamp()
    assert set(result["extendedSeconds"]) == {"volumes", "usage"}

    # A second run starts again from the day without its last hour, with the same answer.
    again = measure(spark, tmp_path, 2, 2)
    assert (again["lastHourRows"], again["rollupRows"]) == (after, result["rollupRows"])
