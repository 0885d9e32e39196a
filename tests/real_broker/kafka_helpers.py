"""Small, bounded client operations for the real-broker tests.

Every helper takes a timeout and returns what happened instead of raising, so a test asserts
on the real outcome (delivered, refused by TLS, denied by ACL) and can never hang.
"""

from __future__ import annotations

import socket
import ssl
import struct
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported, no __all__
    AdminClient,
    NewTopic,
)

from local_cluster import LocalKafkaCluster
from local_cluster.acls import USAGE_TOPIC
from local_cluster.probe import CLIENT_LOG
from tests.support import HOST_DISK_LIMITS


def volume_quota_command(
    cluster: LocalKafkaCluster, identity: str, command: str, *extra: str
) -> list[str]:
    """``python -m volume_quota <command> ...extra``, connected to the cluster as ``identity``
    over its mTLS listener."""
    files = cluster.identity_files(identity)
    return [
        sys.executable,
        "-m",
        "volume_quota",
        command,
        f"--bootstrap-servers={cluster.bootstrap_servers}",
        f"--tls-ca-file={files.ca}",
        f"--tls-cert-file={files.cert}",
        f"--tls-key-file={files.key}",
        "--no-tls-verify-hostname",
        *extra,
    ]


def sidecar_settings(
    cluster: LocalKafkaCluster, broker: int, usage_interval_seconds: float
) -> dict[str, object]:
    """A sidecar's settings for ``broker`` (the publisher identity, metrics on a free port),
    surveying topic usage every ``usage_interval_seconds``, with limits far under any free space
    (``HOST_DISK_LIMITS``)."""
    identity = cluster.identity_files("publisher")
    return {
        **HOST_DISK_LIMITS,
        "bootstrap_servers": cluster.bootstrap_servers,
        "tls_ca_file": identity.ca,
        "tls_cert_file": identity.cert,
        "tls_key_file": identity.key,
        "server_properties": cluster.broker_files(broker).server_properties,
        "metrics_host": "127.0.0.1",
        "metrics_port": 0,
        "usage_interval": f"{usage_interval_seconds:g}s",
    }


DEFAULT_TIMEOUT_S = 30.0
# Clients that must fail give up after this long; long enough for a working client on a
# loaded 2-core machine to connect, short enough to keep the suite fast.
REFUSED_CLIENT_TIMEOUT_S = 5.0


@dataclass
class ProduceOutcome:
    """Per-record delivery errors (None = delivered) and the client-level errors seen."""

    delivery_errors: list[KafkaError | None]
    client_errors: list[KafkaError] = field(default_factory=list)

    @property
    def all_delivered(self) -> bool:
        return len(self.delivery_errors) > 0 and all(e is None for e in self.delivery_errors)


def quiet(config: Mapping[str, Any]) -> dict[str, Any]:
    """Route librdkafka's own log lines to Python logging instead of stderr."""
    return {**config, "logger": CLIENT_LOG}


def produce(
    config: Mapping[str, Any],
    topic: str,
    records: Sequence[tuple[bytes, bytes]],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    extra: Mapping[str, Any] | None = None,
) -> ProduceOutcome:
    """Produce ``(key, value)`` records and wait (bounded) for every delivery report."""
    outcome = ProduceOutcome(delivery_errors=[])
    producer = Producer(
        {
            **quiet(config),
            "message.timeout.ms": int(timeout_s * 1000),
            "acks": "all",
            "error_cb": outcome.client_errors.append,
            **(extra or {}),
        }
    )

    def on_delivery(error: KafkaError | None, _message: Any) -> None:
        outcome.delivery_errors.append(error)

    for key, value in records:
        producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
    remaining = producer.flush(timeout_s + 5.0)
    if remaining:
        raise AssertionError(f"{remaining} record(s) got no delivery report at all")
    return outcome


@dataclass
class ReadOutcome:
    """Records read (key, value) and the errors the consumer reported."""

    records: list[tuple[bytes | None, bytes | None]]
    errors: list[KafkaError]
    last_offset: int = -1

    @property
    def values(self) -> list[bytes | None]:
        return [value for _key, value in self.records]


