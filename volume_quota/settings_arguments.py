"""Command-line flags for the publisher's settings, and turning given flags into overrides.

Flags are read as text and validated with the other sources by ``volume_quota.settings``, so a bad
flag value gets the same one-line error as a bad environment variable or config file entry.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from volume_quota.settings import CONFIG_FILE_ENV, ENV_PREFIX, flag_for

CONNECTION_SETTINGS = (
    "broker_id",
    "bootstrap_servers",
    "tls_ca_file",
    "tls_cert_file",
    "tls_key_file",
    "topic",
    "delivery_timeout",
    "log_level",
)

PUBLISH_SETTINGS = (
    "log_dirs",
    "server_properties",
    "soft_limit",
    "hard_limit",
    "volume_limits",
    "sample_interval",
    "heartbeat_interval",
    "change_threshold_percent",
    "readiness_max_age",
    "shutdown_timeout",
    "metrics_host",
    "metrics_port",
    "topic_partitions",
    "topic_replication_factor",
    "topic_min_compaction_lag",
    "topic_segment_interval",
)

BOOLEAN_SETTINGS = ("tls_verify_hostname", "create_topic")

DECIDE_SETTINGS = (
    "decision_file",
    "stale_after",
    "max_clock_skew",
    "on_missing",
    "live_broker_refresh_interval",
    "decision_valid_for",
    "consumer_group",
)

SERVER_SETTINGS = ("metrics_host", "metrics_port")

HELP: dict[str, tuple[str, str]] = {
    "broker_id": ("N", "this broker's id, the message key (default: node.id in server.properties)"),
    "bootstrap_servers": ("HOST:PORT,...", "Kafka bootstrap servers (the control plane listener)"),
    "tls_ca_file": ("FILE", "PEM CA bundle that signed the brokers' certificates"),
    "tls_cert_file": ("FILE", "PEM client certificate of the publisher (mutual TLS)"),
    "tls_key_file": ("FILE", "PEM private key of the client certificate"),
    "topic": ("NAME", "the compacted snapshot topic (default: __volume_quota_snapshots)"),
    "delivery_timeout": ("DURATION", "give up on one message after this long (default: 15s)"),
    "log_level": ("LEVEL", "debug, info, warning or error (default: info)"),
    "log_dirs": ("DIR,...", "Kafka log dirs to measure (added to those of --server-properties)"),
    "server_properties": ("FILE", "read log.dirs, log.dir, metadata.log.dir and node.id from it"),
    "soft_limit": ("TYPE:LEVEL", "broker-wide throttle limit (default: MinFreePercentage:15)"),
    "hard_limit": ("TYPE:LEVEL", "broker-wide pause limit (default: MinFreePercentage:5)"),
    "volume_limits": (
        "VOLUME:soft=TYPE:LEVEL[,hard=TYPE:LEVEL]",
        "limits for one volume (named by log dir, mount point or device); repeatable",
    ),
    "sample_interval": ("DURATION", "measure the volumes this often (default: 1s)"),
    "heartbeat_interval": ("DURATION", "publish at least this often (default: 10s)"),
    "change_threshold_percent": (
        "PERCENT",
        "publish at once when free space moves by more than this %% of capacity (default: 1)",
    ),
    "readiness_max_age": (
        "DURATION",
        "/readyz fails when no snapshot was delivered for this long (default: 30s)",
    ),
    "shutdown_timeout": ("DURATION", "on SIGTERM, flush for at most this long (default: 3s)"),
    "metrics_host": ("ADDRESS", "bind address of /metrics, /healthz, /readyz (default: 0.0.0.0)"),
    "metrics_port": ("PORT", "port of /metrics, /healthz, /readyz; 0 picks one (default: 9464)"),
    "topic_partitions": ("N", "partitions of a topic the publisher creates (default: 1)"),
    "topic_replication_factor": (
        "N",
        "replication factor of a created topic; -1 uses the cluster default (default: -1)",
    ),
    "topic_min_compaction_lag": (
        "DURATION",
        "min.compaction.lag.ms of a created topic (default: 24h)",
    ),
    "topic_segment_interval": ("DURATION", "segment.ms of a created topic (default: 1h)"),
    "decision_file": (
        "FILE",
        "write the cluster decision here (atomically) for the broker's quota callback",
    ),
    "stale_after": ("DURATION", "a snapshot older than this no longer vouches (default: 30s)"),
    "max_clock_skew": (
        "DURATION",
        "a snapshot dated further than this in the future is not trusted (default: 5s)",
    ),
    "on_missing": (
        "PAUSE|OPEN",
        "when a live broker's state is unknown: PAUSE producers (default) or OPEN (ignore it)",
    ),
    "live_broker_refresh_interval": (
        "DURATION",
        "ask the Admin client for the live brokers this often (default: 5s)",
    ),
    "decision_valid_for": (
        "DURATION",
        "validUntil of each decision written; the callback applies on-missing after it "
        "(default: 30s)",
    ),
    "consumer_group": (
        "NAME",
        "group.id of the consumer (never joined nor committed; needs READ) "
        "(default: volume-quota-consumer)",
    ),
    "tls_verify_hostname": ("", "check the broker certificate's host name (default: on)"),
    "create_topic": ("", "create the topic when it is missing (default: on)"),
}


def add_setting_flags(parser: argparse.ArgumentParser, settings: Iterable[str]) -> None:
    for setting in settings:
        metavar, help_text = HELP[setting]
        env = f"{ENV_PREFIX}{setting.upper()}"
        if setting in BOOLEAN_SETTINGS:
            parser.add_argument(
                flag_for(setting),
                dest=setting,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=f"{help_text}; env {env}",
            )
        elif setting == "volume_limits":
            parser.add_argument(
                flag_for(setting),
                dest=setting,
                action="append",
                metavar=metavar,
                help=f"{help_text}; env {env} (';'-separated)",
            )
        else:
            parser.add_argument(
                flag_for(setting), dest=setting, metavar=metavar, help=f"{help_text}; env {env}"
            )


def add_config_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"TOML file of settings (keys as in docs/publisher.md); env {CONFIG_FILE_ENV}. "
        "Flags override the environment, which overrides the file.",
    )


def config_file(arguments: argparse.Namespace) -> Path | None:
    path = arguments.config or os.environ.get(CONFIG_FILE_ENV)
    return Path(path) if path else None


def given_settings(arguments: argparse.Namespace, settings: Iterable[str]) -> dict[str, Any]:
    """The settings given as flags (a flag left out leaves the other sources in charge)."""
    values = {}
    for setting in settings:
        value = getattr(arguments, setting, None)
        if value is not None:
            values[setting] = value
    return values
