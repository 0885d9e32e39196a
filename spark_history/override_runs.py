"""The override topic in ``history ingest`` and ``history report`` (shell): which source, the
checks of the options, whom to believe (read from the decider's own settings), and the
intervals the replay takes.

pyspark and the consumer's core load inside the functions, as in ``command_runs``.
"""

# ruff: noqa: PLC0415 - imports are lazy on purpose: `volume-quota --help` must not load Spark

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from spark_history.analysis_settings import OverrideDatasetSettings
from spark_history.errors import HistoryUsageError
from spark_history.source_settings import IngestSettings
from volume_quota.config.sources import describe_setting

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from consumer.overrides import OverridePolicy
    from spark_history.ingest import JsonlSource, KafkaSource
    from spark_history.override_history import OverrideHistory


def check_override_options(arguments: argparse.Namespace, settings: IngestSettings) -> None:
    """The override options fit the run's paths and source (the settings checked the rest)."""
    if settings.override_output is None:
        return
    others = {arguments.checkpoint, settings.usage_checkpoint}
    if settings.override_checkpoint in others:
        raise HistoryUsageError("--override-checkpoint must differ from the other checkpoints")
    if settings.override_output in {arguments.output, settings.usage_output}:
        raise HistoryUsageError("--override-output must differ from the other outputs")
    if arguments.source == "jsonl" and settings.override_input is None:
        raise HistoryUsageError("--source jsonl with --override-output needs --override-input URI")
    if arguments.source == "kafka" and settings.override_input is not None:
        raise HistoryUsageError(
            "--override-input is for --source jsonl; kafka reads --override-topic"
        )


def override_source(
    settings: IngestSettings, kafka_options: Mapping[str, str] | None
) -> JsonlSource | KafkaSource | None:
    """Where the override records come from (None: not ingested); ``kafka_options``: the
    Kafka source's options, None for JSONL."""
    from spark_history.ingest import JsonlSource, KafkaSource

    if settings.override_output is None:
        return None
    if kafka_options is None:
        assert settings.override_input is not None  # check_override_options
        return JsonlSource(settings.override_input)
    assert settings.bootstrap_servers is not None
    return KafkaSource(settings.bootstrap_servers, settings.override_topic, dict(kafka_options))


def ingest_overrides(
    session: SparkSession, source: JsonlSource | KafkaSource, settings: IngestSettings
) -> str:
    """Append the new override records to ``--override-output``; what was ingested."""
    from spark_history.override_ingest import describe_override_counts, run_override_ingest

    output, checkpoint = settings.override_output, settings.override_checkpoint
    assert output is not None  # the settings require them together
    assert checkpoint is not None
    counts = run_override_ingest(session, source, checkpoint, output)
    return describe_override_counts(counts)


def history_override_policy(settings: OverrideDatasetSettings) -> OverridePolicy:
    """Whom the decider believes about overrides, from the same settings: the mode, the
    operator identities, the allowed ``setAt`` skew and the CAs of ``signature_ca_file``."""
    from cryptography import x509

    from consumer.overrides import OverridePolicy
    from consumer.signatures import SignatureMode

    mode = settings.override_signatures
    ca_file = settings.signature_ca_file
    if mode is SignatureMode.REQUIRE and ca_file is None:
        raise HistoryUsageError(
            f"{describe_setting('override_signatures')}=require needs "
            f"{describe_setting('signature_ca_file')} to check override signatures"
        )
    certificates: list[x509.Certificate] = []
    if mode is not SignatureMode.ACCEPT and ca_file is not None:
        try:
            certificates = x509.load_pem_x509_certificates(ca_file.read_bytes())
        except (OSError, ValueError) as error:
            raise HistoryUsageError(f"cannot read {ca_file}: {error}") from None
    return OverridePolicy(
        mode,
        certificates,
        tuple(settings.override_signers),
        max_set_at_skew_seconds=settings.override_max_clock_skew,
    )


def report_overrides(
    session: SparkSession, dataset: str | None, policy: OverridePolicy | None
) -> OverrideHistory:
    """The overrides in force over the history (none without a ``dataset``), judged with
    ``policy`` (:func:`history_override_policy`, checked before Spark starts)."""
    from spark_history import storage
    from spark_history.override_history import OverrideHistory, fold_overrides
    from spark_history.override_ingest import load_override_records

    if dataset is None or policy is None:
        return OverrideHistory((), ())
    if not storage.exists(session, dataset):
        raise HistoryUsageError(f"input {dataset} does not exist")
    return fold_overrides(load_override_records(session, dataset), policy)


def describe_overrides(history: OverrideHistory) -> str:
    """One line for stderr: how many overrides were in force, how many records refused."""
    reasons = sorted({refusal.reason.value for refusal in history.refused})
    refused = f" ({', '.join(reasons)})" if reasons else ""
    return (
        f"overrides: {len(history.intervals)} in force at some time in the history, "
        f"{len(history.refused)} records refused{refused}"
    )
