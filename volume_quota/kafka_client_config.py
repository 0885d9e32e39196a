"""librdkafka configuration for the publisher's producer and admin client (pure).

The producer is durable and idempotent (``acks=all``, ``enable.idempotence``), talks mutual TLS
(``SSL``) or TLS plus a SCRAM user (``SASL_SSL``, the client certificate optional), never
auto-creates topics (the topic must be created compacted, see ``topic_requirements``), and
gives up on a message after ``delivery_timeout_seconds`` so the publisher can retry with a fresh
snapshot instead of delivering an old one late.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from publisher.topic_requirements import seconds_to_milliseconds
from schemas.decode import MAX_RECORD_BYTES

RECONNECT_BACKOFF_MAX_MS = 5000
"""librdkafka's default is 10 s; 5 s lets the publisher notice a returning cluster sooner."""


ScramMechanism = Literal["SCRAM-SHA-512", "SCRAM-SHA-256"]


@dataclass(frozen=True, slots=True)
class SaslCredentials:
    """A SCRAM user: the broker's principal is ``User:<username>``."""

    username: str
    password: str = field(repr=False)
    mechanism: ScramMechanism = "SCRAM-SHA-512"


@dataclass(frozen=True, slots=True)
class KafkaConnection:
    """Where Kafka is and how this client proves who it is: a client certificate (``SSL``), or
    a SCRAM user over TLS (``SASL_SSL``, when ``sasl`` is set) with or without a certificate.
    The CA file verifies the brokers either way."""

    bootstrap_servers: str
    ca_file: Path
    certificate_file: Path | None = None
    key_file: Path | None = None
    key_password: str | None = field(default=None, repr=False)
    verify_hostname: bool = True
    sasl: SaslCredentials | None = None

    def __post_init__(self) -> None:
        if (self.certificate_file is None) != (self.key_file is None):
            raise ValueError("a client certificate needs its key file, and a key its certificate")
        if self.sasl is None and self.certificate_file is None:
            raise ValueError("SSL authenticates with a client certificate: none given")

    @property
    def security_protocol(self) -> Literal["SSL", "SASL_SSL"]:
        return "SSL" if self.sasl is None else "SASL_SSL"


def _connection_config(connection: KafkaConnection, client_id: str) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": connection.bootstrap_servers,
        "client.id": client_id,
        "security.protocol": connection.security_protocol,
        "ssl.ca.location": str(connection.ca_file),
        "ssl.endpoint.identification.algorithm": "https" if connection.verify_hostname else "none",
        "reconnect.backoff.max.ms": RECONNECT_BACKOFF_MAX_MS,
    }
    if connection.certificate_file is not None and connection.key_file is not None:
        config["ssl.certificate.location"] = str(connection.certificate_file)
        config["ssl.key.location"] = str(connection.key_file)
        if connection.key_password is not None:
            config["ssl.key.password"] = connection.key_password
    if connection.sasl is not None:
        config["sasl.mechanisms"] = connection.sasl.mechanism
        config["sasl.username"] = connection.sasl.username
        config["sasl.password"] = connection.sasl.password
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
        # librdkafka's default (1,000,000) is below the largest document a reader accepts.
        "message.max.bytes": MAX_RECORD_BYTES,
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
        "security_protocol": connection.security_protocol,
        "ssl_cafile": str(connection.ca_file),
        "ssl_check_hostname": connection.verify_hostname,
        "request_timeout_ms": 10000,
    }
    if connection.certificate_file is not None and connection.key_file is not None:
        config["ssl_certfile"] = str(connection.certificate_file)
        config["ssl_keyfile"] = str(connection.key_file)
        if connection.key_password is not None:
            config["ssl_password"] = connection.key_password
    if connection.sasl is not None:
        config["sasl_mechanism"] = connection.sasl.mechanism
        config["sasl_plain_username"] = connection.sasl.username
        config["sasl_plain_password"] = connection.sasl.password
    return config
