"""The usage topic ingested from a real mTLS Kafka 4 cluster by the real command, beside the
snapshot topic, with only the volume-quota consumer's ACLs (``deploy/local/local_cluster``):
every valid document once, refused records counted by reason, a re-run that reads nothing twice.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest
from pyspark.sql import SparkSession

from local_cluster import (
    SNAPSHOT_TOPIC,
    LocalKafkaCluster,
    grant_volume_quota_acls,
)
from local_cluster.acls import USAGE_TOPIC
from spark_history.usage_documents import CONFIG, OTHER, TOPIC
from tests.real_broker.kafka_helpers import create_topic, produce
from tests.spark_history_pure.usage_factory import (
    GB,
    encoded,
    snapshot_document,
    topic_configs_entry,
    usage_document,
)

pytestmark = [pytest.mark.spark, pytest.mark.real_broker]

AT = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("kafka-usage"), broker_count=1) as started:
        grant_volume_quota_acls(started)
        for topic in (SNAPSHOT_TOPIC, USAGE_TOPIC):
            create_topic(
                started.client_config("publisher"),
                topic,
                topic_config={"cleanup.policy": "compact"},
            )
        yield started


def _ingest(cluster: LocalKafkaCluster, work: Path) -> str:
    identity = cluster.identity_files("consumer")
    command = [
        sys.executable, "-m", "spark_history", "ingest", "--source", "kafka",
        "--bootstrap-servers", cluster.bootstrap_servers, "--topic", SNAPSHOT_TOPIC,
        "--tls-ca-file", str(identity.ca), "--tls-cert-file", str(identity.cert),
        "--tls-key-file", str(identity.key),
        "--checkpoint", str(work / "ck" / "snapshots"),
        "--output", str(work / "history" / "snapshots"),
        "--usage-output", str(work / "history" / "usage"),
        "--usage-checkpoint", str(work / "ck" / "usage"),
        "--master", "local[2]", "--conf", "spark.driver.memory=1g",
        "--conf", "spark.sql.shuffle.partitions=2",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _usage_line(stdout: str) -> str:
    (line,) = [line for line in stdout.splitlines() if "usage messages" in line]
    return line


def _count(text: str, name: str) -> int:
    match = re.search(rf"{name} (\d+)", text)
    return int(match.group(1)) if match else 0


def test_the_usage_topic_is_ingested_once_with_refusals_counted(
    spark: SparkSession, cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    publisher = cluster.client_config("publisher")
    snapshots = [(str(b).encode(), encoded(snapshot_document(b, AT, 300 * GB))) for b in (0, 1)]
    assert produce(publisher, SNAPSHOT_TOPIC, snapshots).all_delivered
    configs = [topic_configs_entry("logs", retentionMs=3_600_000)]
    good = [
        (b"0", encoded(usage_document(0, AT, [("logs", GB, 2)], configs=configs))),
        (b"1", encoded(usage_document(1, AT, [("logs", GB, 2), ("audit", GB, 1)]))),
    ]
    bad: list[tuple[bytes, bytes | None]] = [
        (b"7", None),  # tombstone of a retired broker
        (b"1", encoded(usage_document(0, AT, [("logs", GB, 2)]))),  # key says 1, value 0
        (b"01", encoded(usage_document(1, AT, [("logs", GB, 2)]))),  # not a canonical key
        (b"0", b'{"schemaVersion": 1, "brokerId"'),  # malformed
    ]
    records = cast(list[tuple[bytes, bytes]], [*good, *bad])
    assert produce(publisher, USAGE_TOPIC, records).all_delivered

    line = _usage_line(_ingest(cluster, tmp_path))
    assert "6 usage messages" in line, line
    assert "2 valid" in line, line
    for reason in ("tombstone", "key_mismatch", "invalid_key", "malformed_json"):
        assert _count(line, reason) == 1, line
    usage = spark.read.parquet(str(tmp_path / "history" / "usage"))
    kinds = {row["kind"]: row["count"] for row in usage.groupBy("kind").count().collect()}
    assert kinds == {TOPIC: 3, OTHER: 2, CONFIG: 1}
    (config,) = usage.where(f"kind = '{CONFIG}'").collect()
    assert (config["topic"], config["retentionMs"], config["brokerId"]) == ("logs", 3_600_000, 0)

    again = _usage_line(_ingest(cluster, tmp_path))
    assert "0 usage messages" in again, again
    assert spark.read.parquet(str(tmp_path / "history" / "usage")).count() == 6
