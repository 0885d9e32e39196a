"""The usage history: ingested once however often the ingest runs, and forecast per volume from
its topics' retention (the mechanism forecast), through the functions and the commands."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import synthetic
from spark_history.commands import main
from spark_history.compaction import compact_dataset
from spark_history.forecast.backtest.spark_buckets import config_changes
from spark_history.forecast.spark_mechanism import (
    load_usage,
    mechanism_calibration,
    mechanism_volumes,
)
from spark_history.forecast.vocabulary import ForecastParams, Trend
from spark_history.history_input import load_history
from spark_history.hourly_rollup import hourly_rollup
from spark_history.ingest import JsonlSource
from spark_history.report_capacity import backtest_panel
from spark_history.synthetic_jsonl import write_jsonl
from spark_history.usage_documents import CONFIG, OTHER, TOPIC, USAGE_ROW_COLUMNS
from spark_history.usage_ingest import run_usage_ingest
from tests.spark_history_pure.usage_factory import GB, growing_cluster

pytestmark = pytest.mark.spark

START = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)
AT = START + timedelta(hours=12)
SPARK = ["--master", "local[2]"]
EXPECTED_HOURS = (900 * GB - 300 * GB - 12 * 3600 * 1e6) / 1e6 / 3600


def _write(path: Path, documents: list[dict[str, object]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(document) + "\n" for document in documents) + extra)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("usage-history")
    usage, snapshots = growing_cluster(START, hours=12)
    _write(folder / "usage" / "one.jsonl", usage)
    _write(folder / "snapshots.jsonl", snapshots)
    return folder / "usage", folder / "snapshots.jsonl"


def test_usage_ingest_is_incremental_and_counts_refused_documents(
    spark: SparkSession, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    usage_dir, _ = inputs
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    bad = '{"schemaVersion": 1\n{"schemaVersion": 2, "brokerId": 0}\n'
    (inbox / "one.jsonl").write_text((usage_dir / "one.jsonl").read_text() + bad)
    checkpoint, dataset = (tmp_path / "ck").as_uri(), (tmp_path / "usage").as_uri()

    progress = io.StringIO()
    first = run_usage_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset, progress)
    # 73 surveys: 2 topics + other each, and 2 config rows in 8 of them.
    assert first.messages == 75
    assert first.valid == 73
    assert first.skipped["malformed_json"] == 1
    assert first.skipped["unsupported_version"] == 1
    assert first.rows == 73 * 3 + 8 * 2
    stored = spark.read.parquet(str(dataset))
    assert set(stored.columns) == set(USAGE_ROW_COLUMNS)
    kinds = {row["kind"]: row["count"] for row in stored.groupBy("kind").count().collect()}
    assert kinds == {TOPIC: 146, OTHER: 73, CONFIG: 16}

    again = run_usage_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset)
    assert again.rows == 0
    assert spark.read.parquet(str(dataset)).count() == first.rows

    # A later file adds its rows; 'history compact' merges the usage dataset's files as the
    # snapshots' (its rows sorted by date, broker and volume) and loses none.
    (inbox / "two.jsonl").write_text((usage_dir / "one.jsonl").read_text())
    later = run_usage_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset)
    assert later.rows == 73 * 3 + 8 * 2
    result = compact_dataset(spark, dataset, min_files=2)
    assert result.files_after < result.files_before
    assert spark.read.parquet(str(dataset)).count() == 2 * first.rows


def test_the_mechanism_forecast_names_the_unbounded_topic(
    spark: SparkSession, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    usage_dir, snapshots = inputs
    dataset = (tmp_path / "usage").as_uri()
    run_usage_ingest(spark, JsonlSource(usage_dir.as_uri()), (tmp_path / "ck").as_uri(), dataset)
    rows = mechanism_volumes(
        load_usage(spark, dataset), load_history(spark, str(snapshots)), AT
    ).collect()
    assert len(rows) == 1
    (row,) = rows
    assert (row["brokerId"], row["volumeName"]) == (0, "/dev/a")
    assert abs(row["hoursToHardLimit"] - EXPECTED_HOURS) < 0.5
    assert row["drivers"].startswith("logs +")
    assert "on logs (now -1) keeps the volume under the limit" in row["prevention"]
    # Before any usage survey there is nothing to forecast from.
    assert (
        mechanism_volumes(
            load_usage(spark, dataset),
            load_history(spark, str(snapshots)),
            START - timedelta(hours=1),
        ).count()
        == 0
    )


def test_ingest_and_forecast_commands_write_the_mechanism_csv(
    spark: SparkSession, tmp_path: Path
) -> None:
    # The snapshots of a synthetic cluster (the envelope forecast's own test input), and usage
    # surveys of its first volume in the 12 hours before --at.
    config = synthetic.HistoryConfig(history_hours=4 * 24, interval_seconds=900)
    frame = synthetic.history_frame(synthetic.make_traces(8, 2, config), 8, config)
    snapshots = tmp_path / "snapshots.jsonl"
    write_jsonl(frame, snapshots)
    broker, volume = int(frame["brokerId"].iloc[0]), str(frame["volumeName"].iloc[0])
    at = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    usage, _ = growing_cluster(at - timedelta(hours=12), 12, broker=broker, volume=volume)
    _write(tmp_path / "usage" / "surveys.jsonl", usage)

    ingest = ["ingest", "--source", "jsonl", "--input", str(snapshots)]
    ingest += ["--checkpoint", str(tmp_path / "ck" / "snapshots")]
    ingest += ["--output", str(tmp_path / "history" / "snapshots")]
    ingest += ["--usage-input", str(tmp_path / "usage")]
    ingest += ["--usage-output", str(tmp_path / "history" / "usage")]
    ingest += ["--usage-checkpoint", str(tmp_path / "ck" / "usage"), *SPARK]
    assert main(ingest) == 0
    output, mechanism = tmp_path / "forecast.csv", tmp_path / "mechanism.csv"
    forecast = ["forecast", "--input", str(tmp_path / "history" / "snapshots")]
    forecast += ["--at", at.isoformat(), "--output", str(output)]
    forecast += ["--usage-dataset", str(tmp_path / "history" / "usage")]
    forecast += ["--mechanism-output", str(mechanism), *SPARK]
    assert main(forecast) == 0
    (row,) = list(csv.DictReader(mechanism.open()))
    assert (int(row["brokerId"]), row["volumeName"]) == (broker, volume)
    # logs, unbounded at 1 MB/s, is the only topic that grows: it uses the room left.
    room = float(row["limitBytes"]) - float(row["consumed"])
    assert abs(float(row["hoursToHardLimit"]) - room / 1e6 / 3600) < 0.5
    assert row["drivers"].startswith("logs +")
    # forecast.csv is one forecast: the mechanism's for the volume with usage, the trend's for
    # the other.
    rows = {(int(r["brokerId"]), r["volumeName"]): r for r in csv.DictReader(output.open())}
    assert len(rows) == 2
    ours = rows.pop((broker, volume))
    assert ours["method"] == "mechanism"
    assert abs(float(ours["hoursToFull"]) - float(row["hoursToCapacity"])) < 1e-6
    assert ours["drivers"] == row["drivers"]
    (other,) = rows.values()
    assert other["method"] == "trend"
    assert other["drivers"] == ""


def test_usage_options_that_do_not_fit_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, inputs: tuple[Path, Path]
) -> None:
    _, snapshots = inputs
    base = ["ingest", "--source", "jsonl", "--input", str(snapshots)]
    base += ["--checkpoint", str(tmp_path / "ck"), "--output", str(tmp_path / "out"), *SPARK]
    assert main([*base, "--usage-output", str(tmp_path / "usage")]) == 2
    assert "--usage-output needs --usage-checkpoint" in capsys.readouterr().err
    usage = ["--usage-output", str(tmp_path / "usage"), "--usage-checkpoint", str(tmp_path / "u")]
    assert main([*base, *usage]) == 2
    assert "needs --usage-input" in capsys.readouterr().err
    forecast = ["forecast", "--input", str(snapshots), "--output", str(tmp_path / "f.csv")]
    assert main([*forecast, "--mechanism-output", str(tmp_path / "m.csv"), *SPARK]) == 2
    assert "--mechanism-output needs --usage-dataset" in capsys.readouterr().err


def test_the_report_names_the_topic_that_grew_the_fleet_and_the_volume_it_fills(
    spark: SparkSession, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    usage_dir, snapshots = inputs
    dataset = (tmp_path / "usage").as_uri()
    run_usage_ingest(spark, JsonlSource(usage_dir.as_uri()), (tmp_path / "ck").as_uri(), dataset)
    out = tmp_path / "report"
    report = ["report", "--input", str(snapshots), "--at", AT.isoformat()]
    report += ["--output-dir", str(out), "--usage-dataset", dataset, *SPARK]
    assert main(report) == 0
    summary = json.loads((out / "summary.json").read_text())
    growing = summary["topicsGrowingMost"]
    # logs gained 1 MB/s for 12 h; capped stayed at its retention bound.
    assert growing[0]["topic"] == "logs"
    assert growing[0]["growthBytes"] == 12 * 3600 * 10**6
    assert abs(growing[1]["growthBytes"]) <= 100_000_000
    assert summary["headroom"]["largestBroker"] is None  # one broker: nobody to take its replicas
    page = (out / "report.html").read_text()
    assert "Topics that grew the fleet this week" in page
    assert "Volumes filled by their topics" in page
    (row,) = list(csv.DictReader((out / "mechanism_forecast.csv").open()))
    assert abs(float(row["hoursToHardLimit"]) - EXPECTED_HOURS) < 0.5
    # The report's one forecast is the mechanism's for this volume: full (1000 GB) when logs,
    # at 1 MB/s, has filled the 1000 - 343.2 GB left.
    (forecast,) = list(csv.DictReader((out / "forecast.csv").open()))
    assert forecast["method"] == "mechanism"
    assert abs(float(forecast["hoursToFull"]) - 656.8e9 / 1e6 / 3600) < 0.5
    assert forecast["drivers"].startswith("logs +")
    assert "no calibrated band" in forecast["reason"]
    # Without the dataset the panels say how to get them.
    plain = tmp_path / "plain"
    assert main([*report[:5], "--output-dir", str(plain), *SPARK]) == 0
    assert "run the report with --usage-dataset" in (plain / "report.html").read_text()
    assert json.loads((plain / "summary.json").read_text())["topicsGrowingMost"] is None


def test_the_mechanism_band_is_calibrated_on_the_fleets_own_past(
    spark: SparkSession, tmp_path: Path
) -> None:
    hours = 180
    for broker in (0, 1):
        documents, snapshots = growing_cluster(START, hours=hours, broker=broker)
        _write(tmp_path / "usage" / f"{broker}.jsonl", documents)
        _write(tmp_path / "snapshots" / f"{broker}.jsonl", snapshots)
    dataset = (tmp_path / "usage-dataset").as_uri()
    inbox = (tmp_path / "usage").as_uri()
    run_usage_ingest(spark, JsonlSource(inbox), (tmp_path / "ck").as_uri(), dataset)
    usage = load_usage(spark, dataset)
    history = load_history(spark, str(tmp_path / "snapshots"))
    at = START + timedelta(hours=hours)

    # Each topic's configs were read unchanged 218 times (109 documents a broker): two rows say
    # what they were.
    assert config_changes(usage.where(F.col("kind") == CONFIG)).count() == 2
    params = ForecastParams()
    calibration = mechanism_calibration(usage, history, at, params)
    # The lookback is the last 168 h: buckets -167..0 from `at`. Origins every 6 h once 72 h
    # lie behind: -96, -90, ..., -6; at 24 h those at or before -24 score, 13 per volume.
    # Both volumes grow steadily: every error is of the growing trend's class.
    growing = Trend.GROWING.value
    assert {name for name, _ in calibration.counts} == {growing}
    assert calibration.counts[growing, 24.0] == 2 * 13
    # At 72 h only -96..-72 score, 10 errors: a 90 % band needs 19 for both sides.
    assert calibration.counts[growing, 72.0] == 2 * 5
    assert calibration.horizons(growing) == [6.0, 24.0]
    # From the hourly rollup (`at` is on the hour), with no raw row: the same calibration.
    rolled = mechanism_calibration(usage, history.limit(0), at, params, hourly_rollup(history))
    assert rolled.counts == calibration.counts
    for key, bounds in calibration.bounds.items():
        assert list(rolled.bounds[key]) == pytest.approx(list(bounds)), key
    # Calibrated by one volume: its own errors, those of one broker's usage and history.
    one = mechanism_calibration(usage, history, at, ForecastParams(calibration_volumes=1))
    assert one.counts[growing, 24.0] == 13
    alone = [
        mechanism_calibration(
            usage.where(F.col("brokerId") == broker),
            history.where(F.col("brokerId") == broker),
            at,
            params,
        )
        for broker in (0, 1)
    ]
    assert any(own.bounds == one.bounds and own.counts == one.counts for own in alone)
    rows = mechanism_volumes(usage, history, at, params).toPandas()
    assert len(rows) == 2
    for row in rows.to_dict("records"):
        # 300 GB + 648 GB after 180 h at 1 MB/s: full 52 GB later, in 14.4 h.
        assert abs(row["hoursToCapacity"] - 52 * GB / 3.6e9) < 0.5
        assert (
            row["hoursToCapacityLow"] - 0.25 <= row["hoursToCapacity"] <= row["hoursToCapacityHigh"]
        )
        assert row["hoursToCapacityHigh"] - row["hoursToCapacityLow"] < 2.0
        assert str(row["band"]).startswith(
            "split-conformal 90% band, growing trend, calibrated to 24 h"
        )

    # The report's backtest panel scores the mechanism beside the lines (at its few origins, 8
    # a volume, too few errors to calibrate a band); both volumes grow by what `logs` writes.
    panel = backtest_panel(history, at, float(hours), 3600.0, usage=usage)
    mechanism = panel.table[panel.table["forecaster"] == "mechanism"]
    assert mechanism["origins"].sum() > 0
    assert (mechanism["misses"] + mechanism["falseFills"]).sum() == 0
    assert mechanism["errorP90Percent"].max() < 0.5
    assert "the mechanism 0." in panel.sentence
