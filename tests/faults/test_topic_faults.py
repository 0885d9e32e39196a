"""Issue 14's fault matrix, snapshot-topic faults, on a real cluster.

The same cluster shape as test_process_faults.py (tests/faults/process_harness.py): three
brokers with the quota callback, one `volume-quota sidecar` each (identity ``publisher``,
stale-after 10 s). Each test takes the snapshot topic away in one way while everything runs -
its ACLs revoked, the topic deleted, the topic recreated with the wrong cleanup policy - and
asserts what every broker's decision must be, that no sidecar dies, and that the cluster comes
back once the topic is right again; the figures go to ``Figures``.

Covered elsewhere and not repeated: a publisher refusing at start a topic whose cleanup.policy
is not compact (tests/real_broker/test_publisher_daemon.py::
test_a_topic_with_the_wrong_cleanup_policy_stops_the_publisher), a principal without READ never
becoming ready (tests/real_broker/test_consumer_decision_loop.py::
test_a_principal_without_read_acl_never_becomes_ready), an intruder refused
(tests/real_broker/test_publisher_daemon.py::test_an_intruder_cannot_publish_and_the_daemon_says_so).
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclOperation,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from prometheus_client.parser import text_string_to_metric_families

from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, allow
from local_cluster.acls import create_acls
from publisher.topic_requirements import TopicRequirements
from schemas.decision import QuotaState
from tests.e2e.cluster_harness import wait_for
from tests.faults.process_harness import (
    BROKERS,
    STALE_AFTER_S,
    TOPIC_RECHECK_S,
    FaultCluster,
    describe,
    fault_cluster,
    revoke_acls,
)
from tests.real_broker.kafka_helpers import quiet

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.real_broker,
    pytest.mark.real_fs,
    pytest.mark.timeout(600),
]

SIDECAR = "User:publisher"
EARLIEST_FAIL_SAFE_S = STALE_AFTER_S - 3 - 0.5
"""The newest snapshot is at most a heartbeat plus a sample interval (3 s) old when the fault
starts; staleness counts from its snapshotAt."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultCluster]:
    with fault_cluster(tmp_path_factory.mktemp("topic-faults")) as running:
        yield running


@pytest.fixture
def healthy(cluster: FaultCluster) -> FaultCluster:
    return cluster.restore_health()


def admin(kafka: LocalKafkaCluster) -> AdminClient:
    return AdminClient(quiet(kafka.client_config("admin")))


def topic_exists(kafka: LocalKafkaCluster) -> bool:
    client = admin(kafka)  # a client must outlive its requests
    metadata = client.list_topics(SNAPSHOT_TOPIC, timeout=10)
    topic = metadata.topics.get(SNAPSHOT_TOPIC)
    return topic is not None and topic.error is None and bool(topic.partitions)


def topic_id(kafka: LocalKafkaCluster) -> str | None:
    """The snapshot topic's id, None while it does not exist: a topic deleted and recreated by a
    publisher between two looks has a new id."""
    client = admin(kafka)
    future = client.describe_topics(TopicCollection([SNAPSHOT_TOPIC]), request_timeout=10)
    try:
        return str(future[SNAPSHOT_TOPIC].result(timeout=10).topic_id)
    except KafkaException as error:
        if error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise


def delete_topic(kafka: LocalKafkaCluster) -> str | None:
    """Delete the snapshot topic; returns once it is gone or already recreated (the running
    publishers recheck every TOPIC_RECHECK_S and may recreate it before a look sees it gone).
    Returns the deleted topic's id."""
    deleted = topic_id(kafka)
    client = admin(kafka)
    futures = client.delete_topics([SNAPSHOT_TOPIC], operation_timeout=30)
    futures[SNAPSHOT_TOPIC].result(timeout=30)
    wait_for(
        "the topic to be gone or recreated", lambda: topic_id(kafka) != deleted, 30, interval_s=0.5
    )
    return deleted


def create_topic(kafka: LocalKafkaCluster, config: dict[str, str]) -> None:
    """Create the snapshot topic as an operator would: one partition, three replicas."""
    topic = NewTopic(SNAPSHOT_TOPIC, num_partitions=1, replication_factor=BROKERS, config=config)
    client = admin(kafka)
    futures = client.create_topics([topic], request_timeout=30)
    futures[SNAPSHOT_TOPIC].result(timeout=30)
    wait_for("the topic to exist", lambda: topic_exists(kafka), 30, interval_s=0.5)


