"""Settings of ``history ingest`` and ``history compact``: the Kafka source (the connection
settings every command shares, plus what only Spark's Java Kafka client reads), the topic usage
ingest, and compaction. ``commands.py`` makes the flags; ``command_runs.py`` reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, SecretStr, model_validator
from pydantic_settings import NoDecode

from spark_history.history_settings import HistoryConcern
from volume_quota.config.concerns import ConnectionSettings, help_text
from volume_quota.config.credentials import SASL_SETTINGS, raise_problems
from volume_quota.config.sources import describe_setting
from volume_quota.config.usage import UsageTopicSettings

KAFKA_UNUSED = frozenset(
    {
        "broker_id",
        "security_protocol",
        "sasl_mechanism",
        *SASL_SETTINGS,
        "delivery_timeout",
        "consumer_group",
        "log_level",
    }
)
"""Connection settings the history job does not read (it reaches Kafka with mutual TLS): no
flags."""

KAFKA_SECRETS = frozenset({"tls_keystore_password", "tls_truststore_password"})
"""Read from the environment or the config file only, like tls_key_password."""


def _key_values(value: Any) -> Any:
    """KEY=VALUE texts (repeated flags, a TOML array; the environment holds one) as pairs."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        return value
    pairs = []
    for item in items:
        if not isinstance(item, str):
            pairs.append(item)
            continue
        key, separator, text = item.partition("=")
        if not separator or not key.strip():
            raise ValueError(f"{item!r} is not KEY=VALUE")
        pairs.append((key.strip(), text))
    return pairs


class JavaClientSettings(HistoryConcern):
    """What only Spark's Java Kafka client reads: JKS/PKCS12 stores and the source's options."""

    tls_keystore_file: Path | None = Field(
        None,
        **help_text(
            "JKS or PKCS12 keystore instead of --tls-cert-file/--tls-key-file (its password: "
            "VOLUME_QUOTA_TLS_KEYSTORE_PASSWORD; the key's: VOLUME_QUOTA_TLS_KEY_PASSWORD)",
            "FILE",
        ),
    )
    tls_keystore_password: SecretStr | None = Field(
        None, **help_text("password of --tls-keystore-file", "PASSWORD")
    )
    tls_truststore_file: Path | None = Field(
        None,
        **help_text(
            "JKS or PKCS12 truststore instead of --tls-ca-file (its password: "
            "VOLUME_QUOTA_TLS_TRUSTSTORE_PASSWORD)",
            "FILE",
        ),
    )
    tls_truststore_password: SecretStr | None = Field(
        None, **help_text("password of --tls-truststore-file", "PASSWORD")
    )
    kafka_option: Annotated[list[tuple[str, str]], NoDecode, BeforeValidator(_key_values)] = Field(
        default_factory=list,
        **help_text(
            "passed to Spark's Kafka source as is, e.g. maxOffsetsPerTrigger=100000; repeatable",
            "KEY=VALUE",
        ),
    )


class KafkaSourceSettings(ConnectionSettings, JavaClientSettings):
    """The snapshot topic through Spark's Kafka source: the shared connection settings (PEM
    files), or the Java client's own stores, and any option of the source."""

    # Replaces the shared check of the same name: the Java client also takes stores.
    @model_validator(mode="after")
    def _credentials_consistent(self) -> KafkaSourceSettings:
        problems: list[tuple[str, str]] = []
        if self.security_protocol != "SSL":
            problems.append(
                ("security_protocol", "the history job reaches Kafka with mutual TLS (SSL) only")
            )
        problems += [
            (name, "does not apply: the history job reaches Kafka with mutual TLS")
            for name in SASL_SETTINGS
            if getattr(self, name) is not None
        ]
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            missing = "tls_key_file" if self.tls_key_file is None else "tls_cert_file"
            present = "tls_cert_file" if missing == "tls_key_file" else "tls_key_file"
            problems.append((missing, f"is required with {describe_setting(present)}"))
        if self.tls_keystore_file is not None and self.tls_cert_file is not None:
            problems.append(("tls_keystore_file", "replaces tls_cert_file/tls_key_file: not both"))
        if self.tls_truststore_file is not None and self.tls_ca_file is not None:
            problems.append(("tls_truststore_file", "replaces tls_ca_file: not both"))
        raise_problems(type(self).__name__, problems)
        return self


