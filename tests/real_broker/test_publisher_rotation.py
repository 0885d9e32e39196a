"""Certificate rotation against a real broker.

1. librdkafka does not reload its TLS files: a producer keeps the identity it was created with
   even after the files change and its connections are re-established.
2. So the publisher rebuilds its producer when the files change: it keeps publishing with a
   re-issued certificate after the old one expired and every connection was re-made.
"""

from __future__ import annotations

import datetime as dt
import itertools
import shutil
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer

from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, grant_volume_quota_acls
from schemas import VolumeSnapshot, decode_snapshot
from tests.publisher.daemon_harness import InProcessDaemon
from tests.support import wait_for

from .kafka_helpers import create_topic, produce, read_whole_partition

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]

GROUP = "volume-quota-rotation-tests"
HEARTBEAT_SECONDS = 2.0


@pytest.fixture(scope="module")
def cluster(single_node_cluster: LocalKafkaCluster) -> LocalKafkaCluster:
    grant_volume_quota_acls(single_node_cluster, consumer_group=GROUP)
    create_topic(
        single_node_cluster.client_config("publisher"),
        SNAPSHOT_TOPIC,
        topic_config={"cleanup.policy": "compact"},
    )
    return single_node_cluster


def test_librdkafka_keeps_the_certificate_it_was_created_with(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """Swap the publisher's files for the intruder's (same CA, no ACLs) under a live producer,
    force new connections with a broker restart: the old producer still writes as publisher,
    a new producer built from the same files is denied."""
    publisher = cluster.identity_files("publisher")
    intruder = cluster.identity_files("intruder")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    shutil.copyfile(publisher.cert, cert)
    shutil.copyfile(publisher.key, key)
    config = {
        **cluster.client_config("publisher"),
        "ssl.certificate.location": str(cert),
        "ssl.key.location": str(key),
        "enable.idempotence": True,
    }
    delivered: list[KafkaError | None] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        delivered.append(error)

    producer = Producer({**config, "message.timeout.ms": 60000})
    producer.produce(SNAPSHOT_TOPIC, key=b"rotation-a", value=b"1", on_delivery=on_delivery)
    assert producer.flush(60) == 0
    assert delivered == [None]

    shutil.copyfile(intruder.cert, cert)
    shutil.copyfile(intruder.key, key)
    cluster.restart_broker(0)
    producer.produce(SNAPSHOT_TOPIC, key=b"rotation-b", value=b"2", on_delivery=on_delivery)
    assert producer.flush(90) == 0
    assert delivered == [None, None]  # still the publisher: the new files were not read

    fresh = produce(config, SNAPSHOT_TOPIC, [(b"rotation-c", b"3")], timeout_s=15)
    assert [e.code() if e else None for e in fresh.delivery_errors] == [
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    ]


def test_the_daemon_rebuilds_its_producer_for_a_rotated_certificate(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """Start on a certificate that expires in 45 s, re-issue it (new key) while running, let the
    old one expire, restart the broker so every connection is made anew: publication goes on,
    which only a producer holding the new certificate can do. No heartbeat is missed at the
    rotation itself."""
    pki = cluster.pki
    short_lived_until = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=45)
    files = pki.issue("publisher", not_after=short_lived_until, new_key=True)
    settings = {
        "bootstrap_servers": cluster.bootstrap_servers,
        "tls_ca_file": files.ca,
        "tls_cert_file": files.cert,
        "tls_key_file": files.key,
        "broker_id": 21,
        "log_dirs": tmp_path,
        "metrics_host": "127.0.0.1",
        "metrics_port": 0,
        "heartbeat_interval": f"{HEARTBEAT_SECONDS}s",
        "readiness_max_age": "6s",
        "delivery_timeout": "5s",
    }
    with InProcessDaemon(settings) as running:
        wait_for(lambda: running.daemon.readiness().healthy, 30, "readiness")
        assert running.metric("volume_quota_client_certificate_remaining_seconds") < 60

        rotated_at = dt.datetime.now(dt.UTC)
        pki.issue("publisher", new_key=True)  # one year, as cert-manager would renew it
        wait_for(
            lambda: running.metric("volume_quota_publisher_certificate_reloads_total") == 1,
            10,
            "the producer to be rebuilt",
        )
        assert running.metric("volume_quota_client_certificate_remaining_seconds") > 300 * 86400
        time.sleep(3 * HEARTBEAT_SECONDS)
        after_rotation = dt.datetime.now(dt.UTC)

        wait_for(
            lambda: dt.datetime.now(dt.UTC) > short_lived_until + dt.timedelta(seconds=2),
            60,
            "the old certificate to expire",
        )
        cluster.restart_broker(0)
        restarted = time.time()
        wait_for(
            lambda: (
                running.metric("volume_quota_last_successful_publication_timestamp_seconds")
                > restarted
            ),
            60,
            "a delivery over connections made with the new certificate",
        )
        wait_for(lambda: running.daemon.readiness().healthy, 30, "readiness after the restart")
        assert running.metric("volume_quota_publisher_certificate_reloads_total") == 1
    assert running.outcome == [0]

    read = read_whole_partition(cluster.client_config("consumer"), SNAPSHOT_TOPIC, group_id=GROUP)
    times = []
    for key, value in read.records:
        if key == b"21" and value is not None:
            snapshot = decode_snapshot(value, key)
            assert isinstance(snapshot, VolumeSnapshot)
            times.append(snapshot.snapshot_at)
    around_rotation = [
        t for t in times if rotated_at - dt.timedelta(seconds=10) <= t <= after_rotation
    ]
    assert len(around_rotation) >= 3
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(around_rotation)]
    assert max(gaps) < 2 * HEARTBEAT_SECONDS, gaps  # not one heartbeat missed
    events = [event["event"] for event in running.events()]
    assert "TLS files changed: producer rebuilt" in events
