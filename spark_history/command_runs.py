"""What the ``history`` subcommands do once their options are parsed (``commands.py``).

pyspark, pandas and matplotlib load inside the run functions, so ``volume-quota --help`` stays
fast.
"""

# ruff: noqa: PLC0415 - imports are lazy on purpose: `volume-quota --help` must not load Spark

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from spark_history.analysis_settings import AnalysisSettings, ForecastSettings, ReportSettings
from spark_history.errors import HistoryUsageError
from spark_history.settings_flags import load_options

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

    from spark_history.forecast.trend import ForecastParams
    from spark_history.session import StageProgress
    from spark_history.thresholds import TuningParams


def run_forecast(arguments: argparse.Namespace) -> int:
    from spark_history import storage
    from spark_history.forecast.choice import one_forecast
    from spark_history.forecast.envelope import FORECAST_COLUMNS
    from spark_history.forecast.spark_trend import forecast_volumes
    from spark_history.history_input import load_window
    from spark_history.prometheus import textfile
    from spark_history.session import step

    settings = load_options(ForecastSettings, arguments)
    at = _evaluation_time(settings.at, settings.history_bucket)
    params = _forecast_params(settings)
    _check_local_input(arguments.input)
    if settings.usage_dataset is not None:
        _check_local_input(settings.usage_dataset)
    session = _session(arguments)
    _check_input(session, arguments.input)
    with step("forecast"), _progress(session):
        # Read once, kept for the envelope, the newest snapshots and the mechanism.
        hours = params.lookback_hours * max(1.0, params.bucket_seconds / 3600.0)
        window = _spark_call(lambda: load_window(session, arguments.input, at, hours))
        rows = window.rows
        rollup = _spark_call(lambda: _rollup_for(session, arguments.input, rows, at, params))
        trend = _spark_call(
            lambda: forecast_volumes(rows, at, params, window.tombstones, rollup).toPandas()
        )
    if trend.empty:
        raise HistoryUsageError(
            f"no snapshots in {arguments.input} in the "
            f"{settings.lookback_days:g} days before {at.isoformat()}"
        )
    mechanism = None
    if settings.usage_dataset is not None:
        mechanism = _mechanism_forecast(session, settings, (rows, rollup), at, params)
    window.unpersist()
    table = one_forecast(trend, mechanism).sort_values(
        ["hoursToFull", "usedPercent"], ascending=[True, False], na_position="last"
    )
    csv_text = table[list(FORECAST_COLUMNS)].to_csv(index=False)
    _spark_call(lambda: storage.write_text(session, arguments.output, csv_text))
    if arguments.prometheus_textfile:
        metrics = textfile(table, at.timestamp())
        # node_exporter may read the file while it is written: write beside it, then rename.
        _spark_call(lambda: storage.replace_text(session, arguments.prometheus_textfile, metrics))
    print(f"wrote {arguments.output}: {describe_forecast(table, settings.horizon_days)}")
    return 0


def _rollup_for(
    session: SparkSession,
    path: str,
    rows: DataFrame,
    at: datetime,
    params: ForecastParams,
    *,
    lookback_hours: float | None = None,
) -> DataFrame | None:
    """The hourly rollup when the forecast's buckets are its hours (1 h buckets, ``at`` on a
    whole hour, a whole number of hours of lookback), else None: the hourly analyses then read
    the raw rows, as their buckets straddle the rollup's hours."""
    from spark_history.hourly_rollup import serves
    from spark_history.rollup_store import SNAPSHOTS, load_rollup

    if not serves(at, params.lookback_hours, params.bucket_seconds):
        print(
            "[history] hourly rollup not used: --at is not on a whole hour (or the buckets "
            "are not 1 h)",
            file=sys.stderr,
        )
        return None
    window = (at, lookback_hours or params.lookback_hours)
    return load_rollup(session, path, rows, window, kind=SNAPSHOTS)


