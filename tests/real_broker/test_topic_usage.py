"""The topic usage document on a real 1-node mTLS Kafka cluster: a sidecar-style publisher
reads the broker's own log dirs (from its server.properties), and the document it publishes on
``__volume_quota_usage`` names both topics of a broker written at different rates, with the
bytes ``du`` counts for their partition dirs, within one interval; it is signed by the
publisher's certificate and decodes only as a usage document."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509

from consumer.signatures import SignatureTrust, check_signature
from local_cluster import LocalKafkaCluster, grant_sidecar_acls
from schemas.decode import decode_usage
from schemas.usage import TopicUsageDocument
from tests.publisher.daemon_harness import DaemonProcess, metric_values
from tests.support import du_bytes, partition_dirs, wait_for

from .kafka_helpers import create_topic, produce, sidecar_settings, usage_records

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]

FAST, SLOW = "vq-usage-fast", "vq-usage-slow"
INTERVAL_SECONDS = 5.0
GROUP = "volume-quota-usage-tests"


@pytest.fixture(scope="module")
def cluster(single_node_cluster: LocalKafkaCluster) -> LocalKafkaCluster:
    grant_sidecar_acls(single_node_cluster)
    admin = single_node_cluster.client_config("admin")
    create_topic(admin, FAST, partitions=3)
    create_topic(admin, SLOW, partitions=1)
    return single_node_cluster


def _write(cluster: LocalKafkaCluster, stop: threading.Event) -> None:
    """FAST gets 20x the bytes of SLOW, every half second, until ``stop``."""
    admin = cluster.client_config("admin")
    while not stop.is_set():
        produce(admin, FAST, [(b"k%d" % i, bytes(8000)) for i in range(40)])
        produce(admin, SLOW, [(b"k", bytes(16000))])
        stop.wait(0.5)


@pytest.fixture
def writer(cluster: LocalKafkaCluster) -> Iterator[threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(target=_write, args=(cluster, stop), daemon=True)
    thread.start()
    yield stop
    stop.set()
    thread.join(timeout=60)


def test_the_usage_document_names_both_topics_with_what_du_counts(
    cluster: LocalKafkaCluster, writer: threading.Event, tmp_path: Path
) -> None:
    files = cluster.broker_files(0)
    settings = sidecar_settings(cluster, 0, INTERVAL_SECONDS)
    with DaemonProcess(settings) as daemon:
        port = daemon.wait_started()
        time.sleep(3 * INTERVAL_SECONDS)  # both topics grow, at different rates
        writer.set()
        time.sleep(1.0)  # the last batches are acknowledged (acks=all) and on disk
        stopped_at = datetime.now(UTC)
        fast_du = du_bytes(*partition_dirs(files.data_dirs, FAST))
        slow_du = du_bytes(*partition_dirs(files.data_dirs, SLOW))

        def after_stop() -> list[TopicUsageDocument]:
            found = []
            for key, value, _headers in usage_records(cluster, GROUP):
                document = decode_usage(value, key)
                assert isinstance(document, TopicUsageDocument), document
                if document.surveyed_at >= stopped_at:
                    found.append(document)
            return found

        began = time.monotonic()
        wait_for(lambda: after_stop() != [], 3 * INTERVAL_SECONDS, "a usage document")
        waited = time.monotonic() - began
        assert waited <= INTERVAL_SECONDS + 10, waited
        document = after_stop()[0]
        metrics = metric_values(port)
        assert daemon.terminate()[0] == 0

    (volume,) = document.volumes
    by_topic = {topic.topic: topic for topic in volume.topics}
    fast, slow = by_topic[FAST], by_topic[SLOW]
    assert fast.partitions == 3
    assert slow.partitions == 1
    assert abs(fast.bytes - fast_du) <= 0.02 * fast_du, (fast.bytes, fast_du)
    assert abs(slow.bytes - slow_du) <= 0.02 * slow_du, (slow.bytes, slow_du)
    assert fast.bytes > 5 * slow.bytes
    assert fast.oldest_segment_at is not None
    assert fast.oldest_segment_at <= stopped_at
    assert metrics["volume_quota_usage_last_success_timestamp_seconds"] > 0
    assert metrics["volume_quota_usage_survey_duration_seconds"] > 0
    # Each published topic is a series; the one scraped right after this document is its.
    series = f'broker="0",topic="{FAST}",volume="{volume.volume_name}"'
    assert abs(metrics[f"volume_quota_topic_bytes{{{series}}}"] - fast.bytes) <= 0.1 * fast.bytes


def test_usage_records_are_signed_by_the_publisher_certificate(
    cluster: LocalKafkaCluster,
) -> None:
    records = usage_records(cluster, GROUP)
    assert records, "the previous test published usage documents"
    identity = cluster.identity_files("publisher")
    ca = x509.load_pem_x509_certificate(identity.ca.read_bytes())
    signer = x509.load_pem_x509_certificate(identity.cert.read_bytes())
    trust = SignatureTrust(ca_certificates=[ca], cluster_signers=[signer.subject.rfc4514_string()])
    key, value, headers = records[-1]
    assert check_signature(key, value, headers, trust, datetime.now(UTC)).trusted
    forged = value.replace(b'"bytes":', b'"bytes": ', 1)
    assert not check_signature(key, forged, headers, trust, datetime.now(UTC)).trusted
