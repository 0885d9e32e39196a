"""On a real cluster: a principal that may write the topic cannot speak for another broker.

Kafka's ACLs let kafka-1 write any key of the snapshot topic. With signatures required, a
forged "broker 2 is full" and a forged "broker 2 is fine", both signed by kafka-1, are rejected
by `volume-quota status`; with signatures accepted (the control) the same forgeries are believed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclOperation,
    AdminClient,
    NewTopic,
    ResourceType,
)

from local_cluster import (
    SNAPSHOT_TOPIC,
    LocalKafkaCluster,
    allow,
    grant_volume_quota_acls,
    subject_of,
)
from local_cluster.acls import create_acls
from tests.conftest import CliResult
from tests.snapshot_factory import snapshot_line, volume
from tests.support import wait_for
from volume_quota.certificate_files import TlsFiles, load_signer
from volume_quota.config import load_settings
from volume_quota.daemons.decider import DecideDaemon

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]

SIGNERS = ("kafka-0", "kafka-1", "kafka-2")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("signed"), broker_count=1) as started:
        grant_volume_quota_acls(started, consumer_group="volume-quota-consumer")
        admin = AdminClient(started.client_config("admin"))
        topic = NewTopic(SNAPSHOT_TOPIC, 1, 1, config={"cleanup.policy": "compact"})
        admin.create_topics([topic])[SNAPSHOT_TOPIC].result(30)
        bindings = []
        for name in SIGNERS:
            started.pki.issue(name)
            bindings += allow(
                ResourceType.TOPIC,
                SNAPSHOT_TOPIC,
                f"User:{name}",
                AclOperation.WRITE,
                AclOperation.DESCRIBE,
            )
        create_acls(started, bindings)
        yield started


def publish_as(
    cluster: LocalKafkaCluster,
    identity: str,
    broker_id: int,
    free: int,
    *,
    signed_by: str | None = None,
    topic: str = SNAPSHOT_TOPIC,
) -> None:
    """``identity`` connects with its own certificate and signs a snapshot for ``broker_id``
    (with the certificate of ``signed_by``, when given)."""
    files = cluster.identity_files(signed_by or identity)
    signer = load_signer(TlsFiles(files.ca, files.cert, files.key))
    key = str(broker_id).encode()
    value = snapshot_line(
        broker_id=broker_id, volumes=[volume("v", 1000, 1000 - free)], at=datetime.now(UTC)
    )
    headers: list[tuple[str, str | bytes | None]] = list(signer.headers(key, value))
    producer = Producer({**cluster.client_config(identity), "acks": "all"})
    delivered: list[object] = []
    producer.produce(
        topic,
        key=key,
        value=value,
        headers=headers,
        on_delivery=lambda error, _message: delivered.append(error),
    )
    producer.flush(30)
    assert delivered == [None]


def status(
    cli: Callable[..., CliResult], cluster: LocalKafkaCluster, signatures: str
) -> dict[str, object]:
    files = cluster.identity_files("consumer")
    result = cli(
        "status",
        "--json",
        "--timeout=60",
        f"--bootstrap-servers={cluster.bootstrap_servers}",
        f"--tls-ca-file={files.ca}",
        f"--tls-cert-file={files.cert}",
        f"--tls-key-file={files.key}",
        "--no-tls-verify-hostname",
        f"--snapshot-signatures={signatures}",
        f"--signer-identities={subject_of('kafka-{broker}')}",
    )
    assert result.status == 0, result.err
    decision: dict[str, object] = json.loads(result.out)["decision"]
    return decision


def test_forgeries_from_another_brokers_identity_are_rejected(
    cluster: LocalKafkaCluster, cli: Callable[..., CliResult]
) -> None:
    publish_as(cluster, "kafka-0", 0, free=900)
    publish_as(cluster, "kafka-2", 2, free=900)
    assert status(cli, cluster, "require")["state"] == "OPEN"

    publish_as(cluster, "kafka-1", 2, free=10)  # forged: "broker 2 is full"
    assert status(cli, cluster, "require")["state"] == "OPEN"
    assert status(cli, cluster, "accept")["state"] == "PAUSE"  # without signatures, believed

    publish_as(cluster, "kafka-2", 2, free=10)  # broker 2 really fills
    assert status(cli, cluster, "require")["state"] == "PAUSE"

    publish_as(cluster, "kafka-1", 2, free=900)  # forged: "broker 2 is fine"
    held = status(cli, cluster, "require")
    assert held["state"] == "PAUSE"
    assert status(cli, cluster, "accept")["state"] == "OPEN"  # without signatures, believed
    reasons = held["reasons"]
    assert isinstance(reasons, list)
    assert reasons[0]["brokerId"] == 2


def test_a_ca_added_to_the_bundle_is_trusted_for_signatures_without_a_restart(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    # A CA rotation adds the new CA to the bundle before any certificate of it is used. Trust
    # loaded once at start made every broker signing with a new certificate stale under
    # require, and paused the cluster until every decider restarted.
    cluster.pki.issue("rogue-kafka-0")  # CN=kafka-0 from another CA: the "new" one
    topic = "__volume_quota_snapshots_ca_rotation"  # none of the other tests' snapshots
    admin = AdminClient(cluster.client_config("admin"))
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[
        topic
    ].result(30)
    bindings = allow(
        ResourceType.TOPIC, topic, "User:kafka-0", AclOperation.WRITE, AclOperation.DESCRIBE
    ) + allow(ResourceType.TOPIC, topic, "User:consumer", AclOperation.READ, AclOperation.DESCRIBE)
    create_acls(cluster, bindings)
    files = cluster.identity_files("consumer")
    bundle = tmp_path / "ca-bundle.pem"
    bundle.write_bytes(files.ca.read_bytes())
    decision_file = tmp_path / "decision.json"
    settings = load_settings(
        {
            "bootstrap_servers": cluster.bootstrap_servers,
            "tls_ca_file": str(bundle),
            "tls_cert_file": str(files.cert),
            "tls_key_file": str(files.key),
            "tls_verify_hostname": False,
            "decision_file": str(decision_file),
            "stale_after": "1h",
            "topic": topic,
            "snapshot_signatures": "require",
            "signer_identities": subject_of("kafka-{broker}"),
        }
    )
    daemon = DecideDaemon(settings, serve_http=False)
    stop = threading.Event()
    thread = threading.Thread(target=daemon.run, args=(stop,), daemon=True)
    thread.start()
    try:
        publish_as(cluster, "kafka-0", 0, free=900, topic=topic)
        wait_for(lambda: state_of(decision_file) == "OPEN", 60, "OPEN, signed under the old CA")
        publish_as(cluster, "kafka-0", 0, free=10, signed_by="rogue-kafka-0", topic=topic)
        time.sleep(3)
        assert state_of(decision_file) == "OPEN", "a CA not (yet) in the bundle vouches for none"
        new_ca = cluster.pki.directory / "rogue-ca" / "ca.pem"
        bundle.write_bytes(files.ca.read_bytes() + new_ca.read_bytes())
        publish_as(cluster, "kafka-0", 0, free=10, signed_by="rogue-kafka-0", topic=topic)
        wait_for(lambda: state_of(decision_file) == "PAUSE", 30, "the new CA's signer believed")
    finally:
        stop.set()
        thread.join(timeout=15)


def state_of(decision_file: Path) -> str:
    try:
        return str(json.loads(decision_file.read_text())["state"])
    except (OSError, ValueError):
        return ""


def test_signers_are_checked_against_the_signature_ca_file_alone(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    # Strimzi's shape: the brokers' certificates from one CA (tls_ca_file), the signers' from
    # another (signature_ca_file). A signer of the TLS CA alone is not trusted, the signature
    # CA never verifies a broker (the clients connect with tls_ca_file), and a signature CA
    # file that changes is read again without a restart.
    cluster.pki.issue("rogue-kafka-0")  # CN=kafka-0 from the second CA: the signers' CA
    topic = "__volume_quota_snapshots_signature_ca"
    admin = AdminClient(cluster.client_config("admin"))
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[
        topic
    ].result(30)
    bindings = allow(
        ResourceType.TOPIC, topic, "User:kafka-0", AclOperation.WRITE, AclOperation.DESCRIBE
    ) + allow(ResourceType.TOPIC, topic, "User:consumer", AclOperation.READ, AclOperation.DESCRIBE)
    create_acls(cluster, bindings)
    files = cluster.identity_files("consumer")
    signers_ca = cluster.pki.directory / "rogue-ca" / "ca.pem"
    signature_bundle = tmp_path / "signers-ca.pem"
    signature_bundle.write_bytes(signers_ca.read_bytes())
    decision_file = tmp_path / "decision.json"
    settings = load_settings(
        {
            "bootstrap_servers": cluster.bootstrap_servers,
            "tls_ca_file": str(files.ca),
            "tls_cert_file": str(files.cert),
            "tls_key_file": str(files.key),
            "tls_verify_hostname": False,
            "decision_file": str(decision_file),
            "stale_after": "1h",
            "topic": topic,
            "snapshot_signatures": "require",
            "signer_identities": subject_of("kafka-{broker}"),
            "signature_ca_file": str(signature_bundle),
        }
    )
    daemon = DecideDaemon(settings, serve_http=False)
    stop = threading.Event()
    thread = threading.Thread(target=daemon.run, args=(stop,), daemon=True)
    thread.start()
    try:
        publish_as(cluster, "kafka-0", 0, free=900, signed_by="rogue-kafka-0", topic=topic)
        wait_for(lambda: state_of(decision_file) == "OPEN", 60, "OPEN, signed by the signers' CA")
        publish_as(cluster, "kafka-0", 0, free=10, topic=topic)  # signed under the TLS CA
        time.sleep(3)
        assert state_of(decision_file) == "OPEN", "the TLS CA vouches for no signer"
        signature_bundle.write_bytes(signers_ca.read_bytes() + files.ca.read_bytes())
        publish_as(cluster, "kafka-0", 0, free=10, topic=topic)
        wait_for(lambda: state_of(decision_file) == "PAUSE", 30, "the re-read bundle believed")
    finally:
        stop.set()
        thread.join(timeout=15)