def _mechanism_forecast(
    session: SparkSession,
    settings: ForecastSettings,
    snapshots: tuple[DataFrame, DataFrame | None],
    at: datetime,
    params: ForecastParams,
) -> pd.DataFrame:
    """``history forecast --usage-dataset``: the mechanism forecast's table (and its CSV with
    ``--mechanism-output``); ``snapshots``: the raw rows and their hourly rollup (None off the
    hour)."""

    from spark_history import storage
    from spark_history.forecast.mechanism.usage_frame import MECHANISM_COLUMNS
    from spark_history.forecast.spark_mechanism import mechanism_volumes
    from spark_history.session import step

    output = settings.mechanism_output
    with step("mechanism forecast"), _progress(session):
        usage = _usage_dataset(session, settings.usage_dataset, at, params.bucket_seconds)
        assert usage is not None
        rows, rollup = snapshots
        table = _spark_call(lambda: mechanism_volumes(usage, rows, at, params, rollup).toPandas())
    table = table.sort_values(["hoursToHardLimit", "brokerId", "volumeName"], na_position="last")
    filling = int(table["hoursToHardLimit"].notna().sum())
    print(
        f"mechanism: {len(table)} volumes with topic usage, {filling} forecast by their "
        f"topics' write rates and retention to reach the hard limit within "
        f"{settings.horizon_days:g} days",
        file=sys.stderr,
    )
    if output is not None:
        csv_text = table[list(MECHANISM_COLUMNS)].to_csv(index=False)
        _spark_call(lambda: storage.write_text(session, output, csv_text))
        print(f"wrote {output}")
    return table


def describe_forecast(table: object, horizon_days: float) -> str:
    """One line: how many volumes, how many fill, are full, retired, or failed."""
    import pandas as pd

    assert isinstance(table, pd.DataFrame)
    trends = table["trend"].value_counts()
    filling = int((table["hoursToFull"].notna() & (table["trend"] != "full")).sum())
    text = (
        f"{len(table)} volumes, {int(trends.get('full', 0))} full now, {filling} forecast "
        f"to fill within {horizon_days:g} days, {int(trends.get('retired', 0))} retired "
        f"(not forecast), {int(trends.get('error', 0))} in error"
    )
    errors = table[table["trend"] == "error"]
    if not errors.empty:
        first = errors.iloc[0]
        text += f" (first: broker {first['brokerId']} {first['volumeName']}: {first['reason']})"
    return text


def run_report(arguments: argparse.Namespace) -> int:
    from spark_history.history_input import load_history
    from spark_history.override_runs import (
        describe_overrides,
        history_override_policy,
        report_overrides,
    )
    from spark_history.report import PanelParams, write_report
    from spark_history.report_inputs import report_windows, rollup_and_window

    settings = load_options(ReportSettings, arguments)
    override_dataset = settings.override_dataset
    policy = None if override_dataset is None else history_override_policy(settings)
    panels = PanelParams(settings.growth_weeks, settings.max_clock_skew_seconds)
    at = _evaluation_time(settings.at, settings.history_bucket)
    tuning = _tuning_params(settings)
    forecast_params = _forecast_params(settings)
    _check_local_input(arguments.input)
    session = _session(arguments)
    _check_input(session, arguments.input)
    with _progress(session):
        rows = _spark_call(lambda: load_history(session, arguments.input))
        if _spark_call(lambda: rows.where(rows.snapshotAt <= at).limit(1).count()) == 0:
            raise HistoryUsageError(f"no snapshots in {arguments.input} before {at.isoformat()}")
        usage = _usage_dataset(session, settings.usage_dataset, at, settings.history_bucket)
        overrides = _spark_call(lambda: report_overrides(session, override_dataset, policy))
        if override_dataset is not None:
            print(f"[history] {describe_overrides(overrides)}", file=sys.stderr)
        longest, widest = report_windows(panels, forecast_params, tuning)
        rollup, replay_rollup, window = rollup_and_window(
            session, arguments.input, at, (forecast_params, tuning), (longest, widest)
        )
        files = _spark_call(
            lambda: write_report(
                window.rows,
                at,
                arguments.output_dir,
                forecast_params=forecast_params,
                tuning=tuning,
                max_plotted=settings.max_plotted,
                tombstones=window.tombstones,
                receipts=window.receipts,
                panels=panels,
                usage=usage,
                overrides=overrides.intervals,
                rollup=rollup,
                replay_rollup=replay_rollup,
            )
        )
        window.unpersist()
    print(f"wrote {files.html} and the report's CSV, JSON and Prometheus files beside it")
    return 0


def _usage_dataset(
    session: SparkSession, dataset: str | None, at: datetime | None, bucket_seconds: float
) -> DataFrame | None:
    """The usage dataset ``--usage-dataset`` names (checked), or None: its stored hourly
    rollup (``usage_rollup``) when the analyses' buckets, ending at ``at``, are its hours; else
    every raw row."""
    from spark_history.forecast.spark_mechanism import load_usage
    from spark_history.hourly_rollup import clock_hours
    from spark_history.rollup_store import USAGE, load_rollup

    if dataset is None:
        return None
    _check_local_input(dataset)
    _check_input(session, dataset)
    usage = _spark_call(lambda: load_usage(session, dataset))
    if not clock_hours(at, bucket_seconds):
        return usage
    return _spark_call(lambda: load_rollup(session, dataset, usage, kind=USAGE))


