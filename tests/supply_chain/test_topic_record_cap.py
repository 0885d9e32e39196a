"""Every volume-quota topic refuses a record above its cap and accepts the largest legitimate
one: a 1024-volume snapshot (the schema's maximum) at the consumers' 1 MiB document limit,
signed like a publisher signs it, on a real mTLS cluster (local_cluster). The topics are
created the way local_cluster creates them; the other recipes must give the same cap
(test_topic_cap_recipes.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from consumer.signatures import SignatureOutcome, SignatureTrust, check_signature
from local_cluster import (
    DECISIONS_TOPIC,
    SNAPSHOT_TOPIC,
    TOPIC_CONFIGS,
    TOPIC_MAX_MESSAGE_BYTES,
    LocalKafkaCluster,
    create_volume_quota_topics,
    topic_config,
)
from publisher.signing import SnapshotSigner
from schemas.decode import MAX_MESSAGE_BYTES, decode_snapshot
from schemas.snapshot import MAX_VOLUMES_PER_BROKER, VolumeSnapshot, snapshot_key

pytestmark = pytest.mark.real_broker

BROKER_ID = 7
# Far above the cap, for the client and for the brokers' default (message.max.bytes, which
# clusters often raise for their own traffic): only the topic's own cap can refuse a record.
LARGE_BYTES = 8 * 1024 * 1024
UNCAPPED_TOPIC = "uncapped-control"
EARLIER_LAG_MS = "60000"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(
        tmp_path_factory.mktemp("kafka-cap"),
        broker_count=1,
        broker_properties={"message.max.bytes": str(LARGE_BYTES)},
    ) as cluster:
        admin = AdminClient(cluster.client_config("admin"))
        earlier = NewTopic(
            DECISIONS_TOPIC,
            1,
            1,
            config={"cleanup.policy": "compact", "min.compaction.lag.ms": EARLIER_LAG_MS},
        )
        admin.create_topics([earlier], request_timeout=30)[DECISIONS_TOPIC].result(timeout=30)
        assert topic_config(cluster, DECISIONS_TOPIC)["max.message.bytes"] == str(LARGE_BYTES)
        create_volume_quota_topics(cluster)
        yield cluster


def largest_snapshot() -> bytes:
    """1024 volumes whose names fill the document to exactly the readers' limit."""

    def document(name_length: int, last_extra: int) -> bytes:
        volumes = [
            {
                "volumeName": f"/dev/v{index:04d}-".ljust(
                    name_length + (last_extra if index == MAX_VOLUMES_PER_BROKER - 1 else 0), "x"
                ),
                "path": f"/var/lib/kafka/data-{index:04d}",
                "capacity": 2**63 - 1,
                "consumed": 2**62,
                "softLimit": {"type": "MinFreeBytes", "level": 2**62},
                "hardLimit": {"type": "ConsumedSpace", "level": 2**63 - 1},
            }
            for index in range(MAX_VOLUMES_PER_BROKER)
        ]
        return VolumeSnapshot.model_validate(
            {
                "schemaVersion": 1,
                "brokerId": BROKER_ID,
                "snapshotAt": "2026-11-26T12:00:00.123456789+00:00",
                "softLimit": {"type": "MinFreePercentage", "level": 12.5},
                "hardLimit": {"type": "MinFreePercentage", "level": 5.25},
                "volumes": volumes,
            }
        ).to_json_bytes()

    prefix = len("/dev/v0000-")
    base = len(document(prefix, 0))
    name_length = prefix + (MAX_MESSAGE_BYTES - base) // MAX_VOLUMES_PER_BROKER
    short = MAX_MESSAGE_BYTES - len(document(name_length, 0))
    value = document(name_length, short)
    assert len(value) == MAX_MESSAGE_BYTES
    assert isinstance(decode_snapshot(value, snapshot_key(BROKER_ID)), VolumeSnapshot)
    assert not isinstance(decode_snapshot(value + b" ", snapshot_key(BROKER_ID)), VolumeSnapshot)
    return value


def signer(cluster: LocalKafkaCluster) -> SnapshotSigner:
    files = cluster.identity_files("publisher")
    key = serialization.load_pem_private_key(Path(files.key).read_bytes(), password=None)
    certificate = x509.load_pem_x509_certificate(Path(files.cert).read_bytes())
    return SnapshotSigner(key, certificate.public_bytes(serialization.Encoding.DER))


def produce(
    cluster: LocalKafkaCluster,
    topic: str,
    key: bytes,
    value: bytes,
    headers: list[tuple[str, bytes]] | None = None,
) -> Message:
    """One uncompressed record, as admin; the delivery report (its error is the broker's)."""
    config: dict[str, Any] = {
        **cluster.client_config("admin"),
        "compression.type": "none",
        "message.max.bytes": LARGE_BYTES,
        "linger.ms": 0,
        "acks": "all",
        "message.send.max.retries": 0,
    }
    reports: list[Message] = []
    record_headers: list[tuple[str, str | bytes | None]] = list(headers or [])
    producer = Producer(config)
    producer.produce(
        topic, value, key, headers=record_headers, on_delivery=lambda _e, m: reports.append(m)
    )
    assert producer.flush(60) == 0
    assert len(reports) == 1
    return reports[0]


