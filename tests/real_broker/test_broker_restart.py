"""A 3-node combined-mode cluster keeps serving while one node is down and after it returns.

This is the end-to-end shape the volume-quota components run against; a broker restart is
the everyday disruption they must ride out.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient

from local_cluster import LocalKafkaCluster, grant_volume_quota_acls

from .kafka_helpers import (
    DEFAULT_TIMEOUT_S,
    create_topic,
    in_sync_replicas,
    produce,
    quiet,
    read_from_start,
    wait_for_topic_leaders,
)

pytestmark = pytest.mark.real_broker

TOPIC = "restart-check"
GROUP = "restart-check-reader"
# Retries across a leader change must not duplicate or reorder records.
IDEMPOTENT = {"enable.idempotence": True}


def test_cluster_serves_through_a_restart_of_the_partition_leader(
    three_node_cluster: LocalKafkaCluster,
) -> None:
    cluster = three_node_cluster
    grant_volume_quota_acls(cluster, TOPIC, consumer_group=GROUP)
    publisher = cluster.client_config("publisher")
    create_topic(publisher, TOPIC, replication=3, topic_config={"min.insync.replicas": "2"})
    leader = wait_for_topic_leaders(publisher, TOPIC)[0]
    before = [(b"before-%d" % i, b"v") for i in range(3)]
    during = [(b"during-%d" % i, b"v") for i in range(3)]
    after = [(b"after-%d" % i, b"v") for i in range(3)]

    first = produce(publisher, TOPIC, before, extra=IDEMPOTENT)
    cluster.stop_broker(leader)
    # acks=all with min.insync.replicas=2: still writable with one of three nodes down.
    second = produce(publisher, TOPIC, during, extra=IDEMPOTENT)
    cluster.start_broker(leader)
    third = produce(publisher, TOPIC, after, extra=IDEMPOTENT)
    read = read_from_start(
        cluster.client_config("consumer"),
        TOPIC,
        partitions=1,
        done=lambda so_far: len(so_far.records) >= 9,
        group_id=GROUP,
    )
    admin = AdminClient(quiet(cluster.client_config("admin")))  # must outlive its futures
    description = admin.describe_cluster(request_timeout=15).result(timeout=20)

    assert first.all_delivered, first.delivery_errors
    assert second.all_delivered, second.delivery_errors
    assert third.all_delivered, third.delivery_errors
    assert [key for key, _value in read.records] == [key for key, _v in before + during + after]
    assert sorted(node.id for node in description.nodes) == [0, 1, 2]
    assert _isr_becomes(cluster, TOPIC, [0, 1, 2]), "restarted node did not catch up"
    for index in range(3):  # every replica lives in one of the caller-chosen data dirs
        data_dirs = cluster.broker_files(index).data_dirs
        assert sum((d / f"{TOPIC}-0").is_dir() for d in data_dirs) == 1


def _isr_becomes(cluster: LocalKafkaCluster, topic: str, expected: list[int]) -> bool:
    deadline = time.monotonic() + DEFAULT_TIMEOUT_S
    while time.monotonic() < deadline:
        if sorted(in_sync_replicas(cluster.client_config("admin"), topic, 0)) == expected:
            return True
        time.sleep(0.5)
    return False
