"""On a real 2-node cluster: `volume-quota cluster-agent` publishes each broker's topic usage
(from DescribeLogDirs) with the figures the sidecar's survey of that broker's log dirs finds.

The agent has only the ACLs its help lists (no DESCRIBE on the topics it reports): it must see
every partition through DescribeLogDirs alone. Two topics are written at different rates, each
partition with a few MiB, so that the sidecar's extra per-partition blocks (index and checkpoint
files, which Kafka does not count in a partition's size) stay well within 2 %.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    ResourceType,
)
from cryptography import x509

from consumer.signatures import SignatureTrust, check_signature
from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, allow
from local_cluster.acls import USAGE_TOPIC, create_acls
from publisher.topic_usage import summarize_volumes
from publisher.topic_usage_walk import walk_volumes
from publisher.volumes import Volume
from schemas.decode import decode_usage
from schemas.snapshot import snapshot_key
from schemas.usage import TopicUsageDocument
from tests.support import wait_for

from .kafka_helpers import create_topic, produce, usage_records

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(420)]

FAST, SLOW = "vq-agent-usage-fast", "vq-agent-usage-slow"
BROKERS = 2
USAGE_INTERVAL_SECONDS = 3.0
ROUNDS = 24
"""Per round FAST gets 48 x 16 KiB over 3 partitions, SLOW 6 x 16 KiB: 4 MiB and 2.3 MiB per
partition after all rounds."""
RECORD = bytes(16 * 1024)


def allow_agent(resource: ResourceType, name: str, *operations: AclOperation) -> list[AclBinding]:
    return allow(resource, name, "User:agent", *operations)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("agent-usage"), broker_count=BROKERS) as started:
        started.pki.issue("agent")
        ops = AclOperation
        publish = (ops.WRITE, ops.CREATE, ops.DESCRIBE, ops.DESCRIBE_CONFIGS)
        bindings = (
            allow_agent(ResourceType.TOPIC, SNAPSHOT_TOPIC, ops.READ, *publish)
            + allow_agent(ResourceType.TOPIC, "__volume_quota_decisions", *publish)
            + allow_agent(ResourceType.TOPIC, USAGE_TOPIC, *publish)
            + allow_agent(ResourceType.TOPIC, "__volume_quota_overrides", ops.READ, ops.DESCRIBE)
            + allow_agent(ResourceType.GROUP, "volume-quota-consumer", ops.READ)
            + allow_agent(ResourceType.BROKER, "kafka-cluster", ops.DESCRIBE)
        )
        create_acls(started, bindings)
        config = started.client_config("admin")
        create_topic(config, FAST, partitions=3, replication=BROKERS)
        create_topic(config, SLOW, partitions=1, replication=BROKERS)
        yield started


def agent_command(cluster: LocalKafkaCluster) -> list[str]:
    files = cluster.identity_files("agent")
    return [
        sys.executable,
        "-m",
        "volume_quota",
        "cluster-agent",
        f"--bootstrap-servers={cluster.bootstrap_servers}",
        f"--tls-ca-file={files.ca}",
        f"--tls-cert-file={files.cert}",
        f"--tls-key-file={files.key}",
        "--no-tls-verify-hostname",
        "--survey-interval=1s",
        "--metrics-port=0",
        "--topic-replication-factor=1",
        f"--usage-interval={USAGE_INTERVAL_SECONDS}s",
    ]


def sidecar_survey(cluster: LocalKafkaCluster, broker: int) -> dict[str, tuple[int, int]]:
    """(bytes, partitions) per topic, as the sidecar's survey finds them in the broker's log
    dirs."""
    volumes = [
        Volume(name=str(path), mount_point=str(path), log_dirs=(str(path),))
        for path in cluster.broker_files(broker).data_dirs
    ]
    totals = [total for s in summarize_volumes(walk_volumes(volumes), top=40) for total in s.topics]
    return per_topic((total.topic, total.bytes, total.partitions) for total in totals)


def published_usage(document: TopicUsageDocument) -> dict[str, tuple[int, int]]:
    """(bytes, partitions) per topic of the document's volumes."""
    topics = [topic for volume in document.volumes for topic in volume.topics]
    return per_topic((topic.topic, topic.bytes, topic.partitions) for topic in topics)


def per_topic(rows: Iterable[tuple[str, int, int]]) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for topic, size, partitions in rows:
        old_size, old_partitions = found.get(topic, (0, 0))
        found[topic] = (old_size + size, old_partitions + partitions)
    return found


