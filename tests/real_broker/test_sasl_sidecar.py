"""The sidecar speaking SASL_SSL (SCRAM over TLS) with no client certificate, against a real
1-node cluster with local_cluster's optional SASL listener: it creates the topic, publishes,
reads every snapshot back and writes the decision as the SCRAM user ``User:sidecar-scram``;
a wrong password ends it with one clear line and exit status 2. A certificate next to the
SCRAM user still signs snapshots, and the Admin API survey (kafka-python) speaks SCRAM too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclOperation,
    AdminClient,
    ConfigResource,
    ResourceType,
)
from cryptography import x509
from kafka.admin import KafkaAdminClient

from consumer.signatures import SignatureOutcome, SignatureTrust, check_signature
from local_cluster import (
    SNAPSHOT_TOPIC,
    LocalClusterError,
    LocalKafkaCluster,
    add_scram_user,
    allow,
    scram_client_config,
    sidecar_acl_bindings,
    subject_of,
)
from publisher.log_dir_survey import LogDirSurvey
from schemas import VolumeSnapshot, decode_snapshot
from schemas.decision import QuotaState
from tests.e2e.cluster_harness import Sidecar, read_decision
from tests.support import wait_for
from volume_quota.config import load_settings
from volume_quota.kafka_client_config import kafka_python_admin_config

from .kafka_helpers import REFUSED_CLIENT_TIMEOUT_S, produce, quiet

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]

SIDECAR_USER = "sidecar-scram"
SURVEY_USER = "survey-scram"
PASSWORD = "correct horse battery staple"
GROUP = "volume-quota-consumer"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    base_dir = tmp_path_factory.mktemp("kafka-sasl")
    with LocalKafkaCluster(base_dir, broker_count=1, sasl_listener=True) as started:
        # The sidecar's ACLs for its SCRAM principal; no certificate has CN=sidecar-scram.
        add_scram_user(
            started, SIDECAR_USER, PASSWORD, bindings=sidecar_acl_bindings(f"User:{SIDECAR_USER}")
        )
        add_scram_user(
            started,
            SURVEY_USER,
            PASSWORD,
            bindings=allow(
                ResourceType.BROKER, "kafka-cluster", f"User:{SURVEY_USER}", AclOperation.DESCRIBE
            ),
        )
        yield started


def scram_environment(
    cluster: LocalKafkaCluster, log_dir: Path, decision_file: Path, **settings: str
) -> dict[str, str]:
    """A sidecar for broker 0 on the SASL listener with the CA file only (no certificate);
    limits no volume reaches, so the decision is OPEN once broker 0's snapshot is read."""
    base = {key: value for key, value in os.environ.items() if not key.startswith("VOLUME_QUOTA_")}
    return {
        **base,
        "VOLUME_QUOTA_BROKER_ID": "0",
        "VOLUME_QUOTA_LOG_DIRS": str(log_dir),
        "VOLUME_QUOTA_BOOTSTRAP_SERVERS": cluster.sasl_bootstrap_servers,
        "VOLUME_QUOTA_SECURITY_PROTOCOL": "SASL_SSL",
        "VOLUME_QUOTA_TLS_CA_FILE": str(cluster.pki.ca_cert),
        "VOLUME_QUOTA_SASL_USERNAME": SIDECAR_USER,
        "VOLUME_QUOTA_SOFT_LIMIT": "MinFreeBytes:2",
        "VOLUME_QUOTA_HARD_LIMIT": "MinFreeBytes:1",
        "VOLUME_QUOTA_DECISION_FILE": str(decision_file),
        "VOLUME_QUOTA_HEARTBEAT_INTERVAL": "2s",
        "VOLUME_QUOTA_READINESS_MAX_AGE": "10s",
        "VOLUME_QUOTA_LIVE_BROKER_REFRESH_INTERVAL": "1s",
        "VOLUME_QUOTA_METRICS_HOST": "127.0.0.1",
        "VOLUME_QUOTA_METRICS_PORT": "0",
        **{f"VOLUME_QUOTA_{name.upper()}": value for name, value in settings.items()},
    }


Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def read_records(config: Mapping[str, Any], key: bytes) -> list[Record]:
    """Every message of ``key`` in the snapshot topic, with its headers, read to the end."""
    consumer = Consumer({**quiet(config), "group.id": GROUP, "enable.auto.commit": False})
    records: list[Record] = []
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(SNAPSHOT_TOPIC, 0), 30)
        consumer.assign([TopicPartition(SNAPSHOT_TOPIC, 0, 0)])
        last = -1
        deadline = time.monotonic() + 30
        while last < high - 1 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            last = message.offset() or 0
            raw = message.headers() or []
            assert isinstance(raw, list)  # confluent-kafka gives a list of (name, bytes)
            headers = [(name, c.encode() if isinstance(c, str) else c) for name, c in raw]
            if message.key() == key:
                records.append((message.key(), message.value(), headers))
        assert last >= high - 1, f"read up to offset {last} of {high}"
    finally:
        consumer.close()
    return records


