"""On a real cluster: `volume-quota cluster-agent` with exactly the ACLs its help lists.

It measures the brokers through the Admin API, publishes their snapshots, decides, and writes
each decision to the decisions topic, where a callback would read it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AdminClient,
    NewTopic,
    ResourceType,
)

from consumer.decision_topic import DecisionTopicWriter
from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, allow
from local_cluster.acls import create_acls
from schemas.decision import QuotaDecision, QuotaState
from tests.support import HOST_DISK_LIMITS, REPOSITORY, wait_for

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]

DECISIONS_TOPIC = "__volume_quota_decisions"
OVERRIDE_TOPIC = "__volume_quota_overrides"
USAGE_TOPIC = "__volume_quota_usage"
GROUP = "volume-quota-consumer"


def allow_agent(resource: ResourceType, name: str, *operations: AclOperation) -> list[AclBinding]:
    return allow(resource, name, "User:agent", *operations)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("agent"), broker_count=1) as started:
        started.pki.issue("agent")
        operations = AclOperation
        bindings = (
            allow_agent(
                ResourceType.TOPIC,
                SNAPSHOT_TOPIC,
                operations.READ,
                operations.WRITE,
                operations.CREATE,
                operations.DESCRIBE,
                operations.DESCRIBE_CONFIGS,
            )
            + allow_agent(
                ResourceType.TOPIC,
                DECISIONS_TOPIC,
                operations.WRITE,
                operations.CREATE,
                operations.DESCRIBE,
                operations.DESCRIBE_CONFIGS,
            )
            + allow_agent(ResourceType.TOPIC, OVERRIDE_TOPIC, operations.READ, operations.DESCRIBE)
            + allow_agent(
                ResourceType.TOPIC,
                USAGE_TOPIC,
                operations.READ,
                operations.WRITE,
                operations.CREATE,
                operations.DESCRIBE,
                operations.DESCRIBE_CONFIGS,
            )
            + allow_agent(ResourceType.GROUP, GROUP, operations.READ)
            + allow_agent(ResourceType.BROKER, "kafka-cluster", operations.DESCRIBE)
        )
        create_acls(started, bindings)
        yield started


def newest_decision(cluster: LocalKafkaCluster) -> dict[str, object] | None:
    consumer = Consumer({**cluster.client_config("admin"), "group.id": "test-decisions"})
    try:
        try:
            _low, high = consumer.get_watermark_offsets(
                TopicPartition(DECISIONS_TOPIC, 0), timeout=10
            )
        except KafkaException:
            return None  # not created yet
        if high == 0:
            return None
        consumer.assign([TopicPartition(DECISIONS_TOPIC, 0, high - 1)])
        for _ in range(20):
            for message in consumer.consume(1, timeout=0.5):
                if message.error() is None and message.key() == b"cluster":
                    decision: dict[str, object] = json.loads(message.value() or b"null")
                    return decision
        return None
    finally:
        consumer.close()


def agent_command(cluster: LocalKafkaCluster, *extra: str) -> list[str]:
    files = cluster.identity_files("agent")
    return [
        sys.executable,
        "-m",
        "volume_quota",
        "cluster-agent",
        f"--bootstrap-servers={cluster.bootstrap_servers}",
        f"--tls-ca-file={files.ca}",
        f"--tls-cert-file={files.cert}",
        f"--tls-key-file={files.key}",
        "--no-tls-verify-hostname",
        "--survey-interval=1s",
        "--metrics-port=0",
        "--topic-replication-factor=1",
        *(f"--{name.replace('_', '-')}={value}" for name, value in HOST_DISK_LIMITS.items()),
        *extra,
    ]


def test_the_agent_publishes_decides_and_writes_decisions_with_least_privilege(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    agent = subprocess.Popen(
        agent_command(cluster),
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "agent.log").open("w"),
        # (the log is printed below when the test fails)
    )
    try:
        decisions: list[dict[str, object]] = []

        def decided_open() -> bool:
            decision = newest_decision(cluster)
            if decision is not None:
                decisions.append(decision)
            return decision is not None and decision["state"] == "OPEN"

        started = time.monotonic()
        try:
            wait_for(decided_open, 90, "an OPEN decision on the decisions topic")
        except AssertionError:
            print((tmp_path / "agent.log").read_text()[-4000:])
            raise
        print(f"first OPEN decision after {time.monotonic() - started:.1f}s")
        schema = json.loads((REPOSITORY / "schemas/quota-decision.schema.json").read_text())
        jsonschema.validate(decisions[-1], schema)
        assert decisions[-1]["unknownBrokers"] == []
    finally:
        agent.send_signal(signal.SIGTERM)
        status = agent.wait(timeout=30)
    log = (tmp_path / "agent.log").read_text()
    assert status == 0, log[-2000:]
    assert "Traceback" not in log


def test_a_decisions_topic_with_several_partitions_is_refused_at_start(
    cluster: LocalKafkaCluster,
) -> None:
    # The callbacks read partition 0 only; the key "cluster" hashes to partition 1 of three, so
    # an agent that wrote there would leave every broker without a decision: PAUSE for good.
    topic = "__volume_quota_decisions_three"
    admin = AdminClient(cluster.client_config("admin"))
    new_topic = NewTopic(topic, 3, 1, config={"cleanup.policy": "compact"})
    admin.create_topics([new_topic])[topic].result(30)
    bindings = allow_agent(
        ResourceType.TOPIC,
        topic,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
    )
    create_acls(cluster, bindings)
    result = subprocess.run(
        agent_command(cluster, f"--decisions-topic={topic}"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"topic {topic} has 3 partitions" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_decision_writer_writes_partition_0_whatever_the_partitioner(
    cluster: LocalKafkaCluster,
) -> None:
    # Partitions added to a running agent's topic are reported at the next recheck; until an
    # operator acts, the callbacks (partition 0) must still see every decision.
    topic = "__volume_quota_decisions_grown"
    admin = AdminClient(cluster.client_config("admin"))
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    moment = datetime.now(UTC)
    decision = QuotaDecision(
        decided_at=moment,
        valid_until=moment,
        state=QuotaState.OPEN,
        throttle_factor=1.0,
        caused_by_missing_data=False,
        reasons=[],
    )
    writer = DecisionTopicWriter(cluster.client_config("admin"), topic, 30.0)
    try:
        for _ in range(5):
            writer.write(decision)
    finally:
        writer.close()
    consumer = Consumer({**cluster.client_config("admin"), "group.id": "test-partition-0"})
    try:
        offsets = [
            consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
            for partition in range(3)
        ]
    finally:
        consumer.close()
    assert offsets == [5, 0, 0]
