"""Topic configs read once per cluster, on a real 3-broker mTLS cluster with a `volume-quota
sidecar` per broker: only the lowest broker's sidecar calls DescribeConfigs, its usage document
carries the configs (a retention change shows up there), and every sidecar knows them; when that
sidecar stops (its broker still up), broker 1's takes over after two intervals and broker 2's
still reads nothing."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclOperation,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from local_cluster import LocalKafkaCluster, grant_sidecar_acls
from local_cluster.acls import PUBLISHER_PRINCIPAL, USAGE_TOPIC, allow, create_acls
from schemas.decode import decode_usage
from schemas.usage import TopicUsageDocument
from tests.publisher.daemon_harness import DaemonProcess, metric_values
from tests.real_broker.kafka_helpers import create_topic, quiet, sidecar_settings, usage_records
from tests.support import wait_for

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(240)]

TOPIC = "vq-configs"
CONFIGS_INTERVAL_SECONDS = 5
USAGE_INTERVAL_SECONDS = 1
READS = "volume_quota_topic_config_reads_total"
AGE = "volume_quota_topic_configs_age_seconds"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("config-reads"), broker_count=3) as started:
        grant_sidecar_acls(started)
        # As the chart grants a sidecar: READ on the usage topic (its decider follows it) and
        # DESCRIBE_CONFIGS on every topic (whichever sidecar's turn it is reads them).
        create_acls(
            started,
            allow(ResourceType.TOPIC, USAGE_TOPIC, PUBLISHER_PRINCIPAL, AclOperation.READ)
            + allow(ResourceType.TOPIC, "*", PUBLISHER_PRINCIPAL, AclOperation.DESCRIBE_CONFIGS),
        )
        create_topic(
            started.client_config("admin"),
            TOPIC,
            partitions=3,
            replication=3,
            topic_config={"retention.ms": "123456"},
        )
        yield started


def sidecar(cluster: LocalKafkaCluster, broker: int, decisions: Path) -> DaemonProcess:
    settings = {
        **sidecar_settings(cluster, broker, USAGE_INTERVAL_SECONDS),
        "topic_configs_interval": f"{CONFIGS_INTERVAL_SECONDS}s",
        "decision_file": decisions / f"broker-{broker}.json",
        "soft_limit": "MinFreePercentage:0.1",
        "hard_limit": "MinFreePercentage:0.05",
    }
    return DaemonProcess(settings, command="sidecar")


def latest_documents(cluster: LocalKafkaCluster, group: str) -> dict[int, TopicUsageDocument]:
    documents: dict[int, TopicUsageDocument] = {}
    for key, value, _headers in usage_records(cluster, group):
        decoded = decode_usage(value, key)
        assert isinstance(decoded, TopicUsageDocument), decoded
        documents[decoded.broker_id] = decoded
    return documents


def retention_ms_published(cluster: LocalKafkaCluster, broker: int, group: str) -> int | None:
    document = latest_documents(cluster, group).get(broker)
    if document is None or document.topic_configs is None:
        return None
    entries = [entry for entry in document.topic_configs.topics if entry.topic == TOPIC]
    return entries[0].retention_ms if entries else None


def set_retention_ms(cluster: LocalKafkaCluster, value: str) -> None:
    admin = AdminClient(quiet(cluster.client_config("admin")))
    resource = ConfigResource(
        ResourceType.TOPIC,
        TOPIC,
        incremental_configs=[
            ConfigEntry("retention.ms", value, incremental_operation=AlterConfigOpType.SET)
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def test_one_sidecar_reads_for_the_cluster_and_the_next_takes_over(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    with ExitStack() as stack:
        sidecars = [stack.enter_context(sidecar(cluster, broker, tmp_path)) for broker in range(3)]
        ports = [daemon.wait_started(60) for daemon in sidecars]

        def metric(broker: int, name: str) -> float:
            return metric_values(ports[broker]).get(name, math.nan)

        # Every sidecar knows configs no older than the interval plus a publication.
        wait_for(
            lambda: all(metric(broker, AGE) < 3 * CONFIGS_INTERVAL_SECONDS for broker in range(3)),
            60,
            "every sidecar to know the topic configs",
        )
        wait_for(
            lambda: retention_ms_published(cluster, 0, "reads-1") == 123456,
            30,
            "broker 0's usage document to carry the topic's retention",
        )
        # In steady state only broker 0's sidecar reads. (At start, a sidecar that has seen no
        # section for `rank` intervals reads once: with a 5 s interval that can happen.)
        before = [metric(broker, READS) for broker in range(3)]
        time.sleep(3 * CONFIGS_INTERVAL_SECONDS)
        after = [metric(broker, READS) for broker in range(3)]
        assert after[0] - before[0] >= 2, (before, after)
        assert after[1:] == before[1:], (before, after)
        documents = latest_documents(cluster, "reads-2")
        assert documents[1].topic_configs is None
        assert documents[2].topic_configs is None

        set_retention_ms(cluster, "654321")
        wait_for(
            lambda: retention_ms_published(cluster, 0, "reads-3") == 654321,
            4 * CONFIGS_INTERVAL_SECONDS,
            "the changed retention to be published within an interval or two",
        )

        status, _seconds = sidecars[0].terminate()
        assert status == 0
        wait_for(
            lambda: metric(1, READS) > after[1],
            6 * CONFIGS_INTERVAL_SECONDS,
            "broker 1's sidecar to take over the reading",
        )
        wait_for(
            lambda: retention_ms_published(cluster, 1, "reads-4") == 654321,
            30,
            "broker 1's usage document to carry the configs",
        )
        assert metric(2, READS) == after[2]
        assert metric(2, AGE) < 4 * CONFIGS_INTERVAL_SECONDS
        for daemon in sidecars[1:]:
            assert daemon.terminate()[0] == 0
        assert "Traceback" not in "\n".join(line for daemon in sidecars for line in daemon.logs.raw)
