"""On a real cluster: someone who got WRITE on the override topic cannot open a paused cluster.

The attacker writes with the raw Kafka producer, as an attacker would: an unsigned override
claiming to be the operator's, one signed with its own certificate (issued by the cluster CA,
but no operator identity), and a copy of the operator's own earlier record written again after
the operator cleared it. The deciders require operator signatures: all three are refused, never
take effect, and ``volume-quota status`` lists them with their reasons, while the operator's
override, written by ``volume-quota override``, takes effect with the signer as its author.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclOperation,
    AdminClient,
    NewTopic,
    ResourceType,
)
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from consumer.snapshot_topic_reader import header_pairs
from local_cluster import (
    SNAPSHOT_TOPIC,
    LocalKafkaCluster,
    allow,
    grant_volume_quota_acls,
    issue_client,
    subject_of,
    topic_config,
)
from local_cluster.acls import create_acls
from publisher.signing import SnapshotSigner
from schemas.override import DEFAULT_OVERRIDE_TOPIC, OVERRIDE_KEY
from tests.snapshot_factory import snapshot_line, volume
from tests.support import wait_for
from volume_quota.config import load_settings
from volume_quota.daemons.decider import DecideDaemon

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]

SKEW = 10.0
"""override_max_clock_skew of the deciders here: short, so that a copy written again a few
seconds later is already too far from its setAt."""
OPERATOR_SETTINGS = {
    "override_signatures": "require",
    "override_signers": subject_of("operator"),  # CN=operator,O=...: the whole subject
    "override_max_clock_skew": f"{SKEW:g}s",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("attacks"), broker_count=1) as started:
        grant_volume_quota_acls(started, consumer_group="volume-quota-consumer")
        started.pki.issue("operator")
        admin = AdminClient(started.client_config("admin"))
        topic = NewTopic(SNAPSHOT_TOPIC, 1, 1, config={"cleanup.policy": "compact"})
        admin.create_topics([topic])[SNAPSHOT_TOPIC].result(30)
        operator = allow(
            ResourceType.TOPIC,
            DEFAULT_OVERRIDE_TOPIC,
            "User:operator",
            AclOperation.CREATE,
            AclOperation.WRITE,
            AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS,
        )
        create_acls(started, operator)
        # The attacker: a principal that was granted (or stole) WRITE and READ on the topic.
        issue_client(
            started,
            "mallory",
            topics_write=[DEFAULT_OVERRIDE_TOPIC],
            topics_read=[DEFAULT_OVERRIDE_TOPIC],
            groups_read=["mallory"],
        )
        # Broker 0 is under its hard limit: the rule says PAUSE, the attacker wants OPEN.
        producer = Producer(started.client_config("publisher"))
        value = snapshot_line(broker_id=0, volumes=[volume("v", 1000, 990)], at=datetime.now(UTC))
        producer.produce(SNAPSHOT_TOPIC, key=b"0", value=value)
        assert producer.flush(30) == 0
        yield started


def consumer_flags(cluster: LocalKafkaCluster) -> dict[str, str]:
    files = cluster.identity_files("consumer")
    return {
        "bootstrap_servers": cluster.bootstrap_servers,
        "tls_ca_file": str(files.ca),
        "tls_cert_file": str(files.cert),
        "tls_key_file": str(files.key),
        "stale_after": "1h",  # the one snapshot above stays fresh for the test
        **OPERATOR_SETTINGS,
    }


@pytest.fixture
def decider(cluster: LocalKafkaCluster, tmp_path: Path) -> Iterator[tuple[DecideDaemon, Path]]:
    path = tmp_path / "decision.json"
    settings = load_settings(
        {
            **consumer_flags(cluster),
            "tls_verify_hostname": False,
            "decision_file": str(path),
            "live_broker_refresh_interval": "1s",
        }
    )
    daemon = DecideDaemon(settings, serve_http=False)
    stop = threading.Event()
    thread = threading.Thread(target=daemon.run, args=(stop,), daemon=True)
    thread.start()
    yield daemon, path
    stop.set()
    thread.join(timeout=15)


def decision(path: Path) -> tuple[str, str, str]:
    """(state, first reason's kind, its detail); empty while the file is missing."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return ("", "", "")
    first = (document.get("reasons") or [{}])[0]
    return (document["state"], first.get("kind", ""), first.get("detail", ""))


def is_(path: Path, state: str, kind: str) -> bool:
    return decision(path)[:2] == (state, kind)


def run_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "volume_quota", *arguments],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def operator_override(cluster: LocalKafkaCluster, *arguments: str) -> None:
    files = cluster.identity_files("operator")
    result = run_cli(
        "override",
        *arguments,
        f"--bootstrap-servers={cluster.bootstrap_servers}",
        f"--tls-ca-file={files.ca}",
        f"--tls-cert-file={files.cert}",
        f"--tls-key-file={files.key}",
        "--no-tls-verify-hostname",
        "--delivery-timeout=10s",
    )
    assert result.returncode == 0, result.stderr


