"""``volume-quota status --incoming`` on a real 3-broker mTLS cluster: a topic of a few MiB on
brokers 0 and 1 is reassigned to add broker 2 under a replication throttle, so the copy stays in
flight; ``status`` shows the bytes still to come on broker 2's volume, as much as the partition
holds minus what broker 2 has copied, with the reassignment named. Once the throttle is lifted
and the reassignment completes, nothing is incoming and broker 2's sidecar measures the topic's
bytes on its volume. An identity without DESCRIBE on the cluster gets the reason, not a
traceback."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclOperation,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition

from local_cluster import LocalKafkaCluster, grant_sidecar_acls, issue_client
from local_cluster.acls import OVERRIDE_TOPIC, SNAPSHOT_TOPIC, USAGE_TOPIC, allow
from tests.publisher.daemon_harness import DaemonProcess
from tests.real_broker.kafka_helpers import (
    produce,
    quiet,
    sidecar_settings,
    volume_quota_command,
    wait_for_topic_leaders,
)
from tests.support import wait_for

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(240)]

TOPIC = "vq-incoming"
RECORD_BYTES = 64 * 1024
RECORDS = 96
"""6 MiB of records on brokers 0 and 1."""
THROTTLE_BYTES_PER_SECOND = 40_000
"""Broker 2 copies about 40 kB/s: the 6 MiB stay in flight for minutes unless lifted."""
OPERATOR = "status-incoming"
NO_CLUSTER_DESCRIBE = "status-no-cluster"
THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("incoming"), broker_count=3) as started:
        grant_sidecar_acls(started)
        topics = [SNAPSHOT_TOPIC, OVERRIDE_TOPIC, USAGE_TOPIC]
        groups = ["volume-quota-consumer"]
        issue_client(
            started,
            OPERATOR,
            topics_read=topics,
            groups_read=groups,
            extra_bindings=allow(
                ResourceType.BROKER, "kafka-cluster", f"User:{OPERATOR}", AclOperation.DESCRIBE
            ),
        )
        issue_client(started, NO_CLUSTER_DESCRIBE, topics_read=topics, groups_read=groups)
        yield started


@pytest.fixture(scope="module")
def sidecars(cluster: LocalKafkaCluster) -> Iterator[None]:
    """A publisher per broker: snapshots for status, and topic usage every 2 s."""
    with ExitStack() as stack:
        daemons = [
            stack.enter_context(DaemonProcess(sidecar_settings(cluster, broker, 2)))
            for broker in range(3)
        ]
        for daemon in daemons:
            daemon.wait_started()
        yield


def kafka_python_admin(cluster: LocalKafkaCluster) -> KafkaAdminClient:
    files = cluster.identity_files("admin")
    return KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers.split(","),
        security_protocol="SSL",
        ssl_cafile=str(files.ca),
        ssl_certfile=str(files.cert),
        ssl_keyfile=str(files.key),
        ssl_check_hostname=False,
        request_timeout_ms=10000,
    )


def alter(cluster: LocalKafkaCluster, resources: list[ConfigResource]) -> None:
    admin = AdminClient(quiet(cluster.client_config("admin")))
    for resource in resources:  # one broker resource per call
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)


def set_throttle(cluster: LocalKafkaCluster, on: bool) -> None:
    operation = AlterConfigOpType.SET if on else AlterConfigOpType.DELETE
    value = str(THROTTLE_BYTES_PER_SECOND) if on else None
    alter(
        cluster,
        [
            ConfigResource(
                ResourceType.BROKER,
                str(broker),
                incremental_configs=[
                    ConfigEntry(name, value, incremental_operation=operation)
                    for name in THROTTLE_RATES
                ],
            )
            for broker in range(3)
        ],
    )


def run_status(cluster: LocalKafkaCluster, identity: str, *extra: str) -> str:
    result = subprocess.run(
        volume_quota_command(cluster, identity, "status", "--incoming", "--timeout=30", *extra),
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def partition_sizes(admin: KafkaAdminClient) -> dict[int, int]:
    """Broker -> bytes of the topic's partition 0 in its (current) replica."""
    sizes = {}
    for answer in admin.describe_log_dirs(topic_partitions=[TOPIC], brokers=[0, 1, 2]):
        for log_dir in answer["log_dirs"]:
            for topic in log_dir["topics"]:
                for partition in topic["partitions"]:
                    if topic["name"] == TOPIC and not partition["is_future_key"]:
                        sizes[int(answer["broker"])] = int(partition["partition_size"])
    return sizes


