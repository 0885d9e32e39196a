"""``history report`` and ``history forecast`` read the raw history once:
``history_input.load_window`` keeps the rows of the widest analysis window, with the Kafka
record timestamps the replay needs to refuse what the consumer refused.

The read-once tests corrupt every raw file once the window is kept: an analysis that went back
to the files would fail on them; the command must still succeed and give what it gave before.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import history_input, synthetic
from spark_history.commands import main
from spark_history.history_input import RawWindow, load_history, load_window
from spark_history.hourly_rollup import hourly_rollup
from spark_history.ingest import JsonlSource, run_ingest
from spark_history.replay_rows import ReplayWindow, replay_rows, serving_rollup
from spark_history.rollup_store import SNAPSHOTS, refresh_rollup
from spark_history.synthetic_jsonl import write_jsonl
from spark_history.thresholds import TuningParams, replay_window, threshold_tradeoffs

from .conftest import RowsFactory
from .history_frames import AT, volume_frame

pytestmark = pytest.mark.spark

SYNTHETIC = synthetic.HistoryConfig(
    at=AT, history_hours=3 * 24.0, interval_seconds=900.0, jitter_seconds=0.0
)
RUNS = {
    "report": ("forecast.csv", "thresholds.csv", "balance.csv", "weekly_growth.csv"),
    "forecast": ("forecast.csv",),
}
"""Each command, and the tables compared before and after its raw files are corrupted."""


@pytest.fixture(scope="module")
def dataset(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three days of 6 volumes, ingested as ``history ingest`` does, its rollup stored."""
    work: Path = tmp_path_factory.mktemp("window")
    frame = synthetic.history_frame(synthetic.make_traces(3, 6, SYNTHETIC), 3, SYNTHETIC)
    write_jsonl(frame, work / "inbox" / "history.jsonl")
    directory = work / "dataset"
    inbox, checkpoint = JsonlSource((work / "inbox").as_uri()), (work / "ck").as_uri()
    run_ingest(spark, inbox, checkpoint, str(directory))
    refresh_rollup(spark, directory.as_uri(), kind=SNAPSHOTS)
    return directory


def _run(command: str, dataset: Path, output: Path) -> None:
    argv = [command, "--input", dataset.as_uri(), "--at", AT.isoformat(), "--master", "local[2]"]
    if command == "report":
        argv += ["--output-dir", str(output)]
    else:
        output.mkdir(parents=True)
        argv += ["--output", str(output / "forecast.csv")]
    assert main(argv) == 0


