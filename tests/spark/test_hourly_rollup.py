"""The hourly rollup: its rows worked out by hand, and every hourly analysis giving from it what
it gives from the raw rows.

The analyses' equality is checked with the raw rows *emptied* when the rollup is given: an
analysis that ignored the rollup would find no rows and fail the comparison.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_history import command_runs, hourly_rollup, synthetic
from spark_history.balance import balance
from spark_history.cluster_replay import NO_BREACH
from spark_history.command_runs import last_bucket_end
from spark_history.commands import main
from spark_history.forecast.spark_mechanism import newest_snapshots
from spark_history.forecast.spark_trend import forecast_volumes, hourly_envelope
from spark_history.forecast.trend import ForecastParams
from spark_history.history_input import load_history
from spark_history.ingest import JsonlSource, run_ingest
from spark_history.replay_rows import serving_rollup
from spark_history.report import usage_series
from spark_history.report_capacity import backtest_panel, capacity_totals
from spark_history.report_capacity import broker_hours as capacity_broker_hours
from spark_history.rollup_store import SNAPSHOTS, load_rollup, refresh_rollup, rollup_state
from spark_history.synthetic_jsonl import write_jsonl
from spark_history.thresholds import TuningParams, replay_window, threshold_tradeoffs
from spark_history.weekly_growth import DEFAULT_GROWTH_WEEKS, weekly_growth
from spark_history.weekly_growth import broker_hours as growth_broker_hours

from .conftest import RowsFactory
from .history_frames import AT, volume_frame

pytestmark = pytest.mark.spark


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _hand_made(make_rows: RowsFactory) -> DataFrame:
    """Five snapshots of one volume around midnight (two exactly on the hour), and a tombstone.

    ============================  ========  ========
    snapshotAt                    consumed  capacity
    ============================  ========  ========
    2026-11-21 23:00:00           100       1000
    2026-11-21 23:20:00           300       1000
    2026-11-21 23:40:00           200       1000
    2026-11-22 00:00:00           400       2000
    2026-11-22 00:30:00           500       1000
    ============================  ========  ========

    Limits of 10 % and 5 % free, except at 23:20, whose soft and hard thresholds are 1,000 and
    500 bytes: its 700 bytes free are 40 % of the way from hard to soft (factor 0.4).
    """
    instants = ["2026-11-21 23:00", "2026-11-21 23:20", "2026-11-21 23:40"]
    instants += ["2026-11-22 00:00", "2026-11-22 00:30"]
    hours = [(_instant(text) - AT).total_seconds() / 3600.0 for text in instants]
    frame = volume_frame([7], "/dev/a", hours, [100, 300, 200, 400, 500], 1000)
    frame.loc[3, ["capacity", "free"]] = [2000, 1600]
    frame.loc[1, ["softThresholdBytes", "hardThresholdBytes"]] = [1000.0, 500.0]
    tombstone = frame.iloc[[0]].assign(volumeName=None, consumed=0, capacity=0, free=0)
    return make_rows(pd.concat([frame, tombstone], ignore_index=True))


def _by_hour(frame: DataFrame) -> dict[tuple[str, str], dict[str, object]]:
    return {
        (str(row["hourEnd"])[:16], str(row.asDict().get("date"))): row.asDict()
        for row in frame.collect()
    }


def test_the_rollup_of_a_hand_made_history_holds_the_hand_worked_values(
    make_rows: RowsFactory,
) -> None:
    rollup = _by_hour(hourly_rollup.hourly_rollup(_hand_made(make_rows)))
    # Hours are right-closed: 23:00:00 ends the hour (22:00, 23:00], 00:00:00 the hour
    # (23:00, 00:00], which is split between the two days' partitions.
    assert sorted(rollup) == [
        ("2026-11-21 23:00", "2026-11-21"),
        ("2026-11-22 00:00", "2026-11-21"),
        ("2026-11-22 00:00", "2026-11-22"),
        ("2026-11-22 01:00", "2026-11-22"),
    ]
    late = rollup[("2026-11-22 00:00", "2026-11-21")]
    assert late["samples"] == 2
    assert (late["minConsumed"], late["maxConsumed"], late["sumConsumed"]) == (200, 300, 500)
    assert late["sumOffsetMicros"] == -(40 + 20) * 60 * 1_000_000
    assert (late["minUsedPercent"], late["maxUsedPercent"]) == (20.0, 30.0)
    assert (late["lastConsumed"], late["lastCapacity"], late["lastFree"]) == (200, 1000, 800)
    assert str(late["firstAt"])[11:16] == "23:20"
    assert str(late["lastAt"])[11:16] == "23:40"
    assert late["lastSoftThresholdBytes"] == 100.0
    assert late["lastHardThresholdBytes"] == 50.0
    assert late["lastPath"] == "/data/a"
    assert (late["minFree"], late["worstFree"], late["worstCapacity"]) == (700, 700, 1000)
    assert late["minInForceFactor"] == pytest.approx(0.4)
    assert late["maxAheadSeconds"] is None  # no Kafka record timestamps
    midnight = rollup[("2026-11-22 00:00", "2026-11-22")]
    assert (midnight["samples"], midnight["sumOffsetMicros"], midnight["maxCapacity"]) == (
        1,
        0,
        2000,
    )
    first = rollup[("2026-11-21 23:00", "2026-11-21")]
    assert (first["samples"], first["maxConsumed"], first["sumOffsetMicros"]) == (1, 100, 0)
    assert first["minInForceFactor"] == NO_BREACH  # 900 bytes free: above the soft limit
    last = rollup[("2026-11-22 01:00", "2026-11-22")]
    assert last["sumOffsetMicros"] == -30 * 60 * 1_000_000

    merged = _by_hour(hourly_rollup.merge_hours(hourly_rollup.hourly_rollup(_hand_made(make_rows))))
    hour = merged[("2026-11-22 00:00", "None")]
    assert len(merged) == 3
    assert (hour["samples"], hour["minConsumed"], hour["maxConsumed"]) == (3, 200, 400)
    assert (hour["sumConsumed"], hour["sumOffsetMicros"]) == (900, -3_600_000_000)
    assert (hour["minUsedPercent"], hour["maxUsedPercent"]) == (20.0, 30.0)
    # The newest sample of the merged hour is the one at midnight, in the next day's partial.
    assert (hour["lastConsumed"], hour["lastCapacity"], hour["maxCapacity"]) == (400, 2000, 2000)
    # 1,600 of 2,000 bytes free at midnight is a larger share than 700 of 1,000 at 23:20.
    assert (hour["minFree"], hour["worstFree"], hour["worstCapacity"]) == (700, 700, 1000)
    assert hour["minInForceFactor"] == pytest.approx(0.4)


def test_the_rollup_serves_only_whole_hour_buckets_ending_on_the_hour() -> None:
    assert hourly_rollup.serves(AT, 168.0)
    assert not hourly_rollup.serves(AT + timedelta(minutes=20), 168.0)
    assert not hourly_rollup.serves(AT, 168.0, bucket_seconds=600.0)
    assert not hourly_rollup.serves(AT, 2.5)
    assert not hourly_rollup.serves(AT, None)


SYNTHETIC = synthetic.HistoryConfig(
    at=AT, history_hours=9 * 24.0, interval_seconds=600.0, jitter_seconds=0.0
)
"""Nine days of 8 volumes every 10 minutes, on the minute: snapshots fall exactly on hours and
on midnights, where the rollup's hours are split between two date partitions."""


