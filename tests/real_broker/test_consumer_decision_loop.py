"""The consumer's decision loop against a real mTLS broker: the topic, the Admin client, ACLs."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry

from consumer.clock import SystemClock
from consumer.cluster_state import ClusterState
from consumer.consumer_metrics import ConsumerMetrics
from consumer.decision_service import DecisionService, LoopTiming
from consumer.live_brokers import describe_live_brokers
from consumer.policy import DecisionPolicy
from consumer.snapshot_topic_reader import SnapshotTopicReader
from local_cluster import LocalKafkaCluster, grant_volume_quota_acls
from schemas.decision import QuotaDecision, QuotaState
from tests.snapshot_factory import snapshot_line, volume

from .kafka_helpers import create_topic, produce, quiet

pytestmark = pytest.mark.real_broker

TOPIC = "__volume_quota_snapshots_consumer_test"
GROUP = "volume-quota-consumer"


@pytest.fixture(scope="module")
def cluster(single_node_cluster: LocalKafkaCluster) -> LocalKafkaCluster:
    grant_volume_quota_acls(single_node_cluster, topic=TOPIC, consumer_group=GROUP)
    create_topic(
        single_node_cluster.client_config("publisher"),
        TOPIC,
        partitions=3,
        topic_config={"cleanup.policy": "compact"},
    )
    return single_node_cluster


def publish(cluster: LocalKafkaCluster, records: list[tuple[bytes, bytes | None]]) -> None:
    outcome = produce(cluster.client_config("publisher"), TOPIC, records)  # type: ignore[arg-type]
    assert outcome.all_delivered, outcome.delivery_errors


def snapshot(broker_id: int, free: int, at: datetime) -> tuple[bytes, bytes]:
    value = snapshot_line(broker_id=broker_id, volumes=[volume("v", 1000, 1000 - free)], at=at)
    return str(broker_id).encode(), value


def service_as(
    cluster: LocalKafkaCluster, identity: str
) -> tuple[DecisionService, CollectorRegistry]:
    config = quiet(cluster.client_config(identity))

    def make_consumer(settings: Mapping[str, Any]) -> Consumer:
        return Consumer(dict(settings))

    reader = SnapshotTopicReader(make_consumer, {**config, "group.id": GROUP}, TOPIC)
    admin = AdminClient(config)
    registry = CollectorRegistry()
    service = DecisionService(
        ClusterState(DecisionPolicy(stale_after_seconds=300)),
        source=reader,
        live_brokers=lambda: describe_live_brokers(admin, TOPIC),
        clock=SystemClock(),
        sink=lambda decision: None,
        metrics=ConsumerMetrics(registry),
        timing=LoopTiming(poll_timeout_seconds=0.2),
    )
    return service, registry


def step_until(service: DecisionService, done: Any, timeout_s: float = 30.0) -> QuotaDecision:
    deadline = time.monotonic() + timeout_s
    decision = service.step()
    while not done(decision):
        assert time.monotonic() < deadline, f"gave up waiting; last decision: {decision}"
        decision = service.step()
    return decision


def test_reads_history_learns_live_brokers_and_follows_new_snapshots(
    cluster: LocalKafkaCluster,
) -> None:
    now = datetime.now(UTC)
    # The single node's id is 0; broker 5 is gone but its last word was "full".
    publish(cluster, [snapshot(0, 900, now), snapshot(5, 50, now), snapshot(5, 60, now)])
    service, registry = service_as(cluster, "consumer")
    decision = step_until(service, lambda _: service.ready)
    assert service.state.live_brokers == frozenset({0})
    assert decision.state is QuotaState.PAUSE, "a non-live broker's breach keeps counting"
    assert decision.reasons[0].broker_id == 5
    assert decision.reasons[0].broker_live is False

    publish(cluster, [(b"5", None), (b"3", b"{not json")])  # retire broker 5; one bad message
    step_until(service, lambda d: d.state is QuotaState.OPEN)
    step_until(
        service,
        lambda _: (
            registry.get_sample_value(
                "volume_quota_invalid_messages_total", {"reason": "malformed_json"}
            )
            == 1
        ),
    )

    publish(cluster, [snapshot(0, 150, now + timedelta(seconds=1))])
    throttled = step_until(service, lambda d: d.state is QuotaState.THROTTLE)
    assert throttled.throttle_factor == pytest.approx(0.5)


def test_a_principal_without_read_acl_never_becomes_ready(cluster: LocalKafkaCluster) -> None:
    service, registry = service_as(cluster, "intruder")
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        decision = service.step()
        assert decision.state is QuotaState.PAUSE
        assert not service.ready
    errors = registry.get_sample_value("volume_quota_snapshot_topic_errors_total")
    assert errors is not None
    assert errors >= 1
