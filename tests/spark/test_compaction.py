"""Small-file compaction: 24 hourly ingests into one day, then fewer files and the same rows.

Files are counted on disk (every ``*.parquet`` in the day's directory, listed or not) and in
the ``_spark_metadata`` log (what readers read); rows are compared as sorted lists of whole
rows, so a lost or doubled row fails.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_history import compaction, sink_log, storage, synthetic
from spark_history.commands import main
from spark_history.errors import HistoryUsageError
from spark_history.ingest import JsonlSource, run_ingest
from spark_history.synthetic_jsonl import write_jsonl

pytestmark = pytest.mark.spark

DAY = "date=2026-11-22"
# Each run ingests the 50 minutes of snapshots before HH:55 (jitter 5 s): all on 2026-11-22.
HOURLY = synthetic.HistoryConfig(
    at=datetime(2026, 11, 22, 0, 55, tzinfo=UTC), history_hours=1.0, interval_seconds=600.0
)


def _hourly_ingest(spark: SparkSession, work: Path, hour: int) -> int:
    config = dataclasses.replace(HOURLY, at=HOURLY.at + timedelta(hours=hour))
    frame = synthetic.history_frame(synthetic.make_traces(hour, 4, config), hour, config)
    write_jsonl(frame, work / "inbox" / f"hour-{hour:02d}.jsonl")
    source = JsonlSource((work / "inbox").as_uri())
    return run_ingest(spark, source, (work / "ck").as_uri(), (work / "dataset").as_uri()).rows


def _rows(spark: SparkSession, work: Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in spark.read.parquet(str(work / "dataset")).collect())


def _files_on_disk(work: Path) -> list[Path]:
    return sorted((work / "dataset").glob("*/*.parquet"))


def _listed_files(work: Path) -> list[str]:
    log = work / "dataset" / sink_log.LOG_DIR
    names = sink_log.live_logs(path.name for path in log.iterdir())
    return [str(e["path"]) for name in names for e in sink_log.parse_log((log / name).read_text())]


def test_24_hourly_ingests_compact_into_one_file_with_the_same_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    written = sum(_hourly_ingest(spark, tmp_path, hour) for hour in range(24))
    assert [path.name for path in (tmp_path / "dataset").glob("date=*")] == [DAY]
    assert len(_files_on_disk(tmp_path)) == 24
    assert len(_listed_files(tmp_path)) == 24
    before = _rows(spark, tmp_path)
    assert len(before) == written

    dataset = (tmp_path / "dataset").as_uri()
    assert main(["compact", "--dataset", dataset, "--master", "local[2]"]) == 0

    assert len(_files_on_disk(tmp_path)) == 1
    assert len(_listed_files(tmp_path)) == 1
    assert _rows(spark, tmp_path) == before
    assert not (tmp_path / "dataset" / compaction.COMPACTION_DIR).exists()

    # The ingest goes on after a compaction, and compacts by itself when asked to.
    config = dataclasses.replace(HOURLY, at=HOURLY.at + timedelta(hours=23, minutes=4))
    frame = synthetic.history_frame(synthetic.make_traces(99, 1, config), 99, config)
    write_jsonl(frame, tmp_path / "inbox" / "late.jsonl")
    argv = ["ingest", "--source", "jsonl", "--input", (tmp_path / "inbox").as_uri()]
    argv += ["--checkpoint", (tmp_path / "ck").as_uri(), "--output", dataset]
    assert main([*argv, "--compact-min-files", "2", "--master", "local[2]"]) == 0
    after = _rows(spark, tmp_path)
    assert len(after) == len(before) + len(frame)
    assert len(_files_on_disk(tmp_path)) == 1


def test_an_interrupted_compaction_loses_nothing_and_is_finished_by_the_next(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for hour in range(3):  # batches 0, 1 and 2: three log files list the day's files
        _hourly_ingest(spark, tmp_path, hour)
    before = _rows(spark, tmp_path)
    dataset = (tmp_path / "dataset").as_uri()

    replace = storage.replace_atomically
    calls: list[str] = []

    def crash_on_second_log_write(session: SparkSession, uri: str, text: str, staging: str) -> None:
        calls.append(uri)
        if len(calls) == 2:
            raise OSError("simulated crash")
        replace(session, uri, text, staging)

    monkeypatch.setattr(storage, "replace_atomically", crash_on_second_log_write)
    with pytest.raises(OSError, match="simulated crash"):
        compaction.compact_dataset(spark, dataset, min_files=2)
    monkeypatch.undo()

    # Half-swapped: the newest log file lists the new file, older ones still the old files.
    # Readers see every row, some twice; none is missing.
    halfway = _rows(spark, tmp_path)
    assert sorted(set(halfway)) == sorted(set(before))
    assert len(halfway) > len(before)
    assert len(list((tmp_path / "dataset" / compaction.COMPACTION_DIR).glob("*.json"))) == 1

    result = compaction.compact_dataset(spark, dataset, min_files=2)
    assert result.resumed == 1
    assert _rows(spark, tmp_path) == before
    assert len(_files_on_disk(tmp_path)) == len(_listed_files(tmp_path)) == 1


def test_a_directory_without_the_sink_log_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    spark.createDataFrame([(1, "2026-11-22")], "brokerId int, date string").write.partitionBy(
        "date"
    ).parquet(str(tmp_path / "plain"))
    with pytest.raises(HistoryUsageError, match="no _spark_metadata log"):
        compaction.compact_dataset(spark, (tmp_path / "plain").as_uri())


# The file sink log, read and rewritten without Spark.

_SPARK_LOG = (
    "v1\n"
    '{"path":"file:///srv/ds/date=2026-11-22/part-00001-9b72.c000.snappy.parquet","size":4717,'
    '"isDir":false,"modificationTime":1795432517831,"blockReplication":1,'
    '"blockSize":33554432,"action":"add"}'
)


def test_the_log_files_a_reader_reads() -> None:
    names = [".9.compact.crc", "11", "10", "9.compact", "8", "3", "0"]
    assert sink_log.live_logs(names) == ["9.compact", "10", "11"]
    assert sink_log.live_logs(["10", "2", "9"]) == ["2", "9", "10"]  # by number, not text
    assert sink_log.render_log(sink_log.parse_log(_SPARK_LOG)) == _SPARK_LOG
    with pytest.raises(ValueError, match="version"):
        sink_log.parse_log('v2\n{"path": "x"}')


def _entry(path: str) -> sink_log.Entry:
    return sink_log.file_entry(path, 10, 0, 1, 1)


def test_swap_adds_to_the_newest_log_first_and_is_idempotent() -> None:
    old_a, old_b, kept, other = (f"file:///ds/date=1/{name}" for name in "abcd")
    new = _entry("file:///ds/date=1/new")
    logs = {
        "9.compact": [_entry(old_a), _entry(kept)],
        "10": [_entry(old_b)],
        "11": [_entry(other)],
    }
    changed = sink_log.swap(logs, {old_a, old_b}, [new])
    assert [name for name, _ in changed] == ["11", "10", "9.compact"]
    rewritten = {**logs, **dict(changed)}
    assert [e["path"] for e in rewritten["11"]] == [other, new["path"]]
    assert rewritten["10"] == []
    assert [e["path"] for e in rewritten["9.compact"]] == [kept]
    assert sink_log.swap(rewritten, {old_a, old_b}, [new]) == []


def test_only_crowded_partitions_inside_the_dataset_are_compacted() -> None:
    entries = [
        _entry("file:///data/ds/date=1/a"),
        _entry("file:///data/ds/date=1/b"),
        _entry("file:///elsewhere/ds/date=1/c"),  # listed by a copy's log: not ours
        _entry("file:///data/ds/date=2/d"),
    ]
    assert sink_log.crowded_partitions(entries, "file:/data/ds", 2) == {
        "date=1": ["file:///data/ds/date=1/a", "file:///data/ds/date=1/b"]
    }
    assert sink_log.crowded_partitions(entries, "file:/data/ds", 3) == {}
