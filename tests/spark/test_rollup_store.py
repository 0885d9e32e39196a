"""The stored hourly rollup beside a dataset: refreshed by the ingest, kept by the compaction,
never read stale, repaired after a crash, and read with its date partitions pruned."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import compaction, rollup_store, sink_log, storage, synthetic
from spark_history.commands import main
from spark_history.history_input import load_history
from spark_history.hourly_rollup import ROLLUP_COLUMNS, hourly_rollup, window_hours
from spark_history.ingest import JsonlSource, run_ingest
from spark_history.rollup_manifests import Manifest
from spark_history.rollup_store import SNAPSHOTS
from spark_history.synthetic_jsonl import write_jsonl

pytestmark = pytest.mark.spark

RUNS = synthetic.HistoryConfig(
    at=datetime(2026, 11, 22, 0, 30, tzinfo=UTC),
    history_hours=2.0,
    interval_seconds=600.0,
    jitter_seconds=0.0,
    missing_fraction=0.0,
)
"""Each run adds the two hours of snapshots before its ``at``; the first crosses midnight."""


def _add_run(work: Path, run: int) -> None:
    config = dataclasses.replace(RUNS, at=RUNS.at + timedelta(hours=2 * run))
    frame = synthetic.history_frame(synthetic.make_traces(run, 4, config), run, config)
    write_jsonl(frame, work / "inbox" / f"run-{run:02d}.jsonl")


def _ingest_command(work: Path, run: int) -> None:
    """``history ingest`` as a user runs it: ingest, then refresh the rollup."""
    _add_run(work, run)
    argv = ["ingest", "--source", "jsonl", "--input", (work / "inbox").as_uri()]
    argv += ["--checkpoint", (work / "ck").as_uri(), "--output", _dataset(work)]
    assert main([*argv, "--master", "local[2]"]) == 0


def _ingest_only(spark: SparkSession, work: Path, run: int) -> None:
    _add_run(work, run)
    source = JsonlSource((work / "inbox").as_uri())
    run_ingest(spark, source, (work / "ck").as_uri(), _dataset(work))


def _refresh(spark: SparkSession, root: Path) -> rollup_store.RefreshResult:
    return rollup_store.refresh_rollup(spark, _dataset(root), kind=SNAPSHOTS)


def _dataset(work: Path) -> str:
    return (work / "dataset").as_uri()


def _table(frame: DataFrame) -> pd.DataFrame:
    table = frame.select(*ROLLUP_COLUMNS).toPandas()
    return table.sort_values(["brokerId", "volumeName", "hourEnd", "date"]).reset_index(drop=True)


def _assert_rollup_of_everything(spark: SparkSession, work: Path) -> None:
    """What the analyses get equals a fresh rollup of every raw row of the dataset."""
    rows = load_history(spark, _dataset(work))
    loaded = _table(rollup_store.load_rollup(spark, _dataset(work), rows, kind=SNAPSHOTS))
    assert len(loaded) > 0
    pd.testing.assert_frame_equal(loaded, _table(hourly_rollup(rows)), check_dtype=False)


def _rollup_files_on_disk(work: Path) -> list[Path]:
    return sorted((work / "dataset" / rollup_store.ROLLUP_DIR).glob("date=*/*.parquet"))


def _unlisted_rollup_files(spark: SparkSession, work: Path) -> list[str]:
    """The date directories of rollup files on disk that no manifest lists."""
    root = storage.qualified(spark, _dataset(work))
    listed = {
        Path(uri.removeprefix("file:")).name
        for manifest in rollup_store.read_manifests(spark, root)
        for uri in manifest.rollup_files
    }
    return [path.parent.name for path in _rollup_files_on_disk(work) if path.name not in listed]


def test_two_ingests_leave_the_rollup_of_the_whole_dataset(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _ingest_command(tmp_path, 0)
    assert "hourly rollup: 2 date(s) recomputed" in capsys.readouterr().out
    raw_rows = load_history(spark, _dataset(tmp_path)).count()
    _ingest_command(tmp_path, 1)  # 00:40 to 02:30: only the second day changes
    assert "hourly rollup: 1 extended with new files" in capsys.readouterr().out

    state = rollup_store.rollup_state(spark, _dataset(tmp_path), SNAPSHOTS)
    assert (sorted(state.valid), state.stale) == (["2026-11-21", "2026-11-22"], ())
    _assert_rollup_of_everything(spark, tmp_path)
    # Spark's reader of the raw dataset reads the log's files, not the rollup beside them.
    assert spark.read.parquet(_dataset(tmp_path)).count() == raw_rows + 4 * 12
    assert load_history(spark, _dataset(tmp_path)).count() == raw_rows + 4 * 12
    assert len(_rollup_files_on_disk(tmp_path)) == 2


def test_the_compaction_keeps_the_rollup_valid_and_equal(
    spark: SparkSession, tmp_path: Path
) -> None:
    for run in range(3):
        _ingest_command(tmp_path, run)
    result = compaction.compact_dataset(spark, _dataset(tmp_path), min_files=2)
    assert result.partitions == 1  # the second day: three files into one

    state = rollup_store.rollup_state(spark, _dataset(tmp_path), SNAPSHOTS)
    assert (sorted(state.valid), state.stale) == (["2026-11-21", "2026-11-22"], ())
    _assert_rollup_of_everything(spark, tmp_path)


def test_a_rollup_older_than_its_raw_partition_is_detected_and_not_read(
    spark: SparkSession, tmp_path: Path
) -> None:
    _ingest_command(tmp_path, 0)
    _ingest_only(spark, tmp_path, 1)  # the second day grew; its rollup was not refreshed

    state = rollup_store.rollup_state(spark, _dataset(tmp_path), SNAPSHOTS)
    assert (sorted(state.valid), state.stale) == (["2026-11-21"], ("2026-11-22",))
    _assert_rollup_of_everything(spark, tmp_path)

    assert _refresh(spark, tmp_path).dates == ("2026-11-22",)
    assert rollup_store.rollup_state(spark, _dataset(tmp_path), SNAPSHOTS).stale == ()
    _assert_rollup_of_everything(spark, tmp_path)


def test_a_refresh_that_crashed_is_never_read_and_the_next_one_repairs_it(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingest_command(tmp_path, 0)
    _ingest_only(spark, tmp_path, 1)

    def crash(session: SparkSession, hourly: str, manifest: Manifest) -> None:
        raise OSError("simulated crash before the manifest")

    monkeypatch.setattr(rollup_store, "_write_manifest", crash)
    with pytest.raises(OSError, match="simulated crash"):
        _refresh(spark, tmp_path)
    monkeypatch.undo()

    # The second day's new file is on disk beside its old one, listed by no manifest (the
    # old manifest, stale, still lists the old file).
    assert _unlisted_rollup_files(spark, tmp_path) == ["date=2026-11-22"]
    assert len(_rollup_files_on_disk(tmp_path)) == 3
    assert rollup_store.rollup_state(spark, _dataset(tmp_path), SNAPSHOTS).stale == ("2026-11-22",)
    _assert_rollup_of_everything(spark, tmp_path)

    assert _refresh(spark, tmp_path).dates == ("2026-11-22",)
    assert rollup_store.rollup_state(spark, _dataset(tmp_path), SNAPSHOTS).stale == ()
    assert len(_rollup_files_on_disk(tmp_path)) == 2
    assert _unlisted_rollup_files(spark, tmp_path) == []
    assert not (tmp_path / "dataset" / rollup_store.ROLLUP_DIR / rollup_store.STAGING_DIR).exists()
    _assert_rollup_of_everything(spark, tmp_path)


def test_an_appended_date_is_extended_without_reading_its_older_raw_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    _ingest_command(tmp_path, 0)
    older = sorted((tmp_path / "dataset" / "date=2026-11-22").glob("*.parquet"))
    _ingest_only(spark, tmp_path, 1)  # the second day gains a file; not refreshed
    rows = load_history(spark, _dataset(tmp_path))
    expected = _table(hourly_rollup(rows))  # computed from every raw row, before the damage
    # A refresh that read the second day's older raw file would fail on it now.
    for path in older:
        path.write_bytes(b"not a parquet file at all")
        path.with_name(f".{path.name}.crc").unlink(missing_ok=True)

    result = _refresh(spark, tmp_path)
    assert (result.dates, result.extended) == (("2026-11-22",), ("2026-11-22",))
    state = rollup_store.rollup_state(spark, _dataset(tmp_path), SNAPSHOTS)
    assert state.stale == ()
    stored = rollup_store.load_rollup(spark, _dataset(tmp_path), rows.limit(0), kind=SNAPSHOTS)
    pd.testing.assert_frame_equal(_table(stored), expected, check_dtype=False)
    assert len(_rollup_files_on_disk(tmp_path)) == 2
    assert _unlisted_rollup_files(spark, tmp_path) == []


def test_the_stored_rollup_is_read_with_its_date_partitions_pruned(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _ingest_command(tmp_path, 0)
    _ingest_command(tmp_path, 1)
    rows = load_history(spark, _dataset(tmp_path))
    capsys.readouterr()
    stored = rollup_store.load_rollup(spark, _dataset(tmp_path), rows, kind=SNAPSHOTS)
    at = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
    window = window_hours(stored, at, 1.0)
    window.explain(mode="formatted")
    plan = capsys.readouterr().out
    assert len(re.findall(r"^\(\d+\) Scan parquet", plan, re.MULTILINE)) == 1  # no raw file
    assert "_rollup/hourly/date=" in plan
    assert "PartitionFilters: [isnotnull(date#" in plan
    # Pruned, not only filtered: the other day's rollup file is never opened.
    first_day = _rollup_files_on_disk(tmp_path)[0]
    assert first_day.parent.name == "date=2026-11-21"
    first_day.write_bytes(b"not a parquet file at all")
    first_day.with_name(f".{first_day.name}.crc").unlink(missing_ok=True)
    assert window.count() == 4  # four volumes, the hour ending at 02:00
    with pytest.raises(Exception, match=r"(?i)parquet"):
        window_hours(stored, at, 3.0).count()  # the window reaches the first day


def test_a_date_of_tombstones_only_gets_an_empty_rollup(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A broker's tombstone alone on a new day: no volume row, so no rollup row, and a
    manifest that says so (the date is not stale)."""
    _ingest_command(tmp_path, 0)
    volume = load_history(spark, _dataset(tmp_path)).limit(1)
    tombstone = volume.selectExpr(
        "brokerId",
        "CAST(NULL AS STRING) AS volumeName",
        *[f"`{name}`" for name in volume.columns if name not in ("brokerId", "volumeName")],
    ).withColumn("date", F.lit("2026-11-25").cast("date"))
    staging = tmp_path / "tombstone"
    tombstone.write.partitionBy("date").parquet(str(staging))
    written = next(staging.glob("date=*/*.parquet"))
    target = tmp_path / "dataset" / "date=2026-11-25" / written.name
    target.parent.mkdir()
    written.rename(target)
    log = tmp_path / "dataset" / sink_log.LOG_DIR
    batch = max(int(name.name) for name in log.iterdir() if name.name.isdigit()) + 1
    # As Spark writes it: a URI whose "=" is not percent-encoded (Path.as_uri() encodes it).
    entry = sink_log.file_entry(f"file://{target}", target.stat().st_size, 0, 1, 1 << 25)
    (log / str(batch)).write_text(sink_log.render_log([entry]))

    assert _refresh(spark, tmp_path).dates == ("2026-11-25",)
    state = rollup_store.rollup_state(spark, _dataset(tmp_path), SNAPSHOTS)
    assert (state.stale, state.valid["2026-11-25"].rows) == ((), 0)
    _assert_rollup_of_everything(spark, tmp_path)