def test_the_agent_publishes_each_brokers_usage_as_the_sidecar_counts_it(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    log_path = tmp_path / "agent.log"
    agent = subprocess.Popen(
        agent_command(cluster), stdout=subprocess.DEVNULL, stderr=log_path.open("w")
    )
    try:
        config = cluster.client_config("admin")
        for _ in range(ROUNDS):  # both topics grow while the agent surveys, at different rates
            fast = produce(config, FAST, [(b"k%d" % i, RECORD) for i in range(48)])
            slow = produce(config, SLOW, [(b"k", RECORD)] * 6)
            assert fast.all_delivered
            assert slow.all_delivered
        time.sleep(1.0)  # acks=all: every replica has appended the last batches
        stopped_at = datetime.now(UTC)
        on_disk = {broker: sidecar_survey(cluster, broker) for broker in range(BROKERS)}

        def documents_after_stop() -> dict[int, TopicUsageDocument]:
            found: dict[int, TopicUsageDocument] = {}
            for key, value, _headers in usage_records(cluster, "volume-quota-agent-usage-tests"):
                document = decode_usage(value, key)
                assert isinstance(document, TopicUsageDocument), document
                assert key == snapshot_key(document.broker_id)
                if document.surveyed_at >= stopped_at:
                    found.setdefault(document.broker_id, document)
            return found

        try:
            wait_for(
                lambda: len(documents_after_stop()) == BROKERS,
                6 * USAGE_INTERVAL_SECONDS + 30,
                "a usage document from the agent for every broker",
            )
        except AssertionError:
            print(log_path.read_text()[-4000:])
            raise
        documents = documents_after_stop()
    finally:
        agent.send_signal(signal.SIGTERM)
        status = agent.wait(timeout=30)
    log = log_path.read_text()
    assert status == 0, log[-2000:]
    assert "Traceback" not in log

    for broker in range(BROKERS):
        published = published_usage(documents[broker])
        surveyed = on_disk[broker]
        print(f"broker {broker}: published {published}, sidecar survey {surveyed}")
        for topic, partitions in ((FAST, 3), (SLOW, 1)):
            assert published[topic][1] == surveyed[topic][1] == partitions, (broker, topic)
            assert abs(published[topic][0] - surveyed[topic][0]) <= 0.02 * surveyed[topic][0], (
                broker,
                topic,
                published[topic][0],
                surveyed[topic][0],
            )
        assert published[FAST][0] > 3 * published[SLOW][0]
        (volume,) = documents[broker].volumes
        assert volume.volume_name == str(cluster.broker_files(broker).data_dirs[0])
        assert volume.unattributed_bytes == 0
        assert all(topic.active_segment_bytes == 0 for topic in volume.topics)


def test_the_agents_usage_records_are_signed_by_its_certificate(
    cluster: LocalKafkaCluster,
) -> None:
    records = usage_records(cluster, "volume-quota-agent-usage-tests")
    assert records, "the previous test ran the agent"
    identity = cluster.identity_files("agent")
    ca = x509.load_pem_x509_certificate(identity.ca.read_bytes())
    signer = x509.load_pem_x509_certificate(identity.cert.read_bytes())
    trust = SignatureTrust(ca_certificates=[ca], cluster_signers=[signer.subject.rfc4514_string()])
    brokers = set()
    for key, value, headers in records:
        document = decode_usage(value, key)
        assert isinstance(document, TopicUsageDocument), document
        brokers.add(document.broker_id)
        assert check_signature(key, value, headers, trust, datetime.now(UTC)).trusted
    assert brokers == set(range(BROKERS))


def test_status_shows_the_largest_topics_of_every_brokers_volume_from_the_agent(
    cluster: LocalKafkaCluster,
) -> None:
    admin = cluster.identity_files("admin")
    agent = x509.load_pem_x509_certificate(cluster.identity_files("agent").cert.read_bytes())
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "volume_quota",
            "status",
            f"--bootstrap-servers={cluster.bootstrap_servers}",
            f"--tls-ca-file={admin.ca}",
            f"--tls-cert-file={admin.cert}",
            f"--tls-key-file={admin.key}",
            "--no-tls-verify-hostname",
            "--snapshot-signatures=require",
            f"--cluster-signers={agent.subject.rfc4514_string()}",
            f"--signature-ca-file={admin.ca}",
            "--topics",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    shown = json.loads(result.stdout)["topics"]
    assert sorted(volume["brokerId"] for volume in shown) == list(range(BROKERS)), shown
    for volume in shown:
        assert volume.get("problem") is None, volume
        assert [topic["topic"] for topic in volume["topics"][:2]] == [FAST, SLOW], volume