class UsageIngestSettings(UsageTopicSettings, HistoryConcern):
    """The sidecars' topic usage documents, ingested into a second dataset beside the
    snapshots (``--usage-output`` turns it on)."""

    usage_output: str | None = Field(
        None,
        min_length=1,
        **help_text(
            "also ingest the sidecars' usage documents into this Parquet dataset (default: "
            "usage is not ingested)",
            "URI",
        ),
    )
    usage_checkpoint: str | None = Field(
        None,
        min_length=1,
        **help_text(
            "where the usage ingest keeps its progress (required with --usage-output; not the "
            "snapshot checkpoint)",
            "URI",
        ),
    )
    usage_input: str | None = Field(
        None,
        min_length=1,
        **help_text("jsonl: a JSONL file or a directory of them holding usage documents", "URI"),
    )

    @model_validator(mode="after")
    def _usage_options_together(self) -> UsageIngestSettings:
        problems: list[tuple[str, str]] = []
        if self.usage_output is None:
            problems += [
                (name, f"needs --usage-output URI ({describe_setting('usage_output')})")
                for name in ("usage_checkpoint", "usage_input")
                if getattr(self, name) is not None
            ]
        elif self.usage_checkpoint is None:
            problems.append(("usage_checkpoint", "--usage-output needs --usage-checkpoint URI"))
        raise_problems(type(self).__name__, problems)
        return self


class OverrideIngestSettings(HistoryConcern):
    """The operator's override topic, ingested into a third dataset beside the snapshots
    (``--override-output`` turns it on): the limit replay follows the overrides in force."""

    override_output: str | None = Field(
        None,
        min_length=1,
        **help_text(
            "also ingest the override topic's records into this Parquet dataset, for "
            "'history report --override-dataset' (default: overrides are not ingested)",
            "URI",
        ),
    )
    override_checkpoint: str | None = Field(
        None,
        min_length=1,
        **help_text(
            "where the override ingest keeps its progress (required with --override-output; "
            "not another ingest's checkpoint)",
            "URI",
        ),
    )
    override_input: str | None = Field(
        None,
        min_length=1,
        **help_text(
            "jsonl: a JSONL file or a directory of them holding override records (their "
            "format: docs/history.md)",
            "URI",
        ),
    )

    @model_validator(mode="after")
    def _override_options_together(self) -> OverrideIngestSettings:
        problems: list[tuple[str, str]] = []
        if self.override_output is None:
            problems += [
                (name, f"needs --override-output URI ({describe_setting('override_output')})")
                for name in ("override_checkpoint", "override_input")
                if getattr(self, name) is not None
            ]
        elif self.override_checkpoint is None:
            problems.append(
                ("override_checkpoint", "--override-output needs --override-checkpoint URI")
            )
        raise_problems(type(self).__name__, problems)
        return self


class IngestSettings(KafkaSourceSettings, UsageIngestSettings, OverrideIngestSettings):
    """``history ingest``."""

    compact_min_files: int | None = Field(
        None,
        ge=2,
        **help_text(
            "after the run, compact every date partition holding at least N files (N >= 2; "
            "default: no compaction); see 'history compact'",
            "N",
        ),
    )


class CompactSettings(HistoryConcern):
    """``history compact``."""

    min_files: int = Field(
        2, ge=2, **help_text("compact the partitions holding at least N files (N >= 2)", "N")
    )
    max_rows_per_file: int = Field(
        5_000_000,
        ge=1,
        **help_text("split a partition's rows into files of at most ROWS rows", "ROWS"),
    )
