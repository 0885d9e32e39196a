"""What ``history ingest`` and ``history compact`` do once their options are parsed
(``commands.py``): the snapshot, usage and override topics into their datasets, each
compacted, and the hourly rollup refreshed.

pyspark loads inside the run functions, so ``volume-quota --help`` stays fast.
"""

# ruff: noqa: PLC0415 - imports are lazy on purpose: `volume-quota --help` must not load Spark

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from spark_history.command_runs import (
    _check_input,
    _check_local_input,
    _progress,
    _session,
    _spark_call,
)
from spark_history.errors import HistoryUsageError
from spark_history.settings_flags import load_options
from spark_history.source_settings import CompactSettings, IngestSettings
from volume_quota.config.sources import describe_setting

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark_history.rollup_store import RollupKind


def run_ingest(arguments: argparse.Namespace) -> int:
    from spark_history.ingest import JsonlSource, KafkaSource
    from spark_history.kafka_tls import kafka_tls_options, tls_files
    from spark_history.override_runs import check_override_options, override_source

    settings = load_options(IngestSettings, arguments)
    _check_usage_options(arguments, settings)
    check_override_options(arguments, settings)
    if arguments.source == "jsonl":
        if arguments.input is None:
            raise HistoryUsageError("--source jsonl needs --input URI")
        _check_local_input(arguments.input)
        source: JsonlSource | KafkaSource = JsonlSource(arguments.input)
        usage = None
        if settings.usage_output is not None and settings.usage_input is not None:
            _check_local_input(settings.usage_input)
            usage = JsonlSource(settings.usage_input)
        if settings.override_input is not None:
            _check_local_input(settings.override_input)
        overrides = override_source(settings, None)
        return _ingest(arguments, settings, source, jars=False, usage=usage, overrides=overrides)
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
            overrides=override_source(settings, options),
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
    *,
    jars: bool,
    usage: object = None,
    overrides: object = None,
) -> int:
    from spark_history.ingest import JsonlSource, KafkaSource, run_ingest
    from spark_history.override_runs import ingest_overrides
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
    if isinstance(overrides, JsonlSource | KafkaSource):
        with step("override ingest"), _progress(session):
            print(f"ingested {_spark_call(lambda: ingest_overrides(session, overrides, settings))}")
    if settings.compact_min_files is not None:
        datasets = [arguments.output, usage_output if usage is not None else None]
        datasets.append(settings.override_output if overrides is not None else None)
        for dataset in datasets:
            if dataset is not None:
                _compact(session, dataset, settings.compact_min_files, None)
    from spark_history.rollup_store import SNAPSHOTS, USAGE

    _refresh_rollup(session, arguments.output, SNAPSHOTS)
    if usage is not None:
        assert usage_output is not None
        _refresh_rollup(session, usage_output, USAGE)
    return 0


def _refresh_rollup(session: SparkSession, dataset: str, kind: RollupKind) -> None:
    """Bring the hourly rollup (the snapshots' or the usage's) of the dates the ingest
    touched (and any other stale one) up to date: extended with the files appended to a date,
    recomputed where files were replaced or the date is new."""
    from spark_history.rollup_store import refresh_rollup
    from spark_history.session import step

    with step(kind.name), _progress(session):
        result = _spark_call(lambda: refresh_rollup(session, dataset, kind=kind))
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
