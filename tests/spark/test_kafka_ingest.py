"""Kafka-source ingest against a real mTLS Kafka 4 cluster (``deploy/local/local_cluster``).

The ingest runs as the real command in its own process (``python -m spark_history ingest``):
a fresh JVM that fetches Spark's Kafka connector with Maven, converts the consumer identity's
PEM files into Kafka's PEM keystore and reads the compacted snapshot topic with only the
volume-quota consumer ACLs (READ and DESCRIBE on the topic). The dataset is then checked with
the suite's Spark session: every valid snapshot once, tombstones and bad messages counted and
skipped, and a re-run that reads nothing twice.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from pyspark.sql import SparkSession

from local_cluster import (
    SNAPSHOT_TOPIC,
    LocalKafkaCluster,
    grant_volume_quota_acls,
)
from spark_history.snapshot_rows import only_volumes, tombstone_rows
from tests.real_broker.kafka_helpers import create_topic, produce

pytestmark = [pytest.mark.spark, pytest.mark.real_broker]

DAY_MS = 24 * 3600 * 1000


def _snapshot(broker: int, minute: int, consumed: int) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 1,
            "brokerId": broker,
            "snapshotAt": f"2026-11-22T10:{minute:02d}:00.000Z",
            "softLimit": {"type": "MinFreePercentage", "level": 10},
            "hardLimit": {"type": "MinFreePercentage", "level": 5},
            "volumes": [
                {"volumeName": "/dev/a", "capacity": 1000, "consumed": consumed},
                {"volumeName": "/dev/b", "capacity": 2000, "consumed": consumed},
            ],
        }
    ).encode()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("kafka-history"), broker_count=1) as started:
        grant_volume_quota_acls(started)
        create_topic(
            started.client_config("publisher"),
            SNAPSHOT_TOPIC,
            topic_config={"cleanup.policy": "compact", "min.compaction.lag.ms": str(DAY_MS)},
        )
        yield started


def _ingest(cluster: LocalKafkaCluster, work: Path) -> str:
    identity = cluster.identity_files("consumer")
    command = [
        sys.executable, "-m", "spark_history", "ingest", "--source", "kafka",
        "--bootstrap-servers", cluster.bootstrap_servers, "--topic", SNAPSHOT_TOPIC,
        "--tls-ca-file", str(identity.ca), "--tls-cert-file", str(identity.cert),
        "--tls-key-file", str(identity.key),
        "--checkpoint", str(work / "checkpoint"), "--output", str(work / "dataset"),
        "--master", "local[2]", "--conf", "spark.driver.memory=1g",
        "--conf", "spark.sql.shuffle.partitions=2",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _count(text: str, name: str) -> int:
    match = re.search(rf"{name} (\d+)", text)
    return int(match.group(1)) if match else 0


def test_kafka_ingest_over_mtls_is_incremental_and_counts_skips(
    spark: SparkSession, cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    publisher = cluster.client_config("publisher")
    first = [(str(broker).encode(), _snapshot(broker, minute, 100 + minute))
             for minute in range(3) for broker in (0, 1, 2)]  # fmt: skip
    bad: list[tuple[bytes, bytes | None]] = [
        (b"9", None),  # tombstone of a decommissioned broker
        (b"1", b'{"schemaVersion": 1, "brokerId"'),  # malformed
        (b"2", _snapshot(1, 5, 100)),  # key says broker 2, value says broker 1
        (b"one", _snapshot(1, 6, 100)),  # key is not a broker id
    ]
    # The helper is typed for non-null values; a tombstone is a None value on the wire.
    records = cast(list[tuple[bytes, bytes]], [*first, *bad])
    outcome = produce(publisher, SNAPSHOT_TOPIC, records)
    assert outcome.all_delivered, outcome.delivery_errors

    summary = _ingest(cluster, tmp_path)
    assert "13 messages" in summary, summary
    assert _count(summary, "tombstone") == 1
    assert _count(summary, "malformed_json") == 1
    assert _count(summary, "key_mismatch") == 1
    assert _count(summary, "invalid_key") == 1
    dataset = str(tmp_path / "dataset")
    assert only_volumes(spark.read.parquet(dataset)).count() == 9 * 2
    # Each volume row keeps its message's Kafka timestamp (the clock-skew panel's input): the
    # publisher produced them just now, while the snapshots are dated in 2026-11.
    received = [row["receivedAt"] for row in only_volumes(spark.read.parquet(dataset)).collect()]
    assert all(at is not None for at in received), received
    assert max(abs(time.time() - at.timestamp()) for at in received) < 600
    # The tombstone is recorded (broker 9 retired), stamped with the message's time.
    assert [row["brokerId"] for row in tombstone_rows(spark.read.parquet(dataset)).collect()] == [9]

    again = _ingest(cluster, tmp_path)
    assert "0 messages" in again, again
    assert only_volumes(spark.read.parquet(dataset)).count() == 9 * 2

    later = [(str(broker).encode(), _snapshot(broker, 10, 300)) for broker in (0, 1, 2)]
    assert produce(publisher, SNAPSHOT_TOPIC, later).all_delivered
    assert "3 messages" in _ingest(cluster, tmp_path)
    rows = only_volumes(spark.read.parquet(dataset))
    assert rows.count() == 12 * 2
    assert rows.select("brokerId", "volumeName", "snapshotAt").distinct().count() == 12 * 2
    latest = rows.where("brokerId = 2 AND volumeName = '/dev/b'").orderBy("snapshotAt").collect()
    assert [row["consumed"] for row in latest] == [100, 101, 102, 300]
    assert latest[-1]["softThresholdBytes"] == 200.0
