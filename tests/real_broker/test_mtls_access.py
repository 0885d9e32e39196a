"""Security of the local cluster: mTLS on every listener, CN principals, deny-by-default ACLs.

These are the guarantees the volume-quota publisher and consumer rely on in production: only
holders of a certificate from the cluster CA reach the brokers at all, and of those only the
principals with ACLs may touch the snapshot topic.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException

# confluent-kafka re-exports these publicly but without __all__, so mypy --strict cannot tell.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, grant_volume_quota_acls

from .kafka_helpers import (
    REFUSED_CLIENT_TIMEOUT_S,
    create_topic,
    kafka_api_versions_over_tls,
    produce,
    quiet,
    read_from_start,
    read_whole_partition,
    topic_metadata_error,
)

pytestmark = pytest.mark.real_broker

CONSUMER_GROUP = "volume-quota-test-consumer"
SEED = (b"seed", b"written-by-the-fixture")
"""A record every test can rely on: proves a read worked before asserting something is absent."""


@pytest.fixture(scope="module")
def cluster(single_node_cluster: LocalKafkaCluster) -> LocalKafkaCluster:
    """The 1-node cluster with the volume-quota ACLs and the compacted snapshot topic,
    created by the publisher itself (it holds CREATE on the topic, not on the cluster)."""
    grant_volume_quota_acls(single_node_cluster, consumer_group=CONSUMER_GROUP)
    create_topic(
        single_node_cluster.client_config("publisher"),
        SNAPSHOT_TOPIC,
        topic_config={"cleanup.policy": "compact"},
    )
    seeded = produce(single_node_cluster.client_config("publisher"), SNAPSHOT_TOPIC, [SEED])
    assert seeded.all_delivered, seeded.delivery_errors
    return single_node_cluster


def _marker() -> bytes:
    return uuid.uuid4().hex.encode()


def _refused_by_tls(errors: list[KafkaError]) -> bool:
    return any(e.code() == KafkaError._TRANSPORT and "SSL" in e.str() for e in errors)


def test_publisher_writes_and_consumer_reads_the_snapshot_topic(
    cluster: LocalKafkaCluster,
) -> None:
    records = [(f"volume-{i}".encode(), _marker()) for i in range(5)]

    produced = produce(cluster.client_config("publisher"), SNAPSHOT_TOPIC, records)
    read = read_from_start(
        cluster.client_config("consumer"),
        SNAPSHOT_TOPIC,
        partitions=1,
        done=lambda so_far: set(records) <= set(so_far.records),
        group_id=CONSUMER_GROUP,
    )

    assert produced.all_delivered, produced.delivery_errors
    assert set(records) <= set(read.records)
    assert read.errors == []


def test_client_without_certificate_cannot_produce(cluster: LocalKafkaCluster) -> None:
    marker = _marker()

    outcome = produce(
        cluster.client_config(None),
        SNAPSHOT_TOPIC,
        [(b"certless", marker)],
        timeout_s=REFUSED_CLIENT_TIMEOUT_S,
    )

    assert outcome.delivery_errors == [KafkaError(KafkaError._MSG_TIMED_OUT)]
    assert _refused_by_tls(outcome.client_errors), outcome.client_errors[:3]
    _assert_not_in_topic(cluster, marker)


def test_client_with_certificate_from_rogue_ca_cannot_produce(cluster: LocalKafkaCluster) -> None:
    """The rogue certificate says CN=publisher, but no broker trusts the CA that signed it."""
    marker = _marker()

    outcome = produce(
        cluster.client_config("rogue-publisher"),
        SNAPSHOT_TOPIC,
        [(b"rogue", marker)],
        timeout_s=REFUSED_CLIENT_TIMEOUT_S,
    )

    assert outcome.delivery_errors == [KafkaError(KafkaError._MSG_TIMED_OUT)]
    assert _refused_by_tls(outcome.client_errors), outcome.client_errors[:3]
    _assert_not_in_topic(cluster, marker)


def test_intruder_with_valid_certificate_is_denied_the_topic(cluster: LocalKafkaCluster) -> None:
    produced = produce(cluster.client_config("intruder"), SNAPSHOT_TOPIC, [(b"x", _marker())])
    read = read_from_start(
        cluster.client_config("intruder"),
        SNAPSHOT_TOPIC,
        partitions=1,
        done=lambda so_far: bool(so_far.records),
        group_id="intruder-group",
        timeout_s=REFUSED_CLIENT_TIMEOUT_S,
    )
    metadata_error = topic_metadata_error(cluster.client_config("intruder"), SNAPSHOT_TOPIC)

    assert [e.code() if e else None for e in produced.delivery_errors] == [
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    ]
    assert read.records == []
    assert metadata_error is not None
    assert metadata_error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_intruder_cannot_grant_itself_an_acl(cluster: LocalKafkaCluster) -> None:
    admin = AdminClient(quiet(cluster.client_config("intruder")))
    binding = AclBinding(
        ResourceType.TOPIC,
        SNAPSHOT_TOPIC,
        ResourcePatternType.LITERAL,
        "User:intruder",
        "*",
        AclOperation.ALL,
        AclPermissionType.ALLOW,
    )

    future = admin.create_acls([binding], request_timeout=15)[binding]

    with pytest.raises(KafkaException) as denied:
        future.result(timeout=20)
    assert denied.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.parametrize("listener", ["client", "internal", "controller"])
def test_every_listener_demands_a_certificate_from_the_cluster_ca(
    cluster: LocalKafkaCluster, listener: str
) -> None:
    """No port is a way around mTLS, including the inter-broker and controller listeners."""
    port = getattr(cluster.broker_ports(0), listener)
    ca = cluster.pki.ca_cert
    admin = cluster.identity_files("admin")
    rogue = cluster.identity_files("rogue-publisher")

    assert kafka_api_versions_over_tls(port, ca, admin.cert, admin.key)
    assert not kafka_api_versions_over_tls(port, ca)
    assert not kafka_api_versions_over_tls(port, ca, rogue.cert, rogue.key)


def test_intruder_is_denied_on_the_inter_broker_listener_too(cluster: LocalKafkaCluster) -> None:
    """ACLs apply on the replication listener as well: it grants no extra rights."""
    internal = f"127.0.0.1:{cluster.broker_ports(0).internal}"

    produced = produce(
        cluster.client_config("intruder", bootstrap=internal), SNAPSHOT_TOPIC, [(b"x", b"y")]
    )

    assert [e.code() if e else None for e in produced.delivery_errors] == [
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    ]


@pytest.mark.parametrize("identity", ["publisher", "consumer"])
def test_describe_cluster_needs_no_cluster_acl(cluster: LocalKafkaCluster, identity: str) -> None:
    """Kafka answers DescribeCluster without DESCRIBE on the cluster, so
    grant_volume_quota_acls does not grant it by default."""
    admin = AdminClient(quiet(cluster.client_config(identity)))

    description = admin.describe_cluster(request_timeout=15).result(timeout=20)

    assert [node.id for node in description.nodes] == [0]


def test_consumer_without_group_acl_is_told_so(cluster: LocalKafkaCluster) -> None:
    """librdkafka looks up the group coordinator even with manual assignment, so a consumer
    whose group.id has no READ ACL gets GROUP_AUTHORIZATION_FAILED (but can still read)."""
    read = read_from_start(
        cluster.client_config("consumer"),
        SNAPSHOT_TOPIC,
        partitions=1,
        done=lambda so_far: SEED in so_far.records and bool(so_far.errors),
        group_id="a-group-without-acl",
    )

    assert SEED in read.records
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in [e.code() for e in read.errors]


def test_rotated_certificate_is_accepted_and_expired_one_refused(
    cluster: LocalKafkaCluster,
) -> None:
    now = dt.datetime.now(dt.UTC)
    rotated = cluster.pki.issue("publisher", not_after=now + dt.timedelta(days=3), new_key=True)
    expired = cluster.pki.issue("expired-client", not_after=now - dt.timedelta(minutes=5))
    port = cluster.broker_ports(0).client

    produced = produce(cluster.client_config("publisher"), SNAPSHOT_TOPIC, [(b"k", _marker())])

    assert produced.all_delivered, produced.delivery_errors
    assert kafka_api_versions_over_tls(port, rotated.ca, rotated.cert, rotated.key)
    assert not kafka_api_versions_over_tls(port, expired.ca, expired.cert, expired.key)


def _assert_not_in_topic(cluster: LocalKafkaCluster, marker: bytes) -> None:
    read = read_whole_partition(
        cluster.client_config("consumer"), SNAPSHOT_TOPIC, group_id=CONSUMER_GROUP
    )
    assert read.errors == []
    assert SEED in read.records
    assert marker not in read.values