@pytest.mark.parametrize("command", sorted(RUNS))
def test_the_command_reads_the_raw_files_once(
    command: str, dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(command, dataset, tmp_path / "before")
    raw_files = sorted(dataset.glob("date=*/*.parquet"))
    assert raw_files

    def kept_then_corrupted(
        session: SparkSession, path: str, *args: object, **kwargs: object
    ) -> RawWindow:
        window = load_window(session, path, *args, **kwargs)  # type: ignore[arg-type]
        assert window.kept.count() > 0  # fills the cache
        for raw in raw_files:
            raw.write_bytes(b"not a parquet file any more")
        return window

    backups = {raw: raw.read_bytes() for raw in raw_files}
    monkeypatch.setattr(history_input, "load_window", kept_then_corrupted)
    try:
        _run(command, dataset, tmp_path / "after")
    finally:
        for raw, content in backups.items():
            raw.write_bytes(content)
    for name in RUNS[command]:
        before = pd.read_csv(tmp_path / "before" / name)
        after = pd.read_csv(tmp_path / "after" / name)
        assert len(before) > 0, name
        pd.testing.assert_frame_equal(before, after, check_exact=False, rtol=1e-9)


def _clock_ahead_dataset(spark: SparkSession, make_rows: RowsFactory, directory: Path) -> None:
    """Two brokers half full for two days; broker 1's snapshots from 20 h to 10 h before AT
    are dated an hour after their Kafka record timestamps (its clock ran ahead)."""
    hours = np.arange(-48.0, 0.01, 1.0 / 6.0)
    rows = make_rows(volume_frame([0, 1], "/dev/a", hours, np.full(hours.size, 5e5), 10**6))
    ahead = (F.col("brokerId") == 1) & F.col("snapshotAt").between(
        AT - timedelta(hours=20), AT - timedelta(hours=10)
    )
    received = F.when(ahead, F.col("snapshotAt") - F.expr("INTERVAL 1 HOUR")).otherwise(
        F.col("snapshotAt")
    )
    rows.withColumn("receivedAt", received).write.partitionBy("date").parquet(str(directory))


def test_the_windows_record_timestamps_let_the_replay_refuse_a_clock_ahead(
    spark: SparkSession, make_rows: RowsFactory, tmp_path: Path
) -> None:
    _clock_ahead_dataset(spark, make_rows, tmp_path / "dataset")
    uri = (tmp_path / "dataset").as_uri()
    params = TuningParams(lookback_hours=48.0)
    window = load_window(spark, uri, AT, 48.0)
    assert window.receipts is not None
    assert window.receipts.where(F.col("receivedAt") < F.col("snapshotAt")).count() > 50
    refused = _in_force(threshold_tradeoffs(window.rows, AT, params).table)
    taken = _in_force(threshold_tradeoffs(load_history(spark, uri), AT, params).table)
    window.unpersist()
    assert taken["missingDataPausedHours"] == 0.0
    # Unknown from its first refused arrival (received 21 h before AT) until a snapshot is
    # taken again (dated 10 h before AT, and 10 min): 11 h, on a grid of whole hours.
    assert 10.0 <= refused["missingDataPausedHours"] <= 12.0


def test_a_refused_snapshot_in_the_window_sends_the_replay_from_the_rollup_to_the_raw_rows(
    spark: SparkSession, make_rows: RowsFactory, tmp_path: Path
) -> None:
    """The rollup cannot leave out one refused snapshot of an hour: it knows each hour's
    largest lead over the record timestamp, and the replay reads the raw rows when one is
    beyond the skew the consumer allows."""
    _clock_ahead_dataset(spark, make_rows, tmp_path / "dataset")
    window = load_window(spark, (tmp_path / "dataset").as_uri(), AT, 48.0)
    rollup = hourly_rollup(window.rows)
    params = TuningParams(lookback_hours=48.0)
    assert serving_rollup(rollup, replay_window(AT, params)) is None
    refused = _in_force(threshold_tradeoffs(window.rows, AT, params).table)
    assert 10.0 <= refused["missingDataPausedHours"] <= 12.0
    # Allowed more than the hour broker 1's clock ran ahead, the consumer refuses nothing.
    lenient = ReplayWindow(AT, 48.0, 3600.0, 2 * 3600.0)
    serving = serving_rollup(rollup, lenient)
    assert serving is not None
    assert replay_rows(window.rows, lenient, serving).source == "hourly rollup"
    # Checked for another window, it is not read.
    assert replay_rows(window.rows, replay_window(AT, params), serving).source == "raw rows"
    window.unpersist()


def _in_force(table: pd.DataFrame) -> pd.Series:
    return table[table["limits"] == "in force"].iloc[0]


def test_a_dataset_written_before_record_timestamps_reads_them_as_null(
    spark: SparkSession, make_rows: RowsFactory, tmp_path: Path
) -> None:
    hours = np.arange(-4.0, 0.01, 1.0)
    frame = volume_frame([0], "/dev/a", hours, np.full(hours.size, 5e5), 10**6)
    make_rows(frame).write.partitionBy("date").parquet(str(tmp_path / "old"))
    window = load_window(spark, (tmp_path / "old").as_uri(), AT, 24.0)
    rows: DataFrame = window.rows
    assert rows.count() == hours.size
    assert rows.where(F.col("receivedAt").isNotNull()).count() == 0
    window.unpersist()
