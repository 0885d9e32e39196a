"""The hourly usage rollup: each series' oldest and newest survey of an hour and each topic's
newest config read; the readers' answers from it equal those from the raw usage on whole
hours; kept beside the usage dataset by the ingest and the compaction."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import rollup_store
from spark_history.commands import main
from spark_history.compaction import compact_dataset
from spark_history.forecast.backtest.spark_buckets import usage_buckets
from spark_history.forecast.spark_mechanism import (
    load_usage,
    mechanism_volumes,
    newest_configs,
    topic_series,
)
from spark_history.forecast.vocabulary import ForecastParams
from spark_history.history_input import load_history
from spark_history.ingest import JsonlSource
from spark_history.usage_documents import CONFIG, OTHER, TOPIC, USAGE_ROW_COLUMNS, USAGE_ROW_DDL
from spark_history.usage_ingest import run_usage_ingest
from spark_history.usage_rollup import usage_rollup
from tests.spark_history_pure.usage_factory import growing_cluster

pytestmark = pytest.mark.spark

DAY = datetime(2026, 11, 22, tzinfo=UTC)


def _at(hour: int, minute: int = 0, day: int = 0) -> datetime:
    return DAY + timedelta(days=day, hours=hour, minutes=minute)


def _survey(kind: str, topic: str | None, at: datetime, size: int) -> dict[str, object]:
    return {"brokerId": 1, "surveyedAt": at, "kind": kind, "volumeName": "/dev/a"} | {
        "topic": topic,
        "bytes": size,
        "partitions": 2,
        "date": at.date(),
    }


def _config_read(read_at: datetime, retention_ms: int) -> dict[str, object]:
    surveyed = read_at + timedelta(minutes=1)
    return {"brokerId": 1, "surveyedAt": surveyed, "kind": CONFIG, "topic": "logs"} | {
        "configReadAt": read_at,
        "retentionMs": retention_ms,
        "date": surveyed.date(),
    }


def _frame(spark: SparkSession, rows: list[dict[str, object]]) -> DataFrame:
    full = [{name: row.get(name) for name in USAGE_ROW_COLUMNS} for row in rows]
    return spark.createDataFrame(full, f"{USAGE_ROW_DDL}, date date")


def test_an_hour_keeps_its_oldest_and_newest_survey_and_its_newest_config_read(
    spark: SparkSession,
) -> None:
    rows = [
        _survey(TOPIC, "logs", _at(10), 100),  # alone in the hour ending 10:00
        _survey(TOPIC, "logs", _at(10, 20), 120),  # oldest of the hour ending 11:00
        _survey(TOPIC, "logs", _at(10, 40), 140),  # neither: dropped
        _survey(TOPIC, "logs", _at(11), 160),  # newest of the hour ending 11:00
        _survey(OTHER, None, _at(10, 20), 7),  # the other series of the same hour
        _survey(OTHER, None, _at(10, 40), 9),
        _survey(TOPIC, "logs", _at(23, 30), 300),  # the hour ending at midnight, split in two
        _survey(TOPIC, "logs", _at(23, 45), 310),  # dates: 23:30 to 23:45 on the first
        _survey(TOPIC, "logs", _at(0, day=1), 320),  # 00:00:00 on the second
        _config_read(_at(10, 5), 1000),  # older read of the hour ending 11:00: dropped
        _config_read(_at(10, 50), 2000),
        _config_read(_at(11, 10), 3000),
    ]
    kept = usage_rollup(_frame(spark, rows)).toPandas()
    surveys = kept[kept["kind"] != CONFIG]
    got = sorted(
        (str(kind), pd.Timestamp(at).strftime("%d %H:%M"), int(size))
        for kind, at, size in surveys[["kind", "surveyedAt", "bytes"]].itertuples(index=False)
    )
    assert got == [
        (OTHER, "22 10:20", 7),
        (OTHER, "22 10:40", 9),
        (TOPIC, "22 10:00", 100),
        (TOPIC, "22 10:20", 120),
        (TOPIC, "22 11:00", 160),
        (TOPIC, "22 23:30", 300),
        (TOPIC, "22 23:45", 310),
        (TOPIC, "23 00:00", 320),
    ]
    reads = kept[kept["kind"] == CONFIG].sort_values("configReadAt")
    assert list(reads["retentionMs"]) == [2000, 3000]
    assert list(reads["surveyedAt"].dt.strftime("%H:%M")) == ["10:51", "11:11"]
    assert list(kept.columns) == [*USAGE_ROW_COLUMNS]
    assert surveys["retentionMs"].isna().all()


def _sorted(frame: DataFrame | pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    table = frame.toPandas() if isinstance(frame, DataFrame) else frame
    return table.sort_values(keys).reset_index(drop=True)


@pytest.fixture(scope="module")
def cluster(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A usage dataset of 13 hours of surveys every 10 minutes, and its snapshots."""
    folder = tmp_path_factory.mktemp("usage-rollup")
    documents, snapshots = growing_cluster(DAY, hours=13)
    (folder / "usage").mkdir()
    (folder / "usage" / "all.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents))
    (folder / "snapshots.jsonl").write_text("".join(json.dumps(d) + "\n" for d in snapshots))
    inbox, checkpoint = (folder / "usage").as_uri(), (folder / "ck").as_uri()
    run_usage_ingest(spark, JsonlSource(inbox), checkpoint, (folder / "dataset").as_uri())
    return folder / "dataset", folder / "snapshots.jsonl"


def test_on_whole_hours_the_readers_answer_from_the_rollup_as_from_every_survey(
    spark: SparkSession, cluster: tuple[Path, Path]
) -> None:
    dataset, snapshots = cluster
    raw = load_usage(spark, str(dataset))
    rolled = usage_rollup(raw).cache()
    # Three series (logs, capped, other) surveyed every 10 minutes from 00:00 to 13:00: the
    # hour ending 00:00 holds one survey, the 13 others six, of which two are kept; 8 config
    # reads of 2 topics, each alone in its hour.
    assert raw.count() == 3 * 79 + 8 * 2
    assert rolled.count() == 3 * (1 + 13 * 2) + 8 * 2
    at = _at(12)
    keys = ["brokerId", "volumeName", "kind", "topic", "surveyedAt"]
    for until in (at, None):
        (from_raw, raw_configs), (from_rollup, rollup_configs) = (
            usage_buckets(usage, 3600.0, until) for usage in (raw, rolled)
        )
        pd.testing.assert_frame_equal(_sorted(from_raw, keys), _sorted(from_rollup, keys))
        config_keys = ["topic", "configReadAt"]
        pd.testing.assert_frame_equal(
            _sorted(raw_configs, config_keys), _sorted(rollup_configs, config_keys)
        )
    series_keys = ["brokerId", "volumeName", "topic"]
    pd.testing.assert_frame_equal(
        _sorted(topic_series(raw, at), series_keys), _sorted(topic_series(rolled, at), series_keys)
    )
    pd.testing.assert_frame_equal(
        _sorted(newest_configs(raw, at), ["topic"]), _sorted(newest_configs(rolled, at), ["topic"])
    )
    history = load_history(spark, str(snapshots))
    params = ForecastParams(lookback_hours=12.0)
    volume_keys = ["brokerId", "volumeName"]
    pd.testing.assert_frame_equal(
        _sorted(mechanism_volumes(raw, history, at, params), volume_keys),
        _sorted(mechanism_volumes(rolled, history, at, params), volume_keys),
    )


def test_off_the_hour_the_rollup_would_answer_otherwise(
    spark: SparkSession, cluster: tuple[Path, Path]
) -> None:
    """Why the readers take the rollup only on whole hours: a bucket cut at 11:50 has its
    11:50 survey in the raw usage, and only 11:10 (the oldest of its hour) in the rollup."""
    raw = load_usage(spark, str(cluster[0]))
    until = _at(11, 50)
    newest = [usage_buckets(usage, 3600.0, until)[0] for usage in (raw, usage_rollup(raw))]
    last = [frame.agg(F.max("surveyedAt")).collect()[0][0] for frame in newest]
    assert [at.astimezone(UTC).strftime("%H:%M") for at in last] == ["11:50", "11:10"]


def _ingest(work: Path, hours: tuple[int, int]) -> None:
    """``history ingest`` as a user runs it, of the surveys of ``hours`` (from 22:00)."""
    start = DAY - timedelta(hours=2)
    documents, snapshots = growing_cluster(start, hours=4)
    first, last = (start + timedelta(hours=hour) for hour in hours)
    chosen = [d for d in documents if first <= datetime.fromisoformat(str(d["surveyedAt"])) < last]
    (work / "usage").mkdir(exist_ok=True)
    (work / "usage" / f"{hours[0]}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in chosen))
    (work / "snapshots.jsonl").write_text("".join(json.dumps(d) + "\n" for d in snapshots))
    argv = ["ingest", "--source", "jsonl", "--input", str(work / "snapshots.jsonl")]
    argv += ["--checkpoint", str(work / "ck"), "--output", str(work / "snapshots")]
    argv += ["--usage-input", str(work / "usage"), "--usage-output", str(work / "dataset")]
    argv += ["--usage-checkpoint", str(work / "usage-ck"), "--master", "local[2]"]
    assert main(argv) == 0


def _assert_stored_rollup_of_everything(spark: SparkSession, work: Path) -> None:
    """The analyses read the stored rollup alone (nothing computed from raw rows), and it
    equals a fresh rollup of every raw row."""
    raw = load_usage(spark, str(work / "dataset"))
    said = io.StringIO()
    stored = rollup_store.load_rollup(
        spark, str(work / "dataset"), raw, stream=said, kind=rollup_store.USAGE
    )
    assert said.getvalue() == ""
    keys = ["kind", "topic", "surveyedAt", "configReadAt", "date"]
    fresh = _sorted(usage_rollup(raw), keys)
    assert len(fresh) > 0
    pd.testing.assert_frame_equal(_sorted(stored, keys), fresh, check_dtype=False)


def test_the_ingest_keeps_the_usage_rollup_and_the_compaction_keeps_it_valid(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _ingest(tmp_path, (0, 1))  # 22:00 to 23:00 on the 21st
    capsys.readouterr()
    _ingest(tmp_path, (1, 3))  # to 01:00 on the 22nd: both dates grow
    # The 21st gained a file: its stored rollup is extended; the 22nd is new: computed.
    said = capsys.readouterr().out
    assert "hourly usage rollup: 1 date(s) recomputed, 1 extended with new files" in said
    state = rollup_store.rollup_state(spark, str(tmp_path / "dataset"), rollup_store.USAGE)
    assert (sorted(state.valid), state.stale) == (["2026-11-21", "2026-11-22"], ())
    _assert_stored_rollup_of_everything(spark, tmp_path)

    result = compact_dataset(spark, str(tmp_path / "dataset"), min_files=2)
    assert result.partitions >= 1
    state = rollup_store.rollup_state(spark, str(tmp_path / "dataset"), rollup_store.USAGE)
    assert state.stale == ()
    _assert_stored_rollup_of_everything(spark, tmp_path)
