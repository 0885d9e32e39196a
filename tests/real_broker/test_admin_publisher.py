"""On a real cluster: one process measures every broker through the Admin API (no sidecar).

Three brokers, two log dirs each on one filesystem: `publish --source admin` publishes one
snapshot per broker, counting the filesystem once, marked with its log dirs; a stopped broker
gets no new snapshot while the others go on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, grant_volume_quota_acls
from schemas import VolumeSnapshot, decode_snapshot
from tests.support import wait_for
from volume_quota.config import load_settings
from volume_quota.daemons.publisher import PublisherDaemon

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    volumes = tmp_path_factory.mktemp("admin-volumes")
    log_dirs = [[volumes / f"node-{i}-a", volumes / f"node-{i}-b"] for i in range(3)]
    base = tmp_path_factory.mktemp("admin-source")
    with LocalKafkaCluster(base, broker_count=3, log_dirs=log_dirs) as started:
        grant_volume_quota_acls(started, cluster_describe=True)
        yield started


@pytest.fixture
def agent(cluster: LocalKafkaCluster) -> Iterator[PublisherDaemon]:
    files = cluster.identity_files("publisher")
    settings = load_settings(
        {
            "source": "admin",
            "survey_interval": "1s",
            "heartbeat_interval": "2s",
            "readiness_max_age": "10s",
            "bootstrap_servers": cluster.bootstrap_servers,
            "tls_ca_file": str(files.ca),
            "tls_cert_file": str(files.cert),
            "tls_key_file": str(files.key),
            "tls_verify_hostname": False,
            "topic_replication_factor": 3,
        }
    )
    daemon = PublisherDaemon(settings, serve_http=False)
    stop = threading.Event()
    thread = threading.Thread(target=daemon.run, args=(stop,), daemon=True)
    thread.start()
    yield daemon
    stop.set()
    thread.join(timeout=20)


def read_snapshots(cluster: LocalKafkaCluster) -> list[VolumeSnapshot]:
    consumer = Consumer(
        {**cluster.client_config("admin"), "group.id": "test-reader", "enable.auto.commit": False}
    )
    try:
        try:
            _low, high = consumer.get_watermark_offsets(
                TopicPartition(SNAPSHOT_TOPIC, 0), timeout=10
            )
        except KafkaException:  # the agent has not created the topic yet
            return []
        consumer.assign([TopicPartition(SNAPSHOT_TOPIC, 0, 0)])
        found: list[VolumeSnapshot] = []
        read = 0
        deadline = time.monotonic() + 20
        while read < high and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=1.0):
                if message.error() is None:
                    read += 1
                    value, key = message.value(), message.key()
                    snapshot = decode_snapshot(value or b"", key)
                    if isinstance(snapshot, VolumeSnapshot):
                        found.append(snapshot)
        return found
    finally:
        consumer.close()


def newest(snapshots: list[VolumeSnapshot]) -> dict[int, VolumeSnapshot]:
    latest: dict[int, VolumeSnapshot] = {}
    for snapshot in snapshots:
        if (
            snapshot.broker_id not in latest
            or snapshot.snapshot_at > latest[snapshot.broker_id].snapshot_at
        ):
            latest[snapshot.broker_id] = snapshot
    return latest


def test_one_agent_publishes_every_broker_and_skips_a_stopped_one(
    cluster: LocalKafkaCluster, agent: PublisherDaemon
) -> None:
    wait_for(lambda: set(newest(read_snapshots(cluster))) == {0, 1, 2}, 60, "three brokers")
    latest = newest(read_snapshots(cluster))
    for broker_id, snapshot in latest.items():
        (volume,) = snapshot.volumes  # both log dirs are on one filesystem: counted once
        data_dirs = {str(path) for path in cluster.broker_files(broker_id).data_dirs}
        assert volume.path in data_dirs
        assert 0 < volume.consumed < volume.capacity

    cluster.stop_broker(2)
    try:
        stopped_at = newest(read_snapshots(cluster))[2].snapshot_at
        time.sleep(6)  # several surveys and heartbeats
        after = newest(read_snapshots(cluster))
        assert after[2].snapshot_at == stopped_at  # no new snapshot for the stopped broker
        assert after[0].snapshot_at > latest[0].snapshot_at  # the others go on
    finally:
        cluster.start_broker(2)
