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
from spark_history.source_settings import CompactSettings, IngestSettings
from volume_quota.config.sources import describe_setting

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

    from spark_history.session import StageProgress
    from spark_history.thresholds import TuningParams
    from spark_history.trend_forecast import ForecastParams


def run_ingest(arguments: argparse.Namespace) -> int:
    from spark_history.ingest import JsonlSource, KafkaSource
    from spark_history.kafka_tls import kafka_tls_options, tls_files

    settings = load_options(IngestSettings, arguments)
    _check_usage_options(arguments, settings)
    if arguments.source == "jsonl":
        if arguments.input is None:
            raise HistoryUsageError("--source jsonl needs --input URI")
        _check_local_input(arguments.input)
        source: JsonlSource | KafkaSource = JsonlSource(arguments.input)
        usage = None
        if settings.usage_output is not None and settings.usage_input is not None:
            _check_local_input(settings.usage_input)
            usage = JsonlSource(settings.usage_input)
        return _ingest(arguments, settings, source, jars=False, usage=usage)
    if settings.bootstrap_servers is None:
        raise HistoryUsageError(f"--source kafka needs {describe_setting('bootstrap_servers')}")
    with kafka_tls_options(tls_files(settings)) as tls_options:
        options = {**tls_options, **dict(settings.kafka_option)}
        usage_source = None
        if settings.usage_output is not None:
            usage_source = KafkaSource(settings.bootstrap_servers, settings.usage_topic, options)
        return _ingest(
            arguments,
            settings,
            KafkaSource(settings.bootstrap_servers, settings.topic, options),
            jars=True,
            usage=usage_source,
        )


def _check_usage_options(arguments: argparse.Namespace, settings: IngestSettings) -> None:
    """The usage options fit the run's paths and source (the settings checked the rest)."""
    if settings.usage_output is None:
        return
    if settings.usage_checkpoint == arguments.checkpoint:
        raise HistoryUsageError("--usage-checkpoint must differ from --checkpoint")
    if settings.usage_output == arguments.output:
        raise HistoryUsageError("--usage-output must differ from --output")
    if arguments.source == "jsonl" and settings.usage_input is None:
        raise HistoryUsageError("--source jsonl with --usage-output needs --usage-input URI")
    if arguments.source == "kafka" and settings.usage_input is not None:
        raise HistoryUsageError("--usage-input is for --source jsonl; kafka reads --usage-topic")


def _ingest(
    arguments: argparse.Namespace,
    settings: IngestSettings,
    source: object,
    jars: bool,
    usage: object = None,
) -> int:
    from spark_history.ingest import JsonlSource, KafkaSource, run_ingest
    from spark_history.session import step
    from spark_history.usage_ingest import describe_usage_counts, run_usage_ingest

    assert isinstance(source, JsonlSource | KafkaSource)
    session = _session(arguments, kafka=jars)
    with step("ingest"), _progress(session):
        counts = _spark_call(
            lambda: run_ingest(session, source, arguments.checkpoint, arguments.output)
        )
    print(f"ingested {counts.describe()}")
    usage_output, usage_checkpoint = settings.usage_output, settings.usage_checkpoint
    if isinstance(usage, JsonlSource | KafkaSource):
        assert usage_output is not None  # the settings require them together
        assert usage_checkpoint is not None
        with step("usage ingest"), _progress(session):
            usage_counts = _spark_call(
                lambda: run_usage_ingest(session, usage, usage_checkpoint, usage_output)
            )
        print(f"ingested {describe_usage_counts(usage_counts)}")
    if settings.compact_min_files is not None:
        _compact(session, arguments.output, settings.compact_min_files, None)
        if usage is not None and usage_output is not None:
            _compact(session, usage_output, settings.compact_min_files, None)
    _refresh_rollup(session, arguments.output)
    return 0


def _refresh_rollup(session: SparkSession, dataset: str) -> None:
    """Recompute the hourly rollup of the dates the ingest touched (and any other stale one)."""
    from spark_history.rollup_store import refresh_rollup
    from spark_history.session import step

    with step("hourly rollup"), _progress(session):
        result = _spark_call(lambda: refresh_rollup(session, dataset))
    print(f"{dataset}: {result.describe()}")


def run_compact(arguments: argparse.Namespace) -> int:
    settings = load_options(CompactSettings, arguments)
    _check_local_input(arguments.dataset)
    session = _session(arguments)
    _check_input(session, arguments.dataset)
    _compact(session, arguments.dataset, settings.min_files, settings.max_rows_per_file)
    return 0


def _compact(
    session: SparkSession, dataset: str, min_files: int, max_rows_per_file: int | None
) -> None:
    from spark_history.compaction import DEFAULT_MAX_ROWS_PER_FILE, compact_dataset
    from spark_history.session import step

    rows = max_rows_per_file or DEFAULT_MAX_ROWS_PER_FILE
    with step("compaction"), _progress(session):
        result = _spark_call(lambda: compact_dataset(session, dataset, min_files, rows))
    print(f"compacted {dataset}: {result.describe()}")


