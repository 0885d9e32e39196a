"""volume-quota's three compacted topics, created as ``User:admin`` the way an operator creates
them before the sidecars start (deploy/systemd/README.md step 4, the Helm chart's ACL Job,
deploy/strimzi/topics.yaml), each with its record size capped.

The cap (``max.message.bytes``, the largest record batch the broker appends to the topic):
every consumer refuses a document over 1 MiB before parsing it (``schemas.decode``'s
``MAX_MESSAGE_BYTES``), and 1 MiB holds the largest snapshot the schema allows (1024 volumes)
at any realistic name length, so no legitimate record's value is larger. On top of the value a
record carries its key (a broker id), the two signature headers (``vq-signature``, at most
512 bytes for RSA-4096, and ``vq-signer``, the DER certificate, about 1-2 KiB) and the batch
framing (61 bytes plus a few per record): 32 KiB of margin covers them with room for a
certificate many times the usual size. Without the cap a topic inherits the broker's
``message.max.bytes``, which clusters often raise far above 1 MiB for their own traffic.
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

from local_cluster.acls import OVERRIDE_TOPIC, SNAPSHOT_TOPIC
from local_cluster.cluster import LocalKafkaCluster
from local_cluster.errors import LocalClusterError

DECISIONS_TOPIC = "__volume_quota_decisions"
LARGEST_DOCUMENT_BYTES = 1024 * 1024
"""The largest value any reader accepts (``schemas.decode.MAX_MESSAGE_BYTES``)."""
RECORD_OVERHEAD_MARGIN_BYTES = 32 * 1024
"""Key, signature headers and record batch framing on top of the value."""
TOPIC_MAX_MESSAGE_BYTES = LARGEST_DOCUMENT_BYTES + RECORD_OVERHEAD_MARGIN_BYTES
"""1081344: ``max.message.bytes`` of every volume-quota topic."""

_DAY_MS = "86400000"
_HOUR_MS = "3600000"
TOPIC_CONFIGS: Mapping[str, Mapping[str, str]] = {
    # The settings the sidecar, the cluster agent and `volume-quota override` create them with
    # (publisher/topic_requirements.py), plus the cap.
    SNAPSHOT_TOPIC: {
        "cleanup.policy": "compact",
        "min.compaction.lag.ms": _DAY_MS,
        "segment.ms": _HOUR_MS,
        "delete.retention.ms": _DAY_MS,
        "max.message.bytes": str(TOPIC_MAX_MESSAGE_BYTES),
    },
    DECISIONS_TOPIC: {
        "cleanup.policy": "compact",
        "min.compaction.lag.ms": _HOUR_MS,
        "segment.ms": _HOUR_MS,
        "delete.retention.ms": _DAY_MS,
        "max.message.bytes": str(TOPIC_MAX_MESSAGE_BYTES),
    },
    OVERRIDE_TOPIC: {
        "cleanup.policy": "compact",
        "min.compaction.lag.ms": _DAY_MS,
        "segment.ms": _HOUR_MS,
        "delete.retention.ms": _DAY_MS,
        "max.message.bytes": str(TOPIC_MAX_MESSAGE_BYTES),
        # Every record stamped with the broker's clock: a decider refuses an override whose
        # setAt is far from it (written to take effect later, or an old one written again).
        "message.timestamp.type": "LogAppendTime",
    },
}
_TIMEOUT_S = 30.0


def create_volume_quota_topics(cluster: LocalKafkaCluster, *, replication_factor: int = -1) -> None:
    """Create the three topics (one partition each) as ``User:admin``. A topic that exists
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
