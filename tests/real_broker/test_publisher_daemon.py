"""The publisher against a real 1-node mTLS Kafka 4 cluster: the daemon (as a subprocess and
in-process), ``--once``, ``retire``, a misconfigured topic, an intruder, and a broker restart."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType  # type: ignore[attr-defined]

from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, grant_volume_quota_acls
from publisher.volume_discovery import discover_volumes
from schemas import VolumeSnapshot, decode_snapshot
from tests.publisher.daemon_harness import (
    DaemonProcess,
    InProcessDaemon,
    flags,
    http_get,
    metric_values,
)
from tests.support import wait_for

from .kafka_helpers import create_topic, read_whole_partition

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]

GROUP = "volume-quota-publisher-tests"
DELETE_POLICY_TOPIC = "vq-delete-policy"
CREATED_TOPIC = "vq-created-by-the-publisher"
"""Only the daemon test creates this one, so it proves the publisher creates it compacted."""


@pytest.fixture(scope="module")
def cluster(single_node_cluster: LocalKafkaCluster) -> LocalKafkaCluster:
    grant_volume_quota_acls(single_node_cluster, consumer_group=GROUP)
    grant_volume_quota_acls(single_node_cluster, CREATED_TOPIC, consumer_group=GROUP)
    grant_volume_quota_acls(single_node_cluster, DELETE_POLICY_TOPIC)
    create_topic(
        single_node_cluster.client_config("publisher"),
        SNAPSHOT_TOPIC,
        topic_config={"cleanup.policy": "compact"},
    )
    create_topic(
        single_node_cluster.client_config("admin"),
        DELETE_POLICY_TOPIC,
        topic_config={"cleanup.policy": "delete"},
    )
    return single_node_cluster


def connection(cluster: LocalKafkaCluster, identity: str = "publisher") -> dict[str, object]:
    files = cluster.identity_files(identity)
    return {
        "bootstrap_servers": cluster.bootstrap_servers,
        "tls_ca_file": files.ca,
        "tls_cert_file": files.cert,
        "tls_key_file": files.key,
    }


def daemon_settings(
    cluster: LocalKafkaCluster, broker_id: int, log_dir: Path, identity: str = "publisher"
) -> dict[str, object]:
    return {
        **connection(cluster, identity),
        "broker_id": broker_id,
        "log_dirs": log_dir,
        "metrics_host": "127.0.0.1",
        "metrics_port": 0,
        "heartbeat_interval": "2s",
        "readiness_max_age": "6s",
        "delivery_timeout": "3s",
    }


def snapshots_of(
    cluster: LocalKafkaCluster, broker_id: int, topic: str = SNAPSHOT_TOPIC
) -> list[VolumeSnapshot | None]:
    """Every message of ``broker_id`` in ``topic``, in order; None for a tombstone."""
    read = read_whole_partition(cluster.client_config("consumer"), topic, group_id=GROUP)
    assert read.errors == []
    key = str(broker_id).encode()
    found: list[VolumeSnapshot | None] = []
    for record_key, value in read.records:
        if record_key != key:
            continue
        if value is None:
            found.append(None)
            continue
        decoded = decode_snapshot(value, record_key)
        assert isinstance(decoded, VolumeSnapshot), decoded
        found.append(decoded)
    return found


def run_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("VOLUME_QUOTA_")}
    return subprocess.run(
        [sys.executable, "-m", "volume_quota", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        check=False,
    )


def test_daemon_process_creates_the_topic_publishes_and_serves_metrics(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    (volume,) = discover_volumes([tmp_path])
    statvfs = os.statvfs(tmp_path)
    settings = {**daemon_settings(cluster, 11, tmp_path), "topic": CREATED_TOPIC}
    with DaemonProcess(settings) as daemon:
        port = daemon.wait_started()
        wait_for(lambda: http_get(port, "/readyz")[0] == 200, 60, "/readyz to turn ready")
        assert json.loads(http_get(port, "/healthz")[1]) == {"status": "ok", "problems": []}
        wait_for(
            lambda: (
                metric_values(port).get('volume_quota_publications_total{reason="heartbeat"}', 0)
                >= 1
            ),
            30,
            "a heartbeat publication",
        )
        metrics = metric_values(port)  # parses as Prometheus exposition, or fails
        labels = f'broker="11",volume="{volume.name}"'
        assert metrics[f"volume_quota_volume_capacity_bytes{{{labels}}}"] == (
            statvfs.f_blocks * statvfs.f_frsize
        )
        assert metrics["volume_quota_publication_errors_total"] == 0
        assert metrics["volume_quota_publisher_kafka_connected"] == 1
        assert metrics['volume_quota_publications_total{reason="first"}'] == 1
        assert (
            abs(metrics["volume_quota_last_successful_publication_timestamp_seconds"] - time.time())
            < 30
        )
        remaining_days = metrics["volume_quota_client_certificate_remaining_seconds"] / 86400
        assert 300 < remaining_days <= 366
        status, seconds = daemon.terminate()
    assert status == 0
    assert seconds < 8
    assert daemon.logs.non_json_lines() == []
    assert daemon.logs.find("topic ready") is not None

    snapshots = snapshots_of(cluster, 11, CREATED_TOPIC)
    assert len(snapshots) >= 2
    first = snapshots[0]
    assert first is not None
    assert first.broker_id == 11
    assert [usage.volume_name for usage in first.volumes] == [volume.name]
    assert first.volumes[0].capacity == statvfs.f_blocks * statvfs.f_frsize

    admin = AdminClient(cluster.client_config("admin"))
    resource = ConfigResource(ResourceType.TOPIC, CREATED_TOPIC)
    config = admin.describe_configs([resource])[resource].result(timeout=30)
    assert config["cleanup.policy"].value == "compact"
    assert config["min.compaction.lag.ms"].value == "86400000"
    assert config["segment.ms"].value == "3600000"


def test_once_then_retire_writes_a_snapshot_and_a_tombstone(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    published = run_cli(
        "publish", "--once", *flags({**connection(cluster), "broker_id": 77, "log_dirs": tmp_path})
    )
    assert published.returncode == 0, published.stderr
    retired = run_cli("retire", *flags({**connection(cluster), "broker_id": 77}))
    assert retired.returncode == 0, retired.stderr
    assert json.loads(retired.stderr.splitlines()[-1])["event"] == "broker retired"
    messages = snapshots_of(cluster, 77)
    assert len(messages) == 2
    snapshot, tombstone = messages
    assert snapshot is not None
    assert snapshot.broker_id == 77
    assert tombstone is None


def test_a_topic_with_the_wrong_cleanup_policy_stops_the_publisher(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    settings = {**daemon_settings(cluster, 13, tmp_path), "topic": DELETE_POLICY_TOPIC}
    with DaemonProcess(settings) as daemon:
        status = daemon.process.wait(timeout=60)
    assert status == 2
    last_line = daemon.logs.raw[-1]
    assert last_line.startswith(
        f"volume-quota: error: topic {DELETE_POLICY_TOPIC} has cleanup.policy=delete;"
    )
    once = run_cli(
        "publish",
        "--once",
        *flags({**connection(cluster), "broker_id": 13, "log_dirs": tmp_path}),
        "--topic",
        DELETE_POLICY_TOPIC,
    )
    assert once.returncode == 2
    assert once.stderr.splitlines()[-1].startswith("volume-quota: error: topic vq-delete-policy")


def test_an_intruder_cannot_publish_and_the_daemon_says_so(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    settings = daemon_settings(cluster, 66, tmp_path, identity="intruder")
    with InProcessDaemon(settings) as running:
        wait_for(
            lambda: running.metric("volume_quota_publication_errors_total") >= 1,
            60,
            "the intruder's publication to fail",
        )
        wait_for(
            lambda: any("cannot" in p for p in running.daemon.readiness().problems),
            60,
            "the topic check to report the refusal",
        )
        verdict = running.daemon.readiness()
        assert not verdict.healthy
        assert "no snapshot delivered yet" in verdict.problems
        assert running.daemon.liveness().healthy
        assert running.metric("volume_quota_publications_total", reason="first") == 0
    assert running.outcome == [0]
    assert snapshots_of(cluster, 66) == []


def test_the_daemon_rides_out_a_broker_restart(cluster: LocalKafkaCluster, tmp_path: Path) -> None:
    with InProcessDaemon(daemon_settings(cluster, 12, tmp_path)) as running:
        wait_for(lambda: running.daemon.readiness().healthy, 60, "readiness")
        assert running.metric("volume_quota_publication_errors_total") == 0

        cluster.stop_broker(0)
        wait_for(
            lambda: running.metric("volume_quota_publication_errors_total") >= 1,
            60,
            "the outage to be counted",
        )
        wait_for(lambda: not running.daemon.readiness().healthy, 30, "not ready")
        assert running.metric("volume_quota_publisher_kafka_connected") == 0
        assert running.daemon.liveness().healthy  # still sampling

        cluster.start_broker(0)
        back = dt.datetime.now(dt.UTC)
        delivered_before = running.metric(
            "volume_quota_last_successful_publication_timestamp_seconds"
        )
        wait_for(
            lambda: (
                running.metric("volume_quota_last_successful_publication_timestamp_seconds")
                > delivered_before
            ),
            90,
            "a delivery after the restart",
        )
        wait_for(lambda: running.daemon.readiness().healthy, 30, "readiness after the restart")
        assert running.metric("volume_quota_publisher_kafka_connected") == 1
    assert running.outcome == [0]
    snapshots = [s for s in snapshots_of(cluster, 12) if s is not None]
    assert any(s.snapshot_at >= back - dt.timedelta(seconds=5) for s in snapshots)
    events = [event["event"] for event in running.events()]
    assert "snapshot not delivered" in events
    assert "unexpected error in the publication loop" not in events