def run_forecast(arguments: argparse.Namespace) -> int:
    from spark_history import storage
    from spark_history.forecast import forecast_volumes
    from spark_history.forecast_choice import one_forecast
    from spark_history.forecast_frame import FORECAST_COLUMNS
    from spark_history.history_input import load_history, load_tombstones
    from spark_history.prometheus import textfile
    from spark_history.session import step

    settings = load_options(ForecastSettings, arguments)
    at = _evaluation_time(settings.at)
    params = _forecast_params(settings)
    _check_local_input(arguments.input)
    if settings.usage_dataset is not None:
        _check_local_input(settings.usage_dataset)
    session = _session(arguments)
    _check_input(session, arguments.input)
    with step("forecast"), _progress(session):
        rows = _spark_call(lambda: load_history(session, arguments.input))
        tombstones = _spark_call(lambda: load_tombstones(session, arguments.input))
        rollup = _spark_call(lambda: _rollup_for(session, arguments.input, rows, at, params))
        trend = _spark_call(
            lambda: forecast_volumes(rows, at, params, tombstones, rollup).toPandas()
        )
    if trend.empty:
        raise HistoryUsageError(
            f"no snapshots in {arguments.input} in the "
            f"{settings.lookback_days:g} days before {at.isoformat()}"
        )
    mechanism = None
    if settings.usage_dataset is not None:
        mechanism = _mechanism_forecast(session, settings, rows, at, params)
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
    from spark_history.rollup_store import load_rollup

    if not serves(at, params.lookback_hours, params.bucket_seconds):
        print(
            "[history] hourly rollup not used: --at is not on a whole hour (or the buckets "
            "are not 1 h)",
            file=sys.stderr,
        )
        return None
    return load_rollup(session, path, rows, (at, lookback_hours or params.lookback_hours))


def _mechanism_forecast(
    session: SparkSession,
    settings: ForecastSettings,
    rows: object,
    at: datetime,
    params: ForecastParams,
) -> pd.DataFrame:
    """``history forecast --usage-dataset``: the mechanism forecast's table (and its CSV with
    ``--mechanism-output``)."""
    from pyspark.sql import DataFrame

    from spark_history import storage
    from spark_history.mechanism_frame import MECHANISM_COLUMNS
    from spark_history.session import step
    from spark_history.usage_forecast import load_usage, mechanism_volumes

    assert isinstance(rows, DataFrame)
    assert settings.usage_dataset is not None
    dataset, output = settings.usage_dataset, settings.mechanism_output
    _check_input(session, dataset)
    with step("mechanism forecast"), _progress(session):
        usage = _spark_call(lambda: load_usage(session, dataset))
        table = _spark_call(lambda: mechanism_volumes(usage, rows, at, params).toPandas())
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
    from spark_history.history_input import load_history, load_receipts, load_tombstones
    from spark_history.report import PanelParams, write_report
    from spark_history.report_capacity import BACKTEST_MAX_BUCKETS
    from spark_history.usage_forecast import load_usage
    from spark_history.weekly_growth import WEEK_HOURS

    settings = load_options(ReportSettings, arguments)
    panels = PanelParams(
        growth_weeks=settings.growth_weeks,
        max_clock_skew_seconds=settings.max_clock_skew_seconds,
    )
    at = _evaluation_time(settings.at)
    tuning = _tuning_params(settings)
    forecast_params = _forecast_params(settings)
    _check_local_input(arguments.input)
    session = _session(arguments)
    _check_input(session, arguments.input)
    with _progress(session):
        rows = _spark_call(lambda: load_history(session, arguments.input))
        if _spark_call(lambda: rows.where(rows.snapshotAt <= at).limit(1).count()) == 0:
            raise HistoryUsageError(f"no snapshots in {arguments.input} before {at.isoformat()}")
        usage = None
        dataset = settings.usage_dataset
        if dataset is not None:
            _check_local_input(dataset)
            _check_input(session, dataset)
            usage = _spark_call(lambda: load_usage(session, dataset))
        # The longest window of the analyses that read the rollup.
        longest = max(
            forecast_params.lookback_hours,
            (panels.growth_weeks + 1) * WEEK_HOURS,
            min(tuning.lookback_hours, float(BACKTEST_MAX_BUCKETS)),
        )
        rollup = _spark_call(
            lambda: _rollup_for(
                session, arguments.input, rows, at, forecast_params, lookback_hours=longest
            )
        )
        files = _spark_call(
            lambda: write_report(
                rows,
                at,
                arguments.output_dir,
                forecast_params=forecast_params,
                tuning=tuning,
                max_plotted=settings.max_plotted,
                tombstones=load_tombstones(session, arguments.input),
                receipts=load_receipts(session, arguments.input),
                panels=panels,
                usage=usage,
                rollup=rollup,
            )
        )
    print(f"wrote {files.html} and the report's CSV, JSON and Prometheus files beside it")
    return 0


def _forecast_params(settings: AnalysisSettings) -> ForecastParams:
    from spark_history.trend_forecast import ForecastParams

    return ForecastParams(
        lookback_hours=settings.lookback_days * 24.0,
        horizon_hours=settings.horizon_days * 24.0,
        retired_after_hours=settings.retired_after_hours,
        bucket_seconds=settings.history_bucket,
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


def _evaluation_time(at: datetime | None) -> datetime:
    """``--at`` (validated with the settings), or now when it was not given."""
    return datetime.now(UTC) if at is None else at


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