def snapshot_of(record: Record) -> VolumeSnapshot:
    key, value, _headers = record
    assert value is not None
    decoded = decode_snapshot(value, key)
    assert isinstance(decoded, VolumeSnapshot), decoded
    return decoded


def json_events(log: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.splitlines() if line.startswith("{")]


def test_a_sidecar_with_only_a_scram_user_publishes_reads_back_and_decides(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    password_file = tmp_path / "sasl-password"
    password_file.write_text(PASSWORD + "\n")  # as a Kubernetes secret volume holds it
    log_dir, decision_file = tmp_path / "data", tmp_path / "decision.json"
    log_dir.mkdir()
    environment = scram_environment(
        cluster, log_dir, decision_file, sasl_password_file=str(password_file)
    )
    assert "VOLUME_QUOTA_TLS_CERT_FILE" not in environment
    assert "VOLUME_QUOTA_TLS_KEY_FILE" not in environment
    sidecar = Sidecar(0, decision_file, environment, tmp_path / "sidecar.log")
    sidecar.start()
    try:
        wait_for(
            lambda: (
                (decision := read_decision(decision_file)) is not None
                and decision.state is QuotaState.OPEN
            ),
            120,
            "an OPEN decision from broker 0's snapshot, read back over SASL",
        )
        assert sidecar.process is not None
        sidecar.process.send_signal(signal.SIGTERM)
        status = sidecar.process.wait(timeout=30)
    finally:
        sidecar.stop()
    log = (tmp_path / "sidecar.log").read_text()
    assert status == 0, log
    decision = read_decision(decision_file)
    assert decision is not None
    assert decision.state is QuotaState.OPEN
    assert decision.unknown_brokers == []
    assert not decision.caused_by_missing_data

    reader = scram_client_config(cluster, SIDECAR_USER, PASSWORD)
    records = read_records(reader, b"0")
    assert records, "no snapshot of broker 0 in the topic"
    statvfs = os.statvfs(log_dir)
    snapshot = snapshot_of(records[0])
    assert snapshot.broker_id == 0
    assert snapshot.volumes[0].capacity == statvfs.f_blocks * statvfs.f_frsize
    # No certificate, nothing to sign with: published unsigned, as documented.
    trust = SignatureTrust([x509.load_pem_x509_certificate(cluster.pki.ca_cert.read_bytes())])
    checks = {
        check_signature(key, value, headers, trust, datetime.now(UTC)).outcome
        for key, value, headers in records
    }
    assert checks == {SignatureOutcome.UNSIGNED}

    started = next(event for event in json_events(log) if event["event"] == "publisher started")
    assert started["security_protocol"] == "SASL_SSL"
    assert started["snapshots_signed"] is False
    assert "Traceback" not in log

    # The topic was created by the SCRAM principal, compacted.
    admin = AdminClient(cluster.client_config("admin"))
    resource = ConfigResource(ResourceType.TOPIC, SNAPSHOT_TOPIC)
    config = admin.describe_configs([resource])[resource].result(timeout=30)
    assert config["cleanup.policy"].value == "compact"


def test_a_wrong_password_ends_the_sidecar_with_one_clear_line(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    environment = scram_environment(
        cluster, log_dir, tmp_path / "decision.json", sasl_password="not the password"
    )
    result = subprocess.run(
        [sys.executable, "-m", "volume_quota", "sidecar"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("volume-quota: error:")]
    assert errors == [lines[-1]], result.stderr
    assert lines[-1].startswith(
        "volume-quota: error: Kafka refused this client's credentials (check the SASL user "
        "name, password and mechanism): "
    )
    assert "SASL authentication error" in lines[-1]
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in lines[-1]
    assert "not the password" not in result.stderr
    assert "Traceback" not in result.stderr
    assert all(line.startswith("{") for line in lines[:-1]), result.stderr  # JSON log lines


def test_a_certificate_next_to_the_scram_user_still_signs(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    identity = cluster.identity_files("publisher")
    environment = {
        **scram_environment(cluster, tmp_path, tmp_path / "unused.json", sasl_password=PASSWORD),
        "VOLUME_QUOTA_BROKER_ID": "5",
        "VOLUME_QUOTA_SASL_MECHANISM": "SCRAM-SHA-256",
        "VOLUME_QUOTA_TLS_CERT_FILE": str(identity.cert),
        "VOLUME_QUOTA_TLS_KEY_FILE": str(identity.key),
    }
    published = subprocess.run(
        [sys.executable, "-m", "volume_quota", "publish", "--once"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert published.returncode == 0, published.stderr
    records = read_records(scram_client_config(cluster, SIDECAR_USER, PASSWORD), b"5")
    assert len(records) == 1
    assert snapshot_of(records[0]).broker_id == 5
    trust = SignatureTrust(
        [x509.load_pem_x509_certificate(cluster.pki.ca_cert.read_bytes())],
        cluster_signers=[subject_of("publisher")],
    )
    key, value, headers = records[0]
    check = check_signature(key, value, headers, trust, datetime.now(UTC))
    assert check.outcome is SignatureOutcome.VALID, check.detail


def test_the_admin_api_survey_speaks_scram_too(cluster: LocalKafkaCluster) -> None:
    settings = load_settings(
        {
            "source": "admin",
            "bootstrap_servers": cluster.sasl_bootstrap_servers,
            "security_protocol": "SASL_SSL",
            "tls_ca_file": str(cluster.pki.ca_cert),
            "sasl_username": SURVEY_USER,
            "sasl_password": PASSWORD,
        }
    )
    connection = settings.required_kafka_connection()
    survey = LogDirSurvey(
        lambda: KafkaAdminClient(**kafka_python_admin_config(connection, "test-survey"))
    )
    try:
        measured = survey.measure()
    finally:
        survey.close()
    assert list(measured) == [0]
    (data_dir,) = cluster.broker_files(0).data_dirs
    statvfs = os.statvfs(data_dir)
    assert [volume.capacity_bytes for volume in measured[0]] == [
        statvfs.f_blocks * statvfs.f_frsize
    ]


def test_a_scram_user_gets_what_its_acls_allow_and_no_more(cluster: LocalKafkaCluster) -> None:
    add_scram_user(cluster, "nobody-scram", "pw")  # no ACL at all
    denied = produce(
        scram_client_config(cluster, "nobody-scram", "pw"),
        SNAPSHOT_TOPIC,
        [(b"9", b"{}")],
        timeout_s=REFUSED_CLIENT_TIMEOUT_S,
    )
    assert [error.code() if error else None for error in denied.delivery_errors] == [
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    ]
    for reserved in ("admin", "publisher", "broker-0", "rogue-publisher"):
        with pytest.raises(LocalClusterError, match="reserved"):
            add_scram_user(cluster, reserved, "pw")