def _forecast_params(settings: AnalysisSettings) -> ForecastParams:
    from spark_history.forecast.trend import ForecastParams

    return ForecastParams(
        lookback_hours=settings.lookback_days * 24.0,
        horizon_hours=settings.horizon_days * 24.0,
        retired_after_hours=settings.retired_after_hours,
        bucket_seconds=settings.history_bucket,
        calibration_volumes=settings.calibration_volumes,
    )


def _tuning_params(settings: ReportSettings) -> TuningParams:
    from spark_history.cluster_replay import ReplayPolicy
    from spark_history.thresholds import DEFAULT_HARD_GRID, DEFAULT_SOFT_GRID, TuningParams

    params = TuningParams(
        soft_grid=settings.soft_grid or DEFAULT_SOFT_GRID,
        hard_grid=settings.hard_grid or DEFAULT_HARD_GRID,
        min_warning_hours=settings.min_warning_hours,
        lookback_hours=settings.replay_days * 24.0,
        policy=ReplayPolicy(
            stale_after_seconds=settings.stale_after_minutes * 60.0,
            on_missing_pause=settings.on_missing == "PAUSE",
            retired_after_seconds=settings.retired_after_hours * 3600.0,
        ),
    )
    if not params.candidates():
        raise HistoryUsageError("no candidate: every soft limit must exceed some hard limit")
    return params


def _evaluation_time(at: datetime | None, bucket_seconds: float) -> datetime:
    """``--at`` (validated with the settings), or the end of the last whole bucket when it was
    not given, said on stderr."""
    if at is not None:
        return at
    at = last_bucket_end(datetime.now(UTC), bucket_seconds)
    print(
        f"[history] --at not given: as of {at.isoformat()}, the end of the last whole "
        f"{bucket_seconds:g} s bucket",
        file=sys.stderr,
    )
    return at


def last_bucket_end(now: datetime, bucket_seconds: float) -> datetime:
    """The newest instant at or before ``now`` that is a whole number of buckets since the
    epoch: with 1 h buckets the last whole hour, so the hourly rollup serves a default run."""
    seconds = now.timestamp()
    return datetime.fromtimestamp(seconds - seconds % bucket_seconds, UTC)


def _check_local_input(uri: str) -> None:
    """A missing local input is one line before Spark starts (a URI is checked after)."""
    from spark_history import storage

    local = storage.local_path(uri)
    if local is not None and not local.exists():
        raise HistoryUsageError(f"input {uri} does not exist")


def _check_input(session: SparkSession, uri: str) -> None:
    from spark_history import storage

    if not _spark_call(lambda: storage.exists(session, uri)):
        raise HistoryUsageError(f"input {uri} does not exist")


def _session(arguments: argparse.Namespace, kafka: bool = False) -> SparkSession:
    from spark_history.connector import ensure_connector_jars
    from spark_history.session import (
        SessionSettings,
        build_session,
        describe_session,
        executor_code_origin,
        under_spark_submit,
    )

    conf = dict(arguments.conf)
    jars = []
    # Under spark-submit (its JVM started this Python, PYSPARK_GATEWAY_PORT is set) the
    # classpath is fixed already: the connector comes from spark-submit's --jars/--packages.
    wants_connector = "spark.jars" not in conf and "spark.jars.packages" not in conf
    if kafka and wants_connector and not under_spark_submit():
        jars = ensure_connector_jars()
    settings = SessionSettings(master=arguments.master, conf=conf, jars=jars)
    session = build_session(settings)
    print(f"[history] {describe_session(session)}", file=sys.stderr, flush=True)
    if not (session.sparkContext.master or "").startswith("local"):
        origin = executor_code_origin(session)
        print(f"[history] executors import spark_history from {origin}", file=sys.stderr)
    return session


def _progress(session: SparkSession) -> StageProgress:
    from spark_history.session import StageProgress

    return StageProgress(session)


_T = TypeVar("_T")


def _spark_call(call: Callable[[], _T]) -> _T:
    """Run ``call``; Spark's complaints about the input become one-line usage errors."""
    from pyspark.errors import AnalysisException

    try:
        return call()
    except AnalysisException as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise HistoryUsageError(f"Spark cannot read the input: {first_line[:300]}") from None