def throttle_replicas(cluster: LocalKafkaCluster) -> None:
    """The copy to broker 2 throttled at both ends (as kafka-reassign-partitions --throttle
    sets it)."""
    set_throttle(cluster, on=True)
    alter(
        cluster,
        [
            ConfigResource(
                ResourceType.TOPIC,
                TOPIC,
                incremental_configs=[
                    ConfigEntry(
                        "leader.replication.throttled.replicas",
                        "0:0,0:1",
                        incremental_operation=AlterConfigOpType.SET,
                    ),
                    ConfigEntry(
                        "follower.replication.throttled.replicas",
                        "0:2",
                        incremental_operation=AlterConfigOpType.SET,
                    ),
                ],
            )
        ],
    )


def fill_topic_on_brokers_0_and_1(cluster: LocalKafkaCluster) -> None:
    admin_config = cluster.client_config("admin")
    admin = AdminClient(quiet(admin_config))
    created = admin.create_topics(
        [NewTopic(TOPIC, 1, replica_assignment=[[0, 1]], config={"segment.bytes": "1048576"})]
    )
    created[TOPIC].result(timeout=30)
    wait_for_topic_leaders(admin_config, TOPIC)
    records = [(b"k%d" % i, bytes(RECORD_BYTES)) for i in range(RECORDS)]
    assert produce(admin_config, TOPIC, records).all_delivered


def test_a_throttled_reassignment_shows_as_incoming_until_it_lands(
    cluster: LocalKafkaCluster, sidecars: None
) -> None:
    started = time.monotonic()
    fill_topic_on_brokers_0_and_1(cluster)
    admin = kafka_python_admin(cluster)
    try:
        size = max(partition_sizes(admin).values())
        assert sorted(partition_sizes(admin)) == [0, 1]
        assert size >= RECORDS * RECORD_BYTES
        throttle_replicas(cluster)
        admin.alter_partition_reassignments({TopicPartition(TOPIC, 0): [0, 1, 2]})
        (moving,) = admin.list_partition_reassignments().values()
        assert moving["adding_replicas"] == [2]

        document = json.loads(run_status(cluster, OPERATOR, "--json"))
        assert admin.list_partition_reassignments(), "the reassignment landed before status read"
        copied = partition_sizes(admin).get(2, 0)
        (entry,) = document["incoming"]
        broker_2_volume = next(row for row in document["volumes"] if row["brokerId"] == 2)
        assert entry["brokerId"] == 2
        assert entry["volumeName"] == broker_2_volume["volumeName"]
        (move,) = entry["moves"]
        assert (move["kind"], move["topic"], move["partition"]) == ("reassignment", TOPIC, 0)
        assert move["sourceBroker"] in (0, 1)
        # what broker 2 still has to copy: the partition, less what it copied by then
        assert size - copied <= entry["incomingBytes"] <= size
        assert entry["incomingBytes"] >= size // 2
        assert entry["stateAfter"] == "OPEN"
        assert entry["freeAfterBytes"] == broker_2_volume["freeBytes"] - entry["incomingBytes"]

        table = run_status(cluster, OPERATOR)
        incoming_line = next(line for line in table.splitlines() if "incoming:" in line)
        assert incoming_line.startswith(f"broker 2 volume {broker_2_volume['volumeName']}: ")
        assert f"reassignment of {TOPIC}-0 from broker {move['sourceBroker']}" in incoming_line
        print(table)

        refused = run_status(cluster, NO_CLUSTER_DESCRIBE)
        assert "incoming: not known: not authorized to describe the cluster" in refused

        set_throttle(cluster, on=False)
        wait_for(lambda: not admin.list_partition_reassignments(), 60, "the reassignment to land")
        landed = partition_sizes(admin)[2]
        assert landed >= size

        def measured_on_broker_2() -> dict[str, Any] | None:
            shown = json.loads(run_status(cluster, OPERATOR, "--json", "--topics"))
            for volume in shown["topics"]:
                for topic in volume.get("topics", []):
                    ours = volume["brokerId"] == 2 and topic["topic"] == TOPIC
                    if ours and topic["bytes"] >= landed:
                        return dict(shown)
            return None

        wait_for(lambda: measured_on_broker_2() is not None, 60, "broker 2's survey of the topic")
        after = measured_on_broker_2()
        assert after is not None
        assert after["incoming"] == []
        assert "incoming: nothing" in run_status(cluster, OPERATOR)
    finally:
        admin.close()
    print(f"incoming test took {time.monotonic() - started:.1f}s")