def read_from_start(
    config: Mapping[str, Any],
    topic: str,
    partitions: int,
    *,
    done: Callable[[ReadOutcome], bool],
    group_id: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ReadOutcome:
    """Read ``topic`` from offset 0 with manual assignment until ``done(outcome)`` holds or
    ``timeout_s`` passed. No offsets are committed."""
    consumer = Consumer(
        {
            **quiet(config),
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    outcome = ReadOutcome(records=[], errors=[])
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout_s
        while not done(outcome) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                outcome.errors.append(error)
                continue
            outcome.records.append((message.key(), message.value()))
            outcome.last_offset = max(outcome.last_offset, message.offset() or 0)
    finally:
        consumer.close()
    return outcome


def read_whole_partition(
    config: Mapping[str, Any],
    topic: str,
    *,
    group_id: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ReadOutcome:
    """Read partition 0 of ``topic`` from the start up to its current end (high watermark);
    raise if the end is not reached in time, so "record absent" can be asserted safely."""
    consumer = Consumer({**quiet(config), "group.id": group_id})
    try:
        _low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=timeout_s, cached=False
        )
    finally:
        consumer.close()
    outcome = read_from_start(
        config,
        topic,
        partitions=1,
        done=lambda so_far: so_far.last_offset >= high - 1,
        group_id=group_id,
        timeout_s=timeout_s,
    )
    if outcome.last_offset < high - 1:
        raise AssertionError(f"read {topic} up to offset {outcome.last_offset}, end is {high}")
    return outcome


def create_topic(
    config: Mapping[str, Any],
    topic: str,
    *,
    partitions: int = 1,
    replication: int = 1,
    topic_config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Create a topic and wait until the controller has accepted it."""
    admin = AdminClient(quiet(config))
    futures = admin.create_topics(
        [NewTopic(topic, partitions, replication, config=dict(topic_config or {}))],
        request_timeout=timeout_s,
    )
    futures[topic].result(timeout=timeout_s)


def wait_for_topic_leaders(
    config: Mapping[str, Any], topic: str, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[int, int]:
    """Partition -> leader broker id, once every partition has a leader."""
    admin = AdminClient(quiet(config))
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            metadata = admin.list_topics(topic, timeout=5.0)
            partitions = metadata.topics[topic].partitions
            leaders = {p: info.leader for p, info in partitions.items()}
            if leaders and all(leader >= 0 for leader in leaders.values()):
                return leaders
        except KafkaException:
            pass
        if time.monotonic() >= deadline:
            raise AssertionError(f"topic {topic} has no leader for every partition")
        time.sleep(0.5)


def topic_metadata_error(
    config: Mapping[str, Any], topic: str, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> KafkaError | None:
    """The error the brokers attach to ``topic`` in a metadata response for this client
    (e.g. TOPIC_AUTHORIZATION_FAILED), or None if the client may see the topic."""
    admin = AdminClient(quiet(config))
    metadata = admin.list_topics(topic, timeout=timeout_s)
    error: KafkaError | None = metadata.topics[topic].error
    return error


def in_sync_replicas(config: Mapping[str, Any], topic: str, partition: int) -> list[int]:
    """Current ISR of one partition (empty if metadata is unavailable)."""
    admin = AdminClient(quiet(config))
    try:
        metadata = admin.list_topics(topic, timeout=5.0)
    except KafkaException:
        return []
    return list(metadata.topics[topic].partitions[partition].isrs)


def kafka_api_versions_over_tls(
    port: int,
    ca: Path,
    cert: Path | None = None,
    key: Path | None = None,
    *,
    timeout_s: float = 10.0,
) -> bool:
    """Send a raw ApiVersions request over TLS; True only if a Kafka response comes back.

    Independent of librdkafka: it shows what the listener itself accepts. With TLS 1.3 a
    server rejects a missing or untrusted client certificate after the client's side of the
    handshake, so the rejection surfaces on the first read (alert or closed connection).
    """
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None and key is not None:
        context.load_cert_chain(str(cert), str(key))
    correlation_id = 4242
    client_id = b"tls-probe"
    header = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    request = struct.pack(">i", len(header)) + header
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as raw,
            context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.sendall(request)
            response = _read_exactly(tls, 8)
    except (ssl.SSLError, ConnectionError, TimeoutError, OSError):
        return False
    if response is None:
        return False
    _size, received_correlation_id = struct.unpack(">ii", response)
    return bool(received_correlation_id == correlation_id)


def _read_exactly(sock: ssl.SSLSocket, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


UsageRecord = tuple[bytes | None, bytes, list[tuple[str, bytes]]]


def usage_records(cluster: LocalKafkaCluster, group: str) -> list[UsageRecord]:
    """Every record of the usage topic so far (key, value, headers), read as the admin."""
    consumer = Consumer(
        {**quiet(cluster.client_config("admin")), "group.id": group, "enable.auto.commit": False}
    )
    try:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(USAGE_TOPIC, 0), timeout=10)
        except KafkaException:  # the topic does not exist (yet)
            return []
        consumer.assign([TopicPartition(USAGE_TOPIC, 0, low)])
        records: list[UsageRecord] = []
        deadline = time.monotonic() + 30
        while len(records) < high - low and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            value = message.value()
            assert value is not None
            raw = message.headers() or []
            pairs = list(raw.items()) if isinstance(raw, dict) else raw
            headers = [
                (name, header.encode() if isinstance(header, str) else header or b"")
                for name, header in pairs
            ]
            records.append((message.key(), value, headers))
        return records
    finally:
        consumer.close()
