"""The least-privilege ACLs the volume-quota publisher and consumer need, granted as admin."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

# confluent-kafka re-exports these publicly but without __all__, so mypy --strict cannot tell.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from local_cluster.broker_config import LOOPBACK
from local_cluster.cluster import LocalKafkaCluster
from local_cluster.errors import LocalClusterError
from local_cluster.probe import CLIENT_LOG

SNAPSHOT_TOPIC = "__volume_quota_snapshots"
OVERRIDE_TOPIC = "__volume_quota_overrides"
"""The operator's override topic: every decider reads it (Kafka refuses a topic without these
grants whether or not it exists, and a decider reports that as an error)."""
_OVERRIDE_READ = (AclOperation.READ, AclOperation.DESCRIBE)
USAGE_TOPIC = "__volume_quota_usage"
"""The topic usage documents a sidecar publishes beside its snapshots (schemas/usage.py)."""
_USAGE_PUBLISH = (
    AclOperation.CREATE,
    AclOperation.WRITE,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
)
"""Create the usage topic when missing, check its cleanup.policy (DescribeConfigs), write."""
PUBLISHER_PRINCIPAL = "User:publisher"
CONSUMER_PRINCIPAL = "User:consumer"
_ACL_TIMEOUT_S = 30.0


def volume_quota_acl_bindings(
    topic: str = SNAPSHOT_TOPIC,
    *,
    consumer_group: str | None = None,
    cluster_describe: bool = False,
) -> list[AclBinding]:
    """Bindings that let the publisher create and write ``topic`` (and the usage topic) and the
    consumer read them (``volume-quota status`` shows the usage documents).

    ``consumer_group`` adds READ on that group for the consumer (needed only if it commits
    offsets or subscribes). ``cluster_describe`` adds DESCRIBE on the cluster for both: not
    needed for ``AdminClient.describe_cluster()`` (Kafka answers DescribeCluster without it),
    only for ``include_authorized_operations=True`` to report the cluster's operations.
    """
    bindings = [
        _allow(ResourceType.TOPIC, topic, PUBLISHER_PRINCIPAL, operation)
        for operation in (
            AclOperation.CREATE,
            AclOperation.WRITE,
            AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS,
        )
    ]
    bindings += [
        _allow(ResourceType.TOPIC, topic, CONSUMER_PRINCIPAL, operation)
        for operation in (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS)
    ]
    bindings += allow(ResourceType.TOPIC, OVERRIDE_TOPIC, CONSUMER_PRINCIPAL, *_OVERRIDE_READ)
    bindings += allow(ResourceType.TOPIC, USAGE_TOPIC, PUBLISHER_PRINCIPAL, *_USAGE_PUBLISH)
    bindings += allow(ResourceType.TOPIC, USAGE_TOPIC, CONSUMER_PRINCIPAL, *_OVERRIDE_READ)
    if consumer_group is not None:
        bindings.append(
            _allow(ResourceType.GROUP, consumer_group, CONSUMER_PRINCIPAL, AclOperation.READ)
        )
    if cluster_describe:
        bindings += [
            _allow(ResourceType.BROKER, "kafka-cluster", principal, AclOperation.DESCRIBE)
            for principal in (PUBLISHER_PRINCIPAL, CONSUMER_PRINCIPAL)
        ]
    return bindings


def grant_volume_quota_acls(
    cluster: LocalKafkaCluster,
    topic: str = SNAPSHOT_TOPIC,
    *,
    consumer_group: str | None = None,
    cluster_describe: bool = False,
) -> None:
    """Create :func:`volume_quota_acl_bindings` on ``cluster`` as ``User:admin`` (a super user).

    Nobody else is granted anything, so any other principal (e.g. ``intruder``) is denied.
    Raises :class:`LocalClusterError` if any binding is rejected.
    """
    bindings = volume_quota_acl_bindings(
        topic, consumer_group=consumer_group, cluster_describe=cluster_describe
    )
    create_acls(cluster, bindings)


def create_acls(cluster: LocalKafkaCluster, bindings: Iterable[AclBinding]) -> None:
    """Create ACL bindings as the admin identity and wait until every running broker has them.

    CreateAcls answers once the controller has committed the bindings; each broker's authorizer
    applies them when it replays the metadata log, a moment later. A client that writes right
    after the answer can be refused by a broker that has not caught up (seen on a loaded host),
    so this returns only when every running broker lists them in DescribeAcls.
    """
    wanted = list(bindings)
    config: dict[str, Any] = {**cluster.client_config("admin"), "logger": CLIENT_LOG}
    admin = AdminClient(config)
    futures = admin.create_acls(wanted, request_timeout=_ACL_TIMEOUT_S)
    errors = []
    for binding, future in futures.items():
        try:
            future.result(timeout=_ACL_TIMEOUT_S)
        except Exception as exc:  # the future raises KafkaException or TimeoutError
            errors.append(f"{binding}: {exc}")
    if errors:
        raise LocalClusterError("creating ACLs failed: " + "; ".join(errors))
    for index in range(cluster.broker_count):
        if cluster.is_running(index):
            _wait_until_listed(cluster, index, wanted)


def _wait_until_listed(cluster: LocalKafkaCluster, index: int, wanted: list[AclBinding]) -> None:
    """Poll broker ``index`` (the only address its admin client knows at first, so librdkafka
    asks it) until its DescribeAcls lists every binding of ``wanted``."""
    address = f"{LOOPBACK}:{cluster.broker_ports(index).client}"
    config: dict[str, Any] = {
        **cluster.client_config("admin", bootstrap=address),
        "logger": CLIENT_LOG,
    }
    admin = AdminClient(config)
    deadline = time.monotonic() + _ACL_TIMEOUT_S
    missing = list(wanted)
    while True:
        missing = [binding for binding in missing if not _listed(admin, binding)]
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise LocalClusterError(
                f"broker {index} did not list {len(missing)} new ACL(s) within"
                f" {_ACL_TIMEOUT_S:.0f}s, e.g. {missing[0]}"
            )
        time.sleep(0.1)


def exact_filter(binding: AclBinding) -> AclBindingFilter:
    """The filter that matches ``binding`` and nothing else."""
    return AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


def _listed(admin: AdminClient, binding: AclBinding) -> bool:
    try:
        found = admin.describe_acls(exact_filter(binding), request_timeout=_ACL_TIMEOUT_S)
        return bool(found.result(timeout=_ACL_TIMEOUT_S))
    except Exception:  # a broker not answering yet: the caller asks again until its deadline
        return False


def allow(
    resource: ResourceType, name: str, principal: str, *operations: AclOperation
) -> list[AclBinding]:
    """ALLOW bindings for ``principal`` on the literal resource ``name``, one per operation."""
    return [_allow(resource, name, principal, operation) for operation in operations]


def _allow(
    resource: ResourceType, name: str, principal: str, operation: AclOperation
) -> AclBinding:
    return AclBinding(
        resource,
        name,
        ResourcePatternType.LITERAL,
        principal,
        "*",
        operation,
        AclPermissionType.ALLOW,
    )


def grant_sidecar_acls(
    cluster: LocalKafkaCluster,
    topic: str = SNAPSHOT_TOPIC,
    *,
    consumer_group: str = "volume-quota-consumer",
) -> None:
    """A `volume-quota sidecar` runs both roles with one identity: here ``publisher``, which is
    granted the consumer's READ on the topic and on its (never joined) group as well."""
    grant_volume_quota_acls(cluster, topic, consumer_group=consumer_group)
    create_acls(
        cluster,
        [
            _allow(ResourceType.TOPIC, topic, PUBLISHER_PRINCIPAL, AclOperation.READ),
            _allow(ResourceType.GROUP, consumer_group, PUBLISHER_PRINCIPAL, AclOperation.READ),
            *allow(ResourceType.TOPIC, OVERRIDE_TOPIC, PUBLISHER_PRINCIPAL, *_OVERRIDE_READ),
        ],
    )


def sidecar_acl_bindings(
    principal: str,
    topic: str = SNAPSHOT_TOPIC,
    *,
    consumer_group: str = "volume-quota-consumer",
) -> list[AclBinding]:
    """What :func:`grant_sidecar_acls` gives ``User:publisher``, for any ``principal`` (e.g. a
    SCRAM user's ``User:<name>``): CREATE, WRITE, READ, DESCRIBE and DESCRIBE_CONFIGS on
    ``topic``, READ on the (never joined) ``consumer_group``, READ and DESCRIBE on the
    override topic, and CREATE, WRITE, DESCRIBE and DESCRIBE_CONFIGS on the usage topic."""
    return (
        allow(
            ResourceType.TOPIC,
            topic,
            principal,
            AclOperation.CREATE,
            AclOperation.WRITE,
            AclOperation.READ,
            AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS,
        )
        + allow(ResourceType.GROUP, consumer_group, principal, AclOperation.READ)
        + allow(ResourceType.TOPIC, OVERRIDE_TOPIC, principal, *_OVERRIDE_READ)
        + allow(ResourceType.TOPIC, USAGE_TOPIC, principal, *_USAGE_PUBLISH)
    )
