"""JSONL ingest: rows land once, however often the ingest runs; bad lines are counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_history import synthetic
from spark_history.ingest import JsonlSource, run_ingest

pytestmark = pytest.mark.spark

CONFIG = synthetic.HistoryConfig(history_hours=6.0, interval_seconds=600.0, missing_fraction=0.0)


def _write_history(path: Path, seed: int) -> int:
    traces = synthetic.make_traces(seed, 4, CONFIG)
    frame = synthetic.history_frame(traces, seed, CONFIG)
    synthetic.write_jsonl(frame, path)
    return len(frame)


def test_reingest_adds_nothing_and_new_files_are_picked_up(
    spark: SparkSession, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    first_rows = _write_history(inbox / "one.jsonl", seed=1)
    with (inbox / "one.jsonl").open("a") as stream:
        stream.write('{"not json\n\n{"schemaVersion": 2, "brokerId": 1}\n')
    # Hadoop URIs, as a user on a cluster passes them.
    checkpoint, dataset = (tmp_path / "checkpoint").as_uri(), (tmp_path / "dataset").as_uri()

    first = run_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset)
    assert first.rows == first_rows
    assert first.skipped["malformed_json"] == 1
    assert first.skipped["unsupported_version"] == 1
    assert spark.read.parquet(str(dataset)).count() == first_rows

    again = run_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset)
    assert again.rows == 0
    assert spark.read.parquet(str(dataset)).count() == first_rows

    second_rows = _write_history(inbox / "two.jsonl", seed=2)
    later = run_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset)
    assert later.rows == second_rows
    stored = spark.read.parquet(str(dataset))
    assert stored.count() == first_rows + second_rows
    distinct = stored.select("brokerId", "volumeName", "snapshotAt").distinct().count()
    # Both files hold brokers 0..; each (broker, volume, instant) row is stored exactly once.
    assert distinct == stored.count()
    assert {field.name for field in stored.schema.fields} >= {
        "brokerId",
        "volumeName",
        "path",
        "snapshotAt",
        "capacity",
        "consumed",
        "free",
        "softLimitType",
        "softLimitLevel",
        "hardLimitType",
        "hardLimitLevel",
        "softThresholdBytes",
        "hardThresholdBytes",
        "date",
    }


def test_a_single_file_can_be_ingested(spark: SparkSession, tmp_path: Path) -> None:
    rows = _write_history(tmp_path / "in" / "only.jsonl", seed=3)
    _write_history(tmp_path / "in" / "other.jsonl", seed=4)
    # Plain paths work too (Hadoop resolves them on the default filesystem).
    counts = run_ingest(
        spark,
        JsonlSource(str(tmp_path / "in" / "only.jsonl")),
        str(tmp_path / "ck"),
        str(tmp_path / "out"),
    )
    assert counts.rows == rows
