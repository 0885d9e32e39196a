"""volume-quota's three compacted topics, created as ``User:admin`` the way an operator creates
them before the sidecars start (deploy/systemd/README.md step 4, the Helm chart's ACL Job,
deploy/strimzi/topics.yaml), with the settings volume-quota itself creates them with
(``publisher.topic_requirements``), their records capped at ``schemas.decode.MAX_RECORD_BYTES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from local_cluster.acls import OVERRIDE_TOPIC, SNAPSHOT_TOPIC, USAGE_TOPIC
from local_cluster.cluster import LocalKafkaCluster
from local_cluster.errors import LocalClusterError
from publisher.topic_requirements import TopicRequirements
from schemas.decode import MAX_RECORD_BYTES
from volume_quota.one_shot import OverrideTopicRequirements

DECISIONS_TOPIC = "__volume_quota_decisions"
TOPIC_MAX_MESSAGE_BYTES = MAX_RECORD_BYTES
"""1081344: ``max.message.bytes`` of every volume-quota topic."""

TOPIC_CONFIGS: Mapping[str, Mapping[str, str]] = {
    SNAPSHOT_TOPIC: TopicRequirements(name=SNAPSHOT_TOPIC).creation_config(),
    # As the cluster agent creates it (volume_quota/commands/cluster_agent.py).
    DECISIONS_TOPIC: TopicRequirements(
        name=DECISIONS_TOPIC, min_compaction_lag_seconds=3600.0, single_partition=True
    ).creation_config(),
    # Every record stamped with the broker's clock: a decider refuses an override whose setAt
    # is far from it (written to take effect later, or an old one written again).
    OVERRIDE_TOPIC: OverrideTopicRequirements(name=OVERRIDE_TOPIC).creation_config(),
    # As a sidecar or the cluster agent creates it (PublishSettings.usage_topic_requirements):
    # only each broker's latest usage document matters.
    USAGE_TOPIC: TopicRequirements(
        name=USAGE_TOPIC, min_compaction_lag_seconds=0.0
    ).creation_config(),
}
_TIMEOUT_S = 30.0


def create_volume_quota_topics(cluster: LocalKafkaCluster, *, replication_factor: int = -1) -> None:
    """Create the four topics (one partition each) as ``User:admin``. A topic that exists
    already, e.g. created by a sidecar, gets the cap set (the other settings are its creator's).
    Idempotent."""
    admin = AdminClient(cluster.client_config("admin"))
    new_topics = [
        NewTopic(name, num_partitions=1, replication_factor=replication_factor, config=dict(config))
        for name, config in TOPIC_CONFIGS.items()
    ]
    existing = []
    for name, future in admin.create_topics(new_topics, request_timeout=_TIMEOUT_S).items():
        try:
            future.result(timeout=_TIMEOUT_S + 1)
        except KafkaException as error:
            if _code(error) != KafkaError.TOPIC_ALREADY_EXISTS:
                raise LocalClusterError(f"creating topic {name} failed: {error}") from error
            existing.append(name)
    if existing:
        cap_topics(cluster, existing)


def cap_topics(cluster: LocalKafkaCluster, names: list[str]) -> None:
    """Set ``max.message.bytes`` to :data:`TOPIC_MAX_MESSAGE_BYTES` on existing topics."""
    admin = AdminClient(cluster.client_config("admin"))
    resources = [
        ConfigResource(
            ResourceType.TOPIC,
            name,
            incremental_configs=[
                ConfigEntry(
                    "max.message.bytes",
                    str(TOPIC_MAX_MESSAGE_BYTES),
                    incremental_operation=AlterConfigOpType.SET,
                )
            ],
        )
        for name in names
    ]
    futures = admin.incremental_alter_configs(resources, request_timeout=_TIMEOUT_S)
    for resource, future in futures.items():
        try:
            future.result(timeout=_TIMEOUT_S + 1)
        except KafkaException as error:
            raise LocalClusterError(f"capping topic {resource.name} failed: {error}") from error


def topic_config(cluster: LocalKafkaCluster, name: str) -> dict[str, str]:
    """The topic's effective configuration as the brokers report it."""
    admin = AdminClient(cluster.client_config("admin"))
    resource = ConfigResource(ResourceType.TOPIC, name)
    entries: Mapping[str, Any] = admin.describe_configs([resource])[resource].result(
        timeout=_TIMEOUT_S
    )
    return {key: str(entry.value) for key, entry in entries.items()}


def _code(error: KafkaException) -> object:
    return error.args[0].code() if error.args else None
