"""The override topic ingested from a real mTLS Kafka 4 cluster by the real command, beside the
snapshot topic, with the volume-quota consumer's ACLs (``deploy/local/local_cluster``): the
operator sets and clears an override with ``volume-quota override``, and the history keeps the
records with their signature headers, so the consumer's judgement believes them later.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation, ResourceType  # type: ignore[attr-defined]
from cryptography import x509
from pyspark.sql import SparkSession

from consumer.overrides import OverridePolicy
from consumer.signatures import SignatureMode
from local_cluster import (
    SNAPSHOT_TOPIC,
    LocalKafkaCluster,
    grant_volume_quota_acls,
)
from local_cluster.acls import allow, create_acls
from schemas.decision import QuotaState
from schemas.override import DEFAULT_OVERRIDE_TOPIC
from spark_history.override_history import fold_overrides
from spark_history.override_ingest import load_override_records
from tests.real_broker.kafka_helpers import create_topic

pytestmark = [pytest.mark.spark, pytest.mark.real_broker]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("kafka-override"), broker_count=1) as started:
        grant_volume_quota_acls(started)
        started.pki.issue("operator")
        create_topic(
            started.client_config("publisher"),
            SNAPSHOT_TOPIC,
            topic_config={"cleanup.policy": "compact"},
        )
        operations = (
            AclOperation.CREATE,
            AclOperation.WRITE,
            AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS,
        )
        bindings = allow(ResourceType.TOPIC, DEFAULT_OVERRIDE_TOPIC, "User:operator", *operations)
        create_acls(started, bindings)
        yield started


def _override(cluster: LocalKafkaCluster, *arguments: str) -> None:
    """``volume-quota override`` as the operator runs it."""
    files = cluster.identity_files("operator")
    command = [
        sys.executable, "-m", "volume_quota", "override", *arguments,
        f"--bootstrap-servers={cluster.bootstrap_servers}", f"--tls-ca-file={files.ca}",
        f"--tls-cert-file={files.cert}", f"--tls-key-file={files.key}",
        "--no-tls-verify-hostname", "--delivery-timeout=10s",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr[-3000:]


def _ingest(cluster: LocalKafkaCluster, work: Path) -> str:
    identity = cluster.identity_files("consumer")
    command = [
        sys.executable, "-m", "spark_history", "ingest", "--source", "kafka",
        "--bootstrap-servers", cluster.bootstrap_servers, "--topic", SNAPSHOT_TOPIC,
        "--override-topic", DEFAULT_OVERRIDE_TOPIC,
        "--tls-ca-file", str(identity.ca), "--tls-cert-file", str(identity.cert),
        "--tls-key-file", str(identity.key),
        "--checkpoint", str(work / "ck" / "snapshots"),
        "--output", str(work / "history" / "snapshots"),
        "--override-output", str(work / "history" / "overrides"),
        "--override-checkpoint", str(work / "ck" / "overrides"),
        "--master", "local[2]", "--conf", "spark.driver.memory=1g",
        "--conf", "spark.sql.shuffle.partitions=2",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_the_operators_records_are_kept_with_their_signatures(
    spark: SparkSession, cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    _override(cluster, "--state=PAUSE", "--for=1h", "--reason=history drill")
    _override(cluster, "--clear")

    assert "ingested 2 override records" in _ingest(cluster, tmp_path)
    dataset = str(tmp_path / "history" / "overrides")
    records = sorted(load_override_records(spark, dataset), key=lambda record: record.offset)
    assert [record.value is None for record in records] == [False, True]  # set, then cleared
    identity = cluster.identity_files("operator")
    subject = x509.load_pem_x509_certificate(identity.cert.read_bytes()).subject.rfc4514_string()
    authorities = x509.load_pem_x509_certificates(identity.ca.read_bytes())
    history = fold_overrides(
        records, OverridePolicy(SignatureMode.REQUIRE, authorities, (subject,))
    )
    # Signed by the operator, as the decider requires: in force from its setAt until cleared.
    assert history.refused == ()
    (interval,) = history.intervals
    assert interval.state is QuotaState.PAUSE
    assert interval.end == records[1].arrived_at.timestamp()

    assert "ingested 0 override records" in _ingest(cluster, tmp_path)
    assert spark.read.parquet(dataset).count() == 2