def set_cleanup_policy(kafka: LocalKafkaCluster, policy: str) -> None:
    resource = ConfigResource(
        ResourceType.TOPIC,
        SNAPSHOT_TOPIC,
        incremental_configs=[
            ConfigEntry("cleanup.policy", policy, incremental_operation=AlterConfigOpType.SET)
        ],
    )
    client = admin(kafka)
    futures = client.incremental_alter_configs([resource])
    for future in futures.values():
        future.result(timeout=30)


def cleanup_policy(kafka: LocalKafkaCluster) -> str:
    resource = ConfigResource(ResourceType.TOPIC, SNAPSHOT_TOPIC)
    client = admin(kafka)
    entries = client.describe_configs([resource])[resource].result(timeout=30)
    return str(entries["cleanup.policy"].value)


def sidecar_events(cluster: FaultCluster, index: int) -> list[str]:
    """The events of sidecar ``index``'s JSON log lines."""
    events = []
    for line in cluster.sidecars[index].log_file.read_text().splitlines():
        try:
            events.append(str(json.loads(line).get("event")))
        except ValueError:
            continue  # a librdkafka or Python line that is not ours
    return events


def test_revoked_acls_fail_safe_everywhere_and_restored_acls_reopen(
    healthy: FaultCluster,
) -> None:
    """Every ACL the sidecars' principal holds on the snapshot topic is revoked while they run:
    no snapshot can be written or read, so every broker must fail safe (all three unknown),
    no sidecar may die, and once the ACLs are back every broker must OPEN again by itself."""
    cluster = healthy
    bindings = allow(
        ResourceType.TOPIC,
        SNAPSHOT_TOPIC,
        SIDECAR,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.CREATE,
    )
    start = time.monotonic()
    revoke_acls(cluster.kafka, bindings)
    try:
        wait_for("the fail-safe PAUSE on every broker", cluster.all_fail_safe, STALE_AFTER_S + 30)
        # From the revoke request, not its answer: the controller applies the deletion before
        # it answers, and on a loaded host the answer came seconds later.
        to_fail_safe = time.monotonic() - start
        cluster.figures.record("acl_revoked.seconds_to_fail_safe", to_fail_safe)
        assert to_fail_safe >= EARLIEST_FAIL_SAFE_S, "a fail-safe before any snapshot was stale"
        assert all(sidecar.running for sidecar in cluster.sidecars)
    finally:
        create_acls(cluster.kafka, bindings)
    cluster.figures.record(
        "acl_revoked.seconds_to_all_open_after_restore",
        cluster.wait_all_open("every broker OPEN once the ACLs are back", timeout_s=90),
    )
    cluster.assert_only_open_or_fail_safe(range(BROKERS), start)
    assert all(sidecar.running for sidecar in cluster.sidecars)


def sidecar_port(cluster: FaultCluster, index: int) -> int:
    """The HTTP port sidecar ``index`` logged (it listens on port 0: any free port)."""
    for line in cluster.sidecars[index].log_file.read_text().splitlines():
        with contextlib.suppress(ValueError):
            fields = json.loads(line)
            if fields.get("event") == "http endpoints serving":
                return int(fields["port"])
    raise AssertionError(f"sidecar {index} logged no HTTP port")


def misconfigured_gauge(cluster: FaultCluster, index: int) -> float | None:
    """volume_quota_publisher_topic_misconfigured on sidecar ``index``'s /metrics."""
    url = f"http://127.0.0.1:{sidecar_port(cluster, index)}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        if family.name == "volume_quota_publisher_topic_misconfigured":
            return float(family.samples[0].value)
    return None


def test_a_deleted_topic_is_recreated_by_the_running_publishers(healthy: FaultCluster) -> None:
    """The snapshot topic is deleted under the running sidecars. The publishers (create_topic on,
    the default) recreate it, compacted, at their next topic recheck; no sidecar dies and every
    broker is OPEN again without any restart. Meanwhile a broker's decision is OPEN or the
    fail-safe PAUSE, never anything else (whether the fail-safe is reached depends on whether
    the topic is back before stale-after: recorded, not asserted)."""
    cluster = healthy
    pids = [sidecar.process.pid for sidecar in cluster.sidecars if sidecar.process is not None]
    start = time.monotonic()
    deleted = delete_topic(cluster.kafka)
    fail_safe_seen = False

    def recreated() -> bool:
        nonlocal fail_safe_seen
        fail_safe_seen = fail_safe_seen or cluster.all_fail_safe()
        return topic_exists(cluster.kafka) and topic_id(cluster.kafka) not in (None, deleted)

    to_recreated = wait_for(
        "the publishers to recreate the topic", recreated, TOPIC_RECHECK_S + 15, interval_s=0.5
    )
    cluster.figures.record("topic_deleted.seconds_to_recreated_by_the_publishers", to_recreated)
    assert cleanup_policy(cluster.kafka) == "compact"
    cluster.figures.record(
        "topic_deleted.seconds_to_all_open",
        cluster.wait_all_open("every broker OPEN on the recreated topic", timeout_s=90)
        + to_recreated,
    )
    cluster.figures.record("topic_deleted.every_broker_failed_safe_meanwhile", fail_safe_seen)
    assert [s.process.pid for s in cluster.sidecars if s.process is not None] == pids, (
        "a sidecar restarted"
    )
    cluster.assert_only_open_or_fail_safe(range(BROKERS), start)


