"""librdkafka configuration for the publisher's producer and admin client (pure).

The producer is durable and idempotent (``acks=all``, ``enable.idempotence``), talks mutual TLS,
never auto-creates topics (the topic must be created compacted, see ``topic_requirements``), and
gives up on a message after ``delivery_timeout_seconds`` so the publisher can retry with a fresh
snapshot instead of delivering an old one late.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from publisher.topic_requirements import seconds_to_milliseconds

RECONNECT_BACKOFF_MAX_MS = 5000
"""librdkafka's default is 10 s; 5 s lets the publisher notice a returning cluster sooner."""


@dataclass(frozen=True, slots=True)
class KafkaConnection:
    bootstrap_servers: str
    ca_file: Path
    certificate_file: Path
    key_file: Path
    key_password: str | None = None
    verify_hostname: bool = True


def _connection_config(connection: KafkaConnection, client_id: str) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": connection.bootstrap_servers,
        "client.id": client_id,
        "security.protocol": "SSL",
        "ssl.ca.location": str(connection.ca_file),
        "ssl.certificate.location": str(connection.certificate_file),
        "ssl.key.location": str(connection.key_file),
        "ssl.endpoint.identification.algorithm": "https" if connection.verify_hostname else "none",
        "reconnect.backoff.max.ms": RECONNECT_BACKOFF_MAX_MS,
    }
    if connection.key_password is not None:
        config["ssl.key.password"] = connection.key_password
    return config


def producer_config(
    connection: KafkaConnection, broker_id: int | str, delivery_timeout_seconds: float
) -> dict[str, Any]:
    timeout_ms = max(1, seconds_to_milliseconds(delivery_timeout_seconds))
    return {
        **_connection_config(connection, f"volume-quota-publisher-{broker_id}"),
        "acks": "all",
        "enable.idempotence": True,
        "allow.auto.create.topics": False,
        "message.timeout.ms": timeout_ms,
        "request.timeout.ms": min(30000, timeout_ms),
        "linger.ms": 0,
        # Every consumer reads every snapshot, so the topic's egress grows with the square of
        # the cluster: zstd makes an 8-volume snapshot 2.7x smaller in the log and on the wire
        # (benchmarks/fleet_load.py fanout; docs/reliability.md).
        "compression.type": "zstd",
    }


def admin_config(connection: KafkaConnection, broker_id: int | str) -> dict[str, Any]:
    return _connection_config(connection, f"volume-quota-admin-{broker_id}")


def consumer_config(
    connection: KafkaConnection, broker_id: int | None, group: str
) -> dict[str, Any]:
    """The snapshot reader: assigns every partition itself, never commits (see consumer/)."""
    suffix = "" if broker_id is None else f"-{broker_id}"
    return {
        **_connection_config(connection, f"volume-quota-consumer{suffix}"),
        "group.id": group,
    }


def kafka_python_admin_config(connection: KafkaConnection, client_id: str) -> dict[str, Any]:
    """kafka-python ``KafkaAdminClient`` settings for the same connection (DescribeLogDirs,
    which librdkafka does not offer)."""
    config: dict[str, Any] = {
        "bootstrap_servers": connection.bootstrap_servers.split(","),
        "client_id": client_id,
        "security_protocol": "SSL",
        "ssl_cafile": str(connection.ca_file),
        "ssl_certfile": str(connection.certificate_file),
        "ssl_keyfile": str(connection.key_file),
        "ssl_check_hostname": connection.verify_hostname,
        "request_timeout_ms": 10000,
    }
    if connection.key_password is not None:
        config["ssl_password"] = connection.key_password
    return config
