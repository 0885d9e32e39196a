"""The settings, one pydantic-settings model per concern; commands compose them (``commands``).

Every default is written once, here (the decision policy's come from ``consumer.policy``), and
every field carries its help text and metavar: the command-line flags, their help and the
environment variable names are generated from these fields (``flags``). Validators check syntax
and ranges only; reading files and certificates is the start-up check's job (``startup_checks``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import NoDecode, SettingsConfigDict

from consumer.policy import DecisionPolicy
from publisher.topic_requirements import (
    DEFAULT_MIN_COMPACTION_LAG_SECONDS,
    DEFAULT_SEGMENT_SECONDS,
    DEFAULT_TOPIC,
    DEFAULT_TOPIC_RECHECK_SECONDS,
)
from publisher.volumes import VolumeLimitOverride
from schemas.decision import OnMissing
from schemas.override import DEFAULT_OVERRIDE_TOPIC
from schemas.snapshot import MAX_BROKER_ID, Limit, LimitType, MinFreePercentageLimit
from volume_quota.config.credentials import credential_problems, raise_problems
from volume_quota.config.sources import ENV_PREFIX, SettingsBase, describe_setting
from volume_quota.durations import parse_duration
from volume_quota.limit_parsing import limit_from_config, volume_limit_overrides_from_config

POLICY_DEFAULTS = DecisionPolicy()


def _duration(value: Any) -> Any:
    return parse_duration(value) if isinstance(value, str) else value


def _comma_separated(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return [value]
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


Seconds = Annotated[float, BeforeValidator(_duration), Field(gt=0, allow_inf_nan=False)]
SecondsOrZero = Annotated[float, BeforeValidator(_duration), Field(ge=0, allow_inf_nan=False)]
ConfiguredLimit = Annotated[Limit, BeforeValidator(limit_from_config)]


def help_text(text: str, metavar: str = "") -> dict[str, Any]:
    """A field's description and metavar, the source of its flag's help."""
    return {"description": text, "json_schema_extra": {"metavar": metavar}}


class ConnectionSettings(SettingsBase):
    """Reaching Kafka: bootstrap servers, mutual TLS or SASL/SCRAM over TLS, the topic, this
    broker's id, logging."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    broker_id: int | None = Field(
        None,
        ge=0,
        le=MAX_BROKER_ID,
        **help_text(
            "this broker's id, the message key (default: node.id of --server-properties, "
            "else of meta.properties in the log dirs)",
            "N",
        ),
    )
    bootstrap_servers: str | None = Field(
        None, **help_text("Kafka bootstrap servers (the control plane listener)", "HOST:PORT,...")
    )
    security_protocol: Annotated[Literal["SSL", "SASL_SSL"], BeforeValidator(_upper)] = Field(
        "SSL",
        **help_text(
            "SSL: mutual TLS, the client certificate is the identity; SASL_SSL: TLS and a "
            "SCRAM user (sasl_username), the client certificate optional",
            "SSL|SASL_SSL",
        ),
    )
    tls_ca_file: Path | None = Field(
        None, **help_text("PEM CA bundle that signed the brokers' certificates", "FILE")
    )
    tls_cert_file: Path | None = Field(
        None,
        **help_text(
            "PEM client certificate (mutual TLS; with SASL_SSL optional, it signs snapshots)",
            "FILE",
        ),
    )
    tls_key_file: Path | None = Field(
        None, **help_text("PEM private key of the client certificate", "FILE")
    )
    tls_key_password: SecretStr | None = Field(
        None, **help_text("password of an encrypted private key", "PASSWORD")
    )
    tls_verify_hostname: bool = Field(True, **help_text("check the broker certificate's host name"))
    sasl_mechanism: Annotated[
        Literal["SCRAM-SHA-512", "SCRAM-SHA-256"], BeforeValidator(_upper)
    ] = Field(
        "SCRAM-SHA-512",
        **help_text(
            "with SASL_SSL: the SCRAM mechanism of the user's credential",
            "SCRAM-SHA-512|SCRAM-SHA-256",
        ),
    )
    sasl_username: str | None = Field(
        None,
        min_length=1,
        **help_text("with SASL_SSL: the SCRAM user name (the principal is User:NAME)", "NAME"),
    )
    sasl_password: SecretStr | None = Field(
        None, **help_text("with SASL_SSL: the SCRAM password (or sasl_password_file)", "PASSWORD")
    )
    sasl_password_file: Path | None = Field(
        None,
        **help_text(
            "with SASL_SSL: read the SCRAM password from this file, e.g. a mounted Kubernetes "
            "secret (trailing line breaks ignored; read at start)",
            "FILE",
        ),
    )
    topic: str = Field(
        DEFAULT_TOPIC,
        min_length=1,
        max_length=249,
        pattern=r"^[A-Za-z0-9._-]+$",
        **help_text("the compacted snapshot topic", "NAME"),
    )
    override_topic: str = Field(
        DEFAULT_OVERRIDE_TOPIC,
        min_length=1,
        max_length=249,
        pattern=r"^[A-Za-z0-9._-]+$",
        **help_text("the compacted topic of operator overrides (volume-quota override)", "NAME"),
    )
    delivery_timeout: Seconds = Field(
        15.0, **help_text("give up on one message after this long", "DURATION")
    )
    consumer_group: str = Field(
        "volume-quota-consumer",
        min_length=1,
        max_length=249,
        **help_text(
            "group.id of the snapshot reader (never joined nor committed; needs READ)", "NAME"
        ),
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", **help_text("debug, info, warning or error", "LEVEL")
    )

    @field_validator("bootstrap_servers")
    @classmethod
    def _bootstrap_servers_listed(cls, servers: str | None) -> str | None:
        if servers is None:
            return None
        addresses = [part.strip() for part in servers.split(",") if part.strip()]
        for address in addresses:
            host, separator, port = address.rpartition(":")
            if not separator or not host or not port.isdigit():
                raise ValueError(f"{address!r} is not HOST:PORT")
        if not addresses:
            raise ValueError("names no HOST:PORT")
        return ",".join(addresses)

    @model_validator(mode="after")
    def _credentials_consistent(self) -> ConnectionSettings:
        raise_problems(type(self).__name__, credential_problems(self))
        return self


