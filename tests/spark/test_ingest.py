"""JSONL ingest: rows land once, however often the ingest runs; bad lines are counted."""

from __future__ import annotations

import dataclasses
import io
from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_history import synthetic
from spark_history.ingest import JsonlSource, run_ingest
from spark_history.synthetic_jsonl import write_jsonl

pytestmark = pytest.mark.spark

CONFIG = synthetic.HistoryConfig(history_hours=6.0, interval_seconds=600.0, missing_fraction=0.0)


def _write_history(path: Path, seed: int) -> int:
    traces = synthetic.make_traces(seed, 4, CONFIG)
    frame = synthetic.history_frame(traces, seed, CONFIG)
    write_jsonl(frame, path)
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

    progress = io.StringIO()
    first = run_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset, progress)
    # One file, one micro-batch: its progress line counts every line read, blank ones too.
    lines_in_file = len((inbox / "one.jsonl").read_text().splitlines())
    assert f"[history] ingest batch 0: {lines_in_file} messages in " in progress.getvalue()
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


def test_each_hourly_run_adds_one_file_per_date_partition(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Six hourly runs, each ingesting the hour of snapshots that arrived since the last one.
    # Every task of a run would otherwise write its own file into the day's partition.
    hourly = synthetic.HistoryConfig(history_hours=1.0, interval_seconds=300.0)
    checkpoint, dataset = (tmp_path / "ck").as_uri(), (tmp_path / "dataset").as_uri()
    total = 0
    for hour in range(6):
        config = dataclasses.replace(hourly, at=hourly.at - timedelta(hours=6 - hour))
        frame = synthetic.history_frame(synthetic.make_traces(hour, 8, config), hour, config)
        write_jsonl(frame, tmp_path / "inbox" / f"hour-{hour}.jsonl")
        total += run_ingest(
            spark, JsonlSource((tmp_path / "inbox").as_uri()), checkpoint, dataset
        ).rows
    days = sorted((tmp_path / "dataset").glob("date=*"))
    assert [day.name for day in days] == ["date=2026-11-22"]  # 05:00-12:00 UTC
    assert len(list(days[0].glob("*.parquet"))) == 6
    assert spark.read.parquet(dataset).count() == total