MISCONFIGURATION_NOTICED_S = TOPIC_RECHECK_S + 10.0
"""How soon a running sidecar must notice a recreated topic's wrong cleanup policy."""


def recreate_with_policy_delete(kafka: LocalKafkaCluster) -> str:
    """Delete the topic and recreate it with cleanup.policy=delete, as an operator might. A
    publisher's recheck may recreate it (compacted) in between: then its policy is changed to
    delete instead, which leaves the same topic state. Returns which happened."""
    delete_topic(kafka)
    try:
        create_topic(kafka, {**TopicRequirements().creation_config(), "cleanup.policy": "delete"})
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
        set_cleanup_policy(kafka, "delete")
        return "recreated by a publisher first, then set to delete"
    return "recreated with cleanup.policy=delete"


def test_a_topic_recreated_with_the_wrong_cleanup_policy_is_reported(
    healthy: FaultCluster,
) -> None:
    """The topic is deleted and at once recreated with cleanup.policy=delete (retention would
    delete a silent broker's last breach). A publisher that starts refuses such a topic (exit 2);
    a running one must report it within MISCONFIGURATION_NOTICED_S (event "topic
    misconfigured", /metrics volume_quota_publisher_topic_misconfigured 1) and go on publishing,
    so every broker stays OPEN. Once the policy is fixed the report clears."""
    cluster = healthy
    pids = [sidecar.process.pid for sidecar in cluster.sidecars if sidecar.process is not None]
    start = time.monotonic()
    cluster.figures.record("topic_wrong_policy.how", recreate_with_policy_delete(cluster.kafka))
    assert cleanup_policy(cluster.kafka) == "delete"
    to_noticed = wait_for(
        "every sidecar to report the wrong cleanup.policy",
        lambda: all(
            misconfigured_gauge(cluster, index) == 1.0
            and "topic misconfigured" in sidecar_events(cluster, index)
            for index in range(BROKERS)
        ),
        MISCONFIGURATION_NOTICED_S,
        interval_s=0.5,
    )
    cluster.figures.record("topic_wrong_policy.seconds_to_reported_by_every_sidecar", to_noticed)
    cluster.figures.record(
        "topic_wrong_policy.states_while_reported",
        " ".join(describe(decision) for decision in cluster.decisions()),
    )
    cluster.wait_all_open("every broker OPEN while the policy is wrong", timeout_s=60)
    set_cleanup_policy(cluster.kafka, "compact")
    to_cleared = wait_for(
        "every sidecar to clear the report",
        lambda: all(misconfigured_gauge(cluster, index) == 0.0 for index in range(BROKERS)),
        MISCONFIGURATION_NOTICED_S,
        interval_s=0.5,
    )
    cluster.figures.record("topic_wrong_policy.seconds_to_cleared_after_fix", to_cleared)
    assert [s.process.pid for s in cluster.sidecars if s.process is not None] == pids, (
        "a sidecar restarted"
    )
    cluster.assert_only_open_or_fail_safe(range(BROKERS), start)


def test_the_sidecars_cannot_delete_the_topic_and_it_ends_compacted(healthy: FaultCluster) -> None:
    """Deleting the topic takes an operator: the sidecars' own principal is refused. And what
    the faults above leave behind is a compacted topic with every broker OPEN."""
    cluster = healthy
    assert cleanup_policy(cluster.kafka) == "compact"
    assert cluster.all_in(QuotaState.OPEN)
    sidecar_admin = AdminClient(quiet(cluster.kafka.client_config("publisher")))
    deletion = sidecar_admin.delete_topics([SNAPSHOT_TOPIC], operation_timeout=10)
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        deletion[SNAPSHOT_TOPIC].result(timeout=20)
    assert topic_exists(cluster.kafka)