@pytest.fixture(scope="module")
def dataset(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The synthetic history, ingested as ``history ingest`` does (limits and thresholds),
    with its stored rollup refreshed (ten dates)."""
    work: Path = tmp_path_factory.mktemp("rollup")
    frame = synthetic.history_frame(synthetic.make_traces(5, 8, SYNTHETIC), 5, SYNTHETIC)
    write_jsonl(frame, work / "inbox" / "history.jsonl")
    source = JsonlSource((work / "inbox").as_uri())
    uri = (work / "dataset").as_uri()
    run_ingest(spark, source, (work / "ck").as_uri(), uri)
    assert len(refresh_rollup(spark, uri, kind=SNAPSHOTS).dates) == 10
    return uri


@pytest.fixture(scope="module")
def ingested(spark: SparkSession, dataset: str) -> Iterator[DataFrame]:
    rows = load_history(spark, dataset).cache()
    yield rows
    rows.unpersist()


def _same(left: pd.DataFrame, right: pd.DataFrame, keys: list[str]) -> None:
    assert len(left) > 0
    ordered = [frame.sort_values(keys).reset_index(drop=True) for frame in (left, right)]
    pd.testing.assert_frame_equal(
        ordered[0], ordered[1][list(ordered[0].columns)], check_dtype=False, rtol=1e-9
    )


@pytest.mark.parametrize("at", [AT, AT - timedelta(hours=30)])
def test_each_hourly_analysis_gives_the_same_from_the_rollup_as_from_raw(
    spark: SparkSession, dataset: str, ingested: DataFrame, at: datetime
) -> None:
    assert rollup_state(spark, dataset, SNAPSHOTS).stale == ()  # the stored rollup is what is read
    rollup = load_rollup(spark, dataset, ingested.limit(0), kind=SNAPSHOTS).cache()
    nothing = ingested.limit(0)
    params = ForecastParams()
    volume = ["brokerId", "volumeName"]

    raw_envelope = hourly_envelope(ingested, at, params.lookback_hours).toPandas()
    from_rollup = hourly_envelope(nothing, at, params.lookback_hours, rollup=rollup).toPandas()
    _same(raw_envelope, from_rollup, [*volume, "bucket"])

    forecast = forecast_volumes(ingested, at, params).toPandas()
    _same(forecast, forecast_volumes(nothing, at, params, rollup=rollup).toPandas(), volume)

    plotted = forecast.head(4)
    _same(
        usage_series(ingested, at, plotted, params),
        usage_series(nothing, at, plotted, params, rollup),
        [*volume, "bucket"],
    )
    _same(
        growth_broker_hours(ingested, at, 4),
        growth_broker_hours(nothing, at, 4, rollup),
        ["brokerId", "bucket"],
    )
    _same(
        capacity_broker_hours(ingested, at, params),
        capacity_broker_hours(nothing, at, params, rollup),
        ["brokerId", "bucket"],
    )
    raw_panel = backtest_panel(ingested, at, 168.0, 3600.0)
    rollup_panel = backtest_panel(nothing, at, 168.0, 3600.0, rollup=rollup)
    assert (rollup_panel.volumes, rollup_panel.sentence) == (raw_panel.volumes, raw_panel.sentence)
    _same(raw_panel.table, rollup_panel.table, ["forecaster", "horizonHours"])
    _same(
        balance(ingested, at).toPandas(),
        balance(nothing, at, rollup=rollup).toPandas(),
        volume,
    )
    _same(
        newest_snapshots(ingested, at, params.lookback_hours).toPandas(),
        newest_snapshots(nothing, at, params.lookback_hours, rollup).toPandas(),
        volume,
    )
    _same_replay(ingested, nothing, at, rollup)
    rollup.unpersist()


def _same_replay(rows: DataFrame, nothing: DataFrame, at: datetime, rollup: DataFrame) -> None:
    """The limits' replay: every candidate's hours and warnings, the per-broker buckets and
    the fleet's evidence."""
    raw = threshold_tradeoffs(rows, at, TuningParams())
    serving = serving_rollup(rollup, replay_window(at, TuningParams()))
    assert serving is not None
    served = threshold_tradeoffs(nothing, at, TuningParams(), rollup=serving)
    assert raw.table["throttledHours"].sum() + raw.table["pausedHours"].sum() > 0
    pd.testing.assert_frame_equal(raw.table, served.table, check_dtype=False, rtol=1e-9)
    # Which volume an OPEN bucket names is arbitrary (every volume ties at NO_BREACH).
    buckets = [
        frame.buckets.assign(
            inForceVolume=frame.buckets["inForceVolume"].where(
                frame.buckets["inForceFactor"] < NO_BREACH
            )
        )
        for frame in (raw, served)
    ]
    pd.testing.assert_frame_equal(buckets[0], buckets[1], check_dtype=False, rtol=1e-9)
    assert raw.evidence == served.evidence


def test_the_forecast_command_reads_the_rollup_and_gives_the_raw_forecast(
    dataset: str,
    ingested: DataFrame,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    output = tmp_path / "forecast.csv"
    argv = ["forecast", "--input", dataset, "--at", AT.isoformat(), "--output", str(output)]
    assert main([*argv, "--master", "local[2]"]) == 0
    assert "hourly rollup not used" not in capfd.readouterr().err
    written = pd.read_csv(output)
    raw = forecast_volumes(ingested, AT, ForecastParams()).toPandas()
    columns = ["brokerId", "volumeName", "trend", "hoursToFull", "levelBytes", "hoursOfData"]
    _same(raw[columns], written[columns], ["brokerId", "volumeName"])


def test_without_at_the_evaluation_time_is_the_end_of_the_last_whole_bucket() -> None:
    now = _instant("2026-11-22T12:59:59.5Z")
    assert last_bucket_end(now, 3600.0) == _instant("2026-11-22T12:00:00Z")
    assert last_bucket_end(now, 600.0) == _instant("2026-11-22T12:50:00Z")
    assert last_bucket_end(_instant("2026-11-22T12:00:00Z"), 3600.0) == _instant(
        "2026-11-22T12:00:00Z"
    )


def test_a_forecast_without_at_reads_the_rollup_as_of_the_last_whole_hour(
    dataset: str,
    ingested: DataFrame,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class TwentyPast(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> TwentyPast:
            return cls.fromtimestamp((AT + timedelta(minutes=20)).timestamp(), tz)

    monkeypatch.setattr(command_runs, "datetime", TwentyPast)
    output = tmp_path / "forecast.csv"
    argv = ["forecast", "--input", dataset, "--output", str(output), "--master", "local[2]"]
    assert main(argv) == 0
    err = capfd.readouterr().err
    assert f"as of {AT.isoformat()}" in err
    assert "hourly rollup not used" not in err
    written = pd.read_csv(output)
    raw = forecast_volumes(ingested, AT, ForecastParams()).toPandas()
    columns = ["brokerId", "volumeName", "trend", "hoursToFull", "levelBytes"]
    _same(raw[columns], written[columns], ["brokerId", "volumeName"])


def test_the_report_command_reads_the_stored_rollup_and_gives_the_raw_tables(
    dataset: str,
    ingested: DataFrame,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    windows: list[float] = []
    read_window = hourly_rollup.window_hours

    def recorded(rollup: DataFrame, at: datetime, lookback_hours: float) -> DataFrame:
        windows.append(lookback_hours)
        return read_window(rollup, at, lookback_hours)

    monkeypatch.setattr(hourly_rollup, "window_hours", recorded)
    argv = ["report", "--input", dataset, "--at", AT.isoformat()]
    argv += ["--output-dir", str(tmp_path), "--master", "local[2]"]
    assert main(argv) == 0
    err = capfd.readouterr().err
    assert "hourly rollup not used" not in err
    assert "computed from the raw rows" not in err  # every date of the window was stored
    # Read by the forecast, the usage series, the totals, the balance and the headroom (7
    # days), the backtest and the limits' replay (its hours and its newest limits: 30 days)
    # and weekly growth (5 weeks).
    assert sorted(windows) == [168.0] * 5 + [30 * 24.0] * 3 + [5 * 168.0]

    raw = forecast_volumes(ingested, AT, ForecastParams()).toPandas()
    columns = ["brokerId", "volumeName", "trend", "hoursToFull", "levelBytes", "hoursOfData"]
    _same(raw[columns], pd.read_csv(tmp_path / "forecast.csv")[columns], columns[:2])
    growth = weekly_growth(growth_broker_hours(ingested, AT, DEFAULT_GROWTH_WEEKS), AT, 4)
    _same(growth, pd.read_csv(tmp_path / "weekly_growth.csv"), ["brokerId", "week"])
    totals = capacity_totals(ingested, AT, ForecastParams()).table
    # The fleet's row has no broker: <NA> in the table's Int64 column, an empty cell in CSV.
    totals = totals.astype({"brokerId": "float64"})
    _same(totals, pd.read_csv(tmp_path / "capacity_totals.csv"), ["group"])
    tradeoffs = threshold_tradeoffs(ingested, AT, TuningParams()).table
    written = pd.read_csv(tmp_path / "thresholds.csv")
    _same(tradeoffs[list(written.columns)], written, ["limits", "softPercent", "hardPercent"])


def test_off_the_hour_the_analyses_read_the_raw_rows(ingested: DataFrame) -> None:
    at = AT - timedelta(minutes=25)
    rollup = hourly_rollup.hourly_rollup(ingested.limit(0))
    params = ForecastParams()
    _same(
        forecast_volumes(ingested, at, params).toPandas(),
        forecast_volumes(ingested, at, params, rollup=rollup).toPandas(),
        ["brokerId", "volumeName"],
    )