class PublishingSettings(SettingsBase):
    """What the publisher measures, the limits it announces, and how often it publishes."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    source: Literal["volumes", "admin"] = Field(
        "volumes",
        **help_text(
            "volumes: measure this broker's log dirs on this host (a sidecar); admin: measure "
            "every live broker through the Admin API (DescribeLogDirs), one process per cluster",
            "volumes|admin",
        ),
    )
    survey_interval: Seconds = Field(
        5.0, **help_text("with --source admin: ask every broker this often", "DURATION")
    )
    log_dirs: Annotated[list[Path], NoDecode, BeforeValidator(_comma_separated)] = Field(
        default_factory=list,
        **help_text("Kafka log dirs to measure (added to those of --server-properties)", "DIR,..."),
    )
    server_properties: Path | None = Field(
        None,
        **help_text("read log.dirs, log.dir, metadata.log.dir and node.id from it", "FILE"),
    )
    soft_limit: ConfiguredLimit = Field(
        MinFreePercentageLimit(type=LimitType.MIN_FREE_PERCENTAGE, level=15.0),
        **help_text("broker-wide throttle limit", "TYPE:LEVEL"),
    )
    hard_limit: ConfiguredLimit = Field(
        MinFreePercentageLimit(type=LimitType.MIN_FREE_PERCENTAGE, level=5.0),
        **help_text("broker-wide pause limit", "TYPE:LEVEL"),
    )
    volume_limits: Annotated[
        list[VolumeLimitOverride], NoDecode, BeforeValidator(volume_limit_overrides_from_config)
    ] = Field(
        default_factory=list,
        **help_text(
            "limits for one volume (named by log dir, mount point or device); repeatable",
            "VOLUME:soft=TYPE:LEVEL[,hard=TYPE:LEVEL]",
        ),
    )
    sample_interval: Seconds = Field(1.0, **help_text("measure the volumes this often", "DURATION"))
    wait_for_log_dirs: SecondsOrZero = Field(
        0.0,
        **help_text(
            "at start, wait up to this long for the log dirs (and, without a broker id, their "
            "meta.properties) to appear: a sidecar may start before its broker formats storage",
            "DURATION",
        ),
    )
    heartbeat_interval: Seconds = Field(
        10.0, **help_text("publish at least this often", "DURATION")
    )
    change_threshold_percent: float = Field(
        1.0,
        ge=0,
        le=100,
        allow_inf_nan=False,
        **help_text(
            "publish at once when free space moves by more than this %% of capacity", "PERCENT"
        ),
    )
    readiness_max_age: Seconds = Field(
        30.0,
        **help_text("/readyz fails when no snapshot was delivered for this long", "DURATION"),
    )
    shutdown_timeout: Seconds = Field(
        3.0, **help_text("on SIGTERM, flush for at most this long", "DURATION")
    )
    topic_partitions: int = Field(
        1, ge=1, **help_text("partitions of a topic the publisher creates", "N")
    )
    topic_replication_factor: int = Field(
        -1,
        ge=-1,
        **help_text("replication factor of a created topic; -1 uses the cluster default", "N"),
    )
    topic_min_compaction_lag: Seconds = Field(
        DEFAULT_MIN_COMPACTION_LAG_SECONDS,
        **help_text("min.compaction.lag.ms of a created topic", "DURATION"),
    )
    topic_segment_interval: Seconds = Field(
        DEFAULT_SEGMENT_SECONDS, **help_text("segment.ms of a created topic", "DURATION")
    )
    create_topic: bool = Field(
        True, **help_text("create the topic when it is missing, at start and at every recheck")
    )
    topic_recheck_interval: Seconds = Field(
        DEFAULT_TOPIC_RECHECK_SECONDS,
        **help_text(
            "while running, check the topic this often: a deleted topic is recreated, a "
            "cleanup.policy changed from compact is reported (error log, metric, /readyz)",
            "DURATION",
        ),
    )

    @model_validator(mode="after")
    def _intervals_consistent(self) -> PublishingSettings:
        if self.heartbeat_interval < self.sample_interval:
            raise ValueError(
                f"{describe_setting('heartbeat_interval')} must be at least "
                f"{describe_setting('sample_interval')}"
            )
        if self.readiness_max_age <= self.heartbeat_interval:
            raise ValueError(
                f"{describe_setting('readiness_max_age')} must be longer than "
                f"{describe_setting('heartbeat_interval')}"
            )
        return self


class PolicySettings(SettingsBase):
    """The decision rule's knobs: shared by ``decide``, ``sidecar``, ``status`` and ``evaluate``."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    stale_after: Seconds = Field(
        POLICY_DEFAULTS.stale_after_seconds,
        **help_text("a snapshot older than this no longer vouches for its broker", "DURATION"),
    )
    max_clock_skew: SecondsOrZero = Field(
        POLICY_DEFAULTS.max_clock_skew_seconds,
        **help_text("a snapshot dated further than this in the future is not trusted", "DURATION"),
    )
    on_missing: Annotated[OnMissing, BeforeValidator(_upper)] = Field(
        POLICY_DEFAULTS.on_missing,
        **help_text(
            "when a live broker's state is unknown: PAUSE producers (the fail-safe) or OPEN",
            "PAUSE|OPEN",
        ),
    )

    def decision_policy(self, **overrides: Any) -> DecisionPolicy:
        return DecisionPolicy(
            stale_after_seconds=self.stale_after,
            max_clock_skew_seconds=self.max_clock_skew,
            on_missing=self.on_missing,
            **overrides,
        )