def forged_override(state: str, set_by: str, set_at: datetime) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 1,
            "state": state,
            "reason": "nothing to see here",
            "setBy": set_by,
            "setAt": set_at.isoformat(),
            "expiresAt": (set_at + timedelta(hours=1)).isoformat(),
        }
    ).encode()


Headers = Sequence[tuple[str, str | bytes | None]]


def mallory_signer(cluster: LocalKafkaCluster) -> SnapshotSigner:
    files = cluster.identity_files("mallory")
    key = serialization.load_pem_private_key(files.key.read_bytes(), password=None)
    certificate = x509.load_pem_x509_certificate(files.cert.read_bytes())
    return SnapshotSigner(key, certificate.public_bytes(serialization.Encoding.DER))


def write_raw(cluster: LocalKafkaCluster, value: bytes | None, headers: Headers) -> None:
    producer = Producer(cluster.client_config("mallory"))
    producer.produce(DEFAULT_OVERRIDE_TOPIC, key=OVERRIDE_KEY, value=value, headers=list(headers))
    assert producer.flush(30) == 0


def first_record(cluster: LocalKafkaCluster) -> tuple[bytes, Headers]:
    """The operator's record as the attacker reads it from the topic: value and headers."""
    consumer = Consumer({**cluster.client_config("mallory"), "group.id": "mallory"})
    try:
        consumer.assign([TopicPartition(DEFAULT_OVERRIDE_TOPIC, 0, OFFSET_BEGINNING)])
        message = consumer.poll(30)
        assert message is not None
        assert message.error() is None
        value = message.value()
        assert value is not None
        return value, header_pairs(message.headers())
    finally:
        consumer.close()


def test_forged_and_replayed_overrides_are_refused_and_shown_the_operators_takes_effect(
    cluster: LocalKafkaCluster, decider: tuple[DecideDaemon, Path]
) -> None:
    daemon, path = decider
    wait_for(lambda: is_(path, "PAUSE", "limit"), 60, "PAUSE by the rule")

    operator_override(cluster, "--state=OPEN", "--for=10m", "--reason=false alarm")
    set_at = time.time()
    wait_for(lambda: is_(path, "OPEN", "override"), 15, "the operator's override in force")
    assert f"forced OPEN by {subject_of('operator')} until" in decision(path)[2]
    assert topic_config(cluster, DEFAULT_OVERRIDE_TOPIC)["message.timestamp.type"] == (
        "LogAppendTime"
    )
    operator_override(cluster, "--clear")
    wait_for(lambda: is_(path, "PAUSE", "limit"), 15, "the operator's override cleared")

    replayed_value, replayed_headers = first_record(cluster)
    now = datetime.now(UTC)
    write_raw(cluster, forged_override("OPEN", "operator", now), [])
    signed = forged_override("OPEN", "operator", now)
    write_raw(cluster, signed, mallory_signer(cluster).headers(OVERRIDE_KEY, signed))
    time.sleep(max(0.0, set_at + SKEW + 2 - time.time()))
    write_raw(cluster, replayed_value, replayed_headers)

    refused = "volume_quota_override_records_refused_total"

    def refused_count(reason: str) -> float:
        return daemon.registry.get_sample_value(refused, {"reason": reason}) or 0.0

    wait_for(lambda: refused_count("set_at_skew") == 1, 15, "the copy refused")
    assert (refused_count("unsigned"), refused_count("not_an_operator")) == (1, 1)
    for _ in range(3):  # none took effect, nor does it later
        assert is_(path, "PAUSE", "limit"), decision(path)
        time.sleep(1)
    assert daemon.registry.get_sample_value("volume_quota_override_active", {"state": "OPEN"}) == 0

    flags = [
        f"--{name.replace('_', '-')}={value}" for name, value in consumer_flags(cluster).items()
    ]
    status = run_cli("status", "--json", "--no-tls-verify-hostname", "--timeout=60", *flags)
    assert status.returncode == 0, status.stderr
    document = json.loads(status.stdout)
    assert document["decision"]["state"] == "PAUSE"
    shown = [(entry["reason"], entry.get("signer")) for entry in document["refusedOverrides"]]
    assert shown == [
        ("unsigned", None),
        ("not_an_operator", subject_of("mallory")),
        ("set_at_skew", subject_of("operator")),
    ]
    table = run_cli("status", "--no-tls-verify-hostname", "--timeout=60", *flags)
    assert table.returncode == 0, table.stderr
    assert "refused override records (never took effect):" in table.stdout
    assert f"forcing OPEN, signed by {subject_of('mallory')}: not_an_operator" in table.stdout