def read_back(cluster: LocalKafkaCluster, topic: str, offset: int) -> Message:
    consumer = Consumer(
        {
            **cluster.client_config("admin"),
            "group.id": "cap-test",
            "fetch.max.bytes": LARGE_BYTES,
            "receive.message.max.bytes": LARGE_BYTES + 1024 * 1024,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        message = consumer.poll(30)
        assert message is not None
        assert message.error() is None
        return message
    finally:
        consumer.close()


@pytest.mark.parametrize("topic", sorted(TOPIC_CONFIGS))
def test_each_topic_is_created_with_the_cap(cluster: LocalKafkaCluster, topic: str) -> None:
    config = topic_config(cluster, topic)
    assert config["max.message.bytes"] == str(TOPIC_MAX_MESSAGE_BYTES)
    assert config["cleanup.policy"] == "compact"


def test_the_cap_is_the_readers_limit_plus_the_record_margin() -> None:
    assert TOPIC_MAX_MESSAGE_BYTES == MAX_MESSAGE_BYTES + 32 * 1024


def test_the_largest_signed_snapshot_is_accepted_and_verifies(cluster: LocalKafkaCluster) -> None:
    value = largest_snapshot()
    key = snapshot_key(BROKER_ID)
    headers = signer(cluster).headers(key, value)
    report = produce(cluster, SNAPSHOT_TOPIC, key, value, headers)
    assert report.error() is None, report.error()
    offset = report.offset()
    assert offset is not None
    record = read_back(cluster, SNAPSHOT_TOPIC, offset)
    received_value, received_headers = record.value(), record.headers()
    assert received_value == value
    assert isinstance(received_headers, list)
    snapshot = decode_snapshot(received_value, record.key())
    assert isinstance(snapshot, VolumeSnapshot)
    assert len(snapshot.volumes) == MAX_VOLUMES_PER_BROKER
    ca = x509.load_pem_x509_certificate(Path(cluster.pki.ca_cert).read_bytes())
    publisher = x509.load_pem_x509_certificate(
        Path(cluster.identity_files("publisher").cert).read_bytes()
    )
    trust = SignatureTrust([ca], cluster_signers=[publisher.subject.rfc4514_string()])
    signed: list[tuple[str, bytes | None]] = [
        (name, content) for name, content in received_headers if not isinstance(content, str)
    ]
    check = check_signature(key, value, signed, trust, datetime.now(UTC))
    assert check.outcome is SignatureOutcome.VALID, check
    overhead = len(key) + sum(len(name) + len(content) for name, content in headers)
    assert MAX_MESSAGE_BYTES + overhead + 200 < TOPIC_MAX_MESSAGE_BYTES


@pytest.mark.parametrize("topic", sorted(TOPIC_CONFIGS))
def test_a_record_above_the_cap_is_refused_by_the_broker(
    cluster: LocalKafkaCluster, topic: str
) -> None:
    report = produce(cluster, topic, b"7", os.urandom(TOPIC_MAX_MESSAGE_BYTES))
    error = report.error()
    assert error is not None
    # MESSAGE_TOO_LARGE (10), RecordTooLargeException in the Java client: the broker's answer,
    # reported on delivery (a record the client itself refused would fail in produce()).
    assert error.code() == KafkaError.MSG_SIZE_TOO_LARGE, error


def test_the_same_record_goes_to_a_topic_without_the_cap(cluster: LocalKafkaCluster) -> None:
    """The refusal above is the topic's cap, not a client or broker-wide limit: a topic created
    without it takes the brokers' message.max.bytes."""
    admin = AdminClient(cluster.client_config("admin"))
    new = NewTopic(UNCAPPED_TOPIC, 1, 1, config={"cleanup.policy": "compact"})
    admin.create_topics([new], request_timeout=30)[UNCAPPED_TOPIC].result(timeout=30)
    report = produce(cluster, UNCAPPED_TOPIC, b"7", os.urandom(TOPIC_MAX_MESSAGE_BYTES))
    assert report.error() is None, report.error()


def test_a_topic_created_before_without_the_cap_gets_it(cluster: LocalKafkaCluster) -> None:
    """The fixture created the decisions topic as a cluster agent would, before the others."""
    config = topic_config(cluster, DECISIONS_TOPIC)
    assert config["max.message.bytes"] == str(TOPIC_MAX_MESSAGE_BYTES)
    assert config["min.compaction.lag.ms"] == EARLIER_LAG_MS  # its creator's settings stay
