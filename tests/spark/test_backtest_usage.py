"""The usage history rolled up to the backtest's buckets (Spark) feeds the mechanism forecaster
the answer the raw surveys give."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_history.forecast.backtest.mechanism_forecaster import mechanism_forecaster
from spark_history.forecast.backtest.spark_buckets import usage_buckets, usage_by_volume
from spark_history.ingest import JsonlSource
from spark_history.usage_documents import (
    USAGE_ROW_COLUMNS,
    USAGE_ROW_DDL,
    usage_rows,
    usage_verdict,
)
from spark_history.usage_ingest import run_usage_ingest
from tests.spark_history_pure.test_mechanism_forecaster import (
    PARAMS,
    START,
    Fallback,
    history_at,
    usage_frame,
)
from tests.spark_history_pure.usage_factory import GB, encoded, growing_cluster
from volume_quota.cli import main

pytestmark = pytest.mark.spark

HOURS = 12


def usage_dataset(spark: SparkSession) -> DataFrame:
    """``growing_cluster``'s usage rows as the usage dataset holds them."""
    rows = []
    for document in growing_cluster(START, hours=HOURS)[0]:
        verdict = usage_verdict(b"0", encoded(document), check_key=True)
        assert verdict.document is not None
        for row in usage_rows(verdict.document):
            rows.append(tuple(row.get(column) for column in USAGE_ROW_COLUMNS[:-1]))
    return spark.createDataFrame(rows, USAGE_ROW_DDL)  # the DDL has no ``date``


def test_hourly_buckets_keep_a_row_per_topic_and_hour_and_the_same_fill_time(
    spark: SparkSession,
) -> None:
    raw = usage_frame(HOURS)
    frame = usage_dataset(spark)
    until = START + timedelta(hours=HOURS)
    volume_rows, config_rows = usage_buckets(frame, 3600.0, until)
    volumes = usage_by_volume(volume_rows.toPandas(), config_rows.toPandas())
    assert list(volumes) == [(0, "/dev/a")]
    bucketed = volumes[(0, "/dev/a")]
    # 73 surveys ten minutes apart from START: one in START's bucket, six in each of 12 more.
    counts = bucketed.fillna({"topic": "-"}).groupby(["kind", "topic"]).size().to_dict()
    assert counts[("topic", "logs")] == HOURS + 1
    assert counts[("topic", "capped")] == HOURS + 1
    assert counts[("other", "-")] == HOURS + 1
    # Configs read in surveys 0, 10, ..., 70: eight reads, in eight different hours.
    assert counts[("config", "logs")] == 8
    assert counts[("config", "capped")] == 8

    fallback = Fallback().forecaster()
    history = history_at(HOURS)
    from_raw = mechanism_forecaster(raw, PARAMS, fallback).predict(history)
    from_buckets = mechanism_forecaster(bucketed, PARAMS, fallback).predict(history)
    assert from_raw.crossing is not None
    assert from_buckets.crossing is not None
    assert abs(from_buckets.crossing - from_raw.crossing) < 0.01 * from_raw.crossing


def test_nothing_after_until_is_rolled_up(spark: SparkSession) -> None:
    volume_rows, config_rows = usage_buckets(
        usage_dataset(spark), 3600.0, START + timedelta(hours=2)
    )
    surveyed = volume_rows.toPandas()["surveyedAt"]
    assert pd.to_datetime(surveyed, utc=True).max() == pd.Timestamp(START + timedelta(hours=2))
    read = pd.to_datetime(config_rows.toPandas()["configReadAt"], utc=True)
    assert read.max() <= pd.Timestamp(START + timedelta(hours=2))