class DecidingSettings(PolicySettings):
    """The decider: where the decision goes, how long it is valid, how often brokers are asked."""

    decision_file: Path | None = Field(
        None,
        **help_text(
            "write the cluster decision here (atomically) for the broker's quota callback", "FILE"
        ),
    )
    live_broker_refresh_interval: Seconds = Field(
        5.0, **help_text("ask the Admin client for the live brokers this often", "DURATION")
    )
    decision_valid_for: Seconds = Field(
        30.0,
        **help_text(
            "validUntil of each decision written; the callback applies on-missing after it",
            "DURATION",
        ),
    )

    @field_validator("decision_file")
    @classmethod
    def _decision_file_absolute(cls, path: Path | None) -> Path | None:
        if path is not None and not path.is_absolute():
            raise ValueError(f"{path} is not an absolute path")
        return path


class HttpSettings(SettingsBase):
    """Where /metrics, /healthz and /readyz are served."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    metrics_host: str = Field(
        "0.0.0.0",  # all addresses: kubelet probes and Prometheus reach the pod's address
        **help_text("bind address of /metrics, /healthz, /readyz", "ADDRESS"),
    )
    metrics_port: int = Field(
        9464,
        ge=0,
        le=65535,
        **help_text("port of /metrics, /healthz, /readyz; 0 picks one", "PORT"),
    )
