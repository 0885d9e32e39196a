"""``volume-quota status --topics`` on a real 1-node mTLS Kafka cluster: a sidecar-style publisher
surveys the broker's log dirs every 2 s while three topics are written at different rates;
``status`` then names them largest first with the share of the volume ``du`` counts, their
growth, and what retention will do: a topic with ``retention.ms=60000`` and small segments is
bounded or steady, one with ``retention.ms=-1`` and ``retention.bytes=-1`` unbounded. The usage
records are checked under ``snapshot_signatures=require``. An identity that may read the topics
but not describe the topics' configs still gets the table, with the reason in the retention
column and no traceback."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka.admin import AclOperation, ResourceType  # type: ignore[attr-defined]
from cryptography import x509

from local_cluster import LocalKafkaCluster, grant_sidecar_acls, issue_client
from local_cluster.acls import OVERRIDE_TOPIC, SNAPSHOT_TOPIC, USAGE_TOPIC, allow, create_acls
from tests.publisher.daemon_harness import DaemonProcess
from tests.real_broker.kafka_helpers import (
    create_topic,
    produce,
    sidecar_settings,
    volume_quota_command,
)
from tests.support import du_bytes, partition_dirs

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(420)]

FAST, STEADY, SLOW = "vq-status-fast", "vq-status-steady", "vq-status-slow"
INTERVAL_SECONDS = 2.0
SEGMENT_BYTES = 1024 * 1024
"""Kafka's smallest segment.bytes."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("kafka-status"), broker_count=1) as started:
        grant_sidecar_acls(started)
        # status as the admin-less operator: read every volume-quota topic, describe configs
        create_acls(
            started,
            [
                *allow(
                    ResourceType.TOPIC,
                    USAGE_TOPIC,
                    "User:consumer",
                    AclOperation.READ,
                    AclOperation.DESCRIBE,
                ),
                *(
                    binding
                    for topic in (FAST, STEADY, SLOW)
                    for binding in allow(
                        ResourceType.TOPIC, topic, "User:consumer", AclOperation.DESCRIBE_CONFIGS
                    )
                ),
            ],
        )
        admin = started.client_config("admin")
        create_topic(
            admin,
            FAST,
            partitions=3,
            topic_config={"retention.ms": "-1", "retention.bytes": "-1"},
        )
        create_topic(
            admin,
            STEADY,
            partitions=1,
            topic_config={"retention.ms": "60000", "segment.bytes": str(SEGMENT_BYTES)},
        )
        create_topic(admin, SLOW, partitions=1)
        yield started


def _write(cluster: LocalKafkaCluster, stop: threading.Event) -> None:
    """Per round: FAST 320 kB, STEADY 80 kB, SLOW 16 kB."""
    admin = cluster.client_config("admin")
    while not stop.is_set():
        produce(admin, FAST, [(b"k%d" % i, bytes(8000)) for i in range(40)])
        produce(admin, STEADY, [(b"k%d" % i, bytes(8000)) for i in range(10)])
        produce(admin, SLOW, [(b"k", bytes(16000))])
        stop.wait(0.5)


def run_status(
    cluster: LocalKafkaCluster, identity: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    publisher = cluster.identity_files("publisher")
    signer = x509.load_pem_x509_certificate(publisher.cert.read_bytes())
    command = volume_quota_command(
        cluster,
        identity,
        "status",
        "--topics",
        "--timeout=60",
        "--snapshot-signatures=require",
        f"--cluster-signers={signer.subject.rfc4514_string()}",
        *extra,
    )
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def surveyed(cluster: LocalKafkaCluster) -> tuple[dict[str, Any], dict[str, int]]:
    """Run the publisher while the topics are written, stop writing, and wait for ``status``
    to show a survey taken after the last write: its JSON document, and ``du`` of each topic."""
    files = cluster.broker_files(0)
    settings = sidecar_settings(cluster, 0, INTERVAL_SECONDS)
    stop = threading.Event()
    writer = threading.Thread(target=_write, args=(cluster, stop), daemon=True)
    with DaemonProcess(settings) as daemon:
        daemon.wait_started()
        writer.start()
        try:
            time.sleep(8 * INTERVAL_SECONDS)  # several surveys while all three grow
        finally:
            stop.set()
            writer.join(timeout=60)
        time.sleep(1.0)  # the last batches are acknowledged and on disk
        stopped_at = datetime.now(UTC)
        du = {
            topic: du_bytes(*partition_dirs(files.data_dirs, topic))
            for topic in (FAST, STEADY, SLOW)
        }
        deadline = time.monotonic() + 60
        while True:
            result = run_status(cluster, "consumer", "--json")
            assert result.returncode == 0, result.stderr
            document: dict[str, Any] = json.loads(result.stdout)
            if any(
                datetime.fromisoformat(volume["surveyedAt"]) >= stopped_at
                for volume in document["topics"]
            ):
                break
            assert time.monotonic() < deadline, "no usage document surveyed after the writes"
            time.sleep(INTERVAL_SECONDS)
        assert daemon.terminate()[0] == 0
    return document, du


def test_status_names_the_topics_in_order_with_du_shares_growth_and_outlook(
    cluster: LocalKafkaCluster, surveyed: tuple[dict[str, Any], dict[str, int]]
) -> None:
    document, du = surveyed
    (volume,) = document["topics"]
    assert document["usageRefused"] == {}
    assert "usageProblem" not in document
    (row,) = document["volumes"]
    assert volume["brokerId"] == 0
    assert volume["volumeName"] == row["volumeName"]
    topics = {entry["topic"]: entry for entry in volume["topics"]}
    ours = [entry["topic"] for entry in volume["topics"] if entry["topic"] in du]
    assert ours == [FAST, STEADY, SLOW]
    for topic, measured in du.items():
        share = 100.0 * measured / row["capacityBytes"]
        assert abs(topics[topic]["sharePercent"] - share) <= 0.02 * share, (topic, share)
        assert abs(topics[topic]["bytes"] - measured) <= 0.02 * measured, (topic, measured)
    fast = topics[FAST]
    assert fast["growth15m"]["bytes"] > 0
    assert 0 < fast["growth15m"]["seconds"] <= 900
    assert fast["retention"]["outlook"] == "unbounded"
    steady = topics[STEADY]["retention"]
    assert steady["outlook"] in ("bounded", "steady")
    assert steady["boundBytes"] >= SEGMENT_BYTES
    assert "retention.ms=60000" in steady["detail"]

    table = run_status(cluster, "consumer")
    assert table.returncode == 0, table.stderr
    assert f"top topics of broker 0 volume {row['volumeName']} (OPEN)" in table.stdout
    assert next(line for line in table.stdout.splitlines() if line.startswith(FAST))


def test_without_describe_configs_the_table_still_prints_with_the_reason(
    cluster: LocalKafkaCluster, surveyed: tuple[dict[str, Any], dict[str, int]]
) -> None:
    issue_client(
        cluster,
        "status-no-configs",
        topics_read=[SNAPSHOT_TOPIC, OVERRIDE_TOPIC, USAGE_TOPIC],
        groups_read=["volume-quota-consumer"],
    )
    result = run_status(cluster, "status-no-configs")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    fast = next(line for line in result.stdout.splitlines() if line.startswith(FAST))
    assert "retention: unknown (not authorized to describe configs)" in fast