def test_the_backtest_command_scores_the_mechanism_with_the_usage_dataset(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    usage, snapshots = growing_cluster(START, hours=48)
    (tmp_path / "usage").mkdir()
    (tmp_path / "usage" / "one.jsonl").write_text("".join(json.dumps(d) + "\n" for d in usage))
    history = tmp_path / "snapshots.jsonl"
    history.write_text("".join(json.dumps(d) + "\n" for d in snapshots))
    dataset = (tmp_path / "usage-dataset").as_uri()
    inbox, checkpoint = (tmp_path / "usage").as_uri(), (tmp_path / "ck").as_uri()
    run_usage_ingest(spark, JsonlSource(inbox), checkpoint, dataset)

    command = ["history", "backtest", "--input", str(history), "--json"]
    command += ["--horizon-days", "1", "--horizons", "6,24", "--master", "local[2]"]
    assert main([*command, "--usage-dataset", dataset]) == 0
    document = json.loads(capsys.readouterr().out)
    rows = {(row["forecaster"], row["horizonHours"]): row for row in document["rows"]}
    assert {name for name, _ in rows} == {"linear-6h", "linear-72h", "forecast", "mechanism"}
    for horizon in (6.0, 24.0):
        mechanism, forecast = rows["mechanism", horizon], rows["forecast", horizon]
        assert mechanism["origins"] == forecast["origins"] > 0
        assert mechanism["falseFills"] == 0
        # logs' write rate (1 MB/s) is the volume's growth: its path is the truth within the
        # bucket's spread (the maximum of an hour is 1.8 GB above its mean).
        assert mechanism["errorP90Bytes"] < 2.5 * GB
    assert main(command) == 0
    plain = json.loads(capsys.readouterr().out)["rows"]
    assert "mechanism" not in {row["forecaster"] for row in plain}


def test_a_bucket_keeps_every_value_of_its_newest_survey(spark: SparkSession) -> None:
    """Three surveys of one topic in one hour, out of order: the bucket's row is the newest
    one's, a null included, and no column comes from another survey."""

    def survey(minutes: int, stored: int, transient: int | None) -> dict[str, object]:
        return {
            "brokerId": 0,
            "surveyedAt": START + timedelta(minutes=minutes),
            "kind": "topic",
            "volumeName": "/dev/a",
            "topic": "logs",
            "bytes": stored,
            "partitions": minutes,
            "activeSegmentBytes": 2 * stored,
            "transientBytes": transient,
            "unattributedBytes": 3 * stored,
        }

    surveys = [survey(40, 500, None), survey(10, 900, 7), survey(25, 100, 8)]
    columns = USAGE_ROW_COLUMNS[:-1]
    frame = spark.createDataFrame(
        [tuple(one.get(name) for name in columns) for one in surveys], USAGE_ROW_DDL
    )
    volume_rows, _ = usage_buckets(frame.repartition(3), 3600.0, None)
    (row,) = volume_rows.collect()
    assert row["surveyedAt"].replace(tzinfo=None) == (START + timedelta(minutes=40)).replace(
        tzinfo=None
    )
    assert (row["bytes"], row["partitions"], row["activeSegmentBytes"]) == (500, 40, 1000)
    assert (row["transientBytes"], row["unattributedBytes"]) == (None, 1500)


def test_chosen_volumes_keep_their_surveys_and_every_config(spark: SparkSession) -> None:
    frame = usage_dataset(spark)
    until = START + timedelta(hours=HOURS)
    every_volume, every_config = usage_buckets(frame, 3600.0, until)

    def chosen(volume: str) -> tuple[DataFrame, DataFrame]:
        volumes = spark.createDataFrame([(0, volume)], "brokerId int, volumeName string")
        return usage_buckets(frame, 3600.0, until, volumes)

    same_volume, same_configs = chosen("/dev/a")
    assert same_volume.exceptAll(every_volume).count() == 0
    assert same_volume.count() == every_volume.count() > 0
    other_volume, other_configs = chosen("/dev/b")
    assert other_volume.count() == 0
    for configs in (same_configs, other_configs):
        assert configs.exceptAll(every_config).count() == 0
        assert configs.count() == every_config.count() == 16
