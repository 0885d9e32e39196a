"""Ordinary client principals for the local cluster: a certificate and least-privilege ACLs.

The built-in identities (``publisher``, ``consumer``, ``admin``...) serve volume-quota itself;
tests and benchmarks that act as applications issue their own, e.g. a producer allowed to
write one topic and nothing else::

    files = issue_client(cluster, "app-a", topics_write=["orders"])
    producer = confluent_kafka.Producer(cluster.client_config("app-a"))
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from local_cluster.acls import create_acls
from local_cluster.cluster import LocalKafkaCluster
from local_cluster.errors import LocalClusterError
from local_cluster.pki import CLIENT_IDENTITIES, ROGUE_PREFIX, IdentityFiles


def client_acl_bindings(
    name: str,
    *,
    topics_write: Iterable[str] = (),
    topics_read: Iterable[str] = (),
    groups_read: Iterable[str] = (),
) -> list[AclBinding]:
    """ALLOW bindings for ``User:<name>``: WRITE on ``topics_write`` (Kafka lets WRITE imply
    DESCRIBE, which is all a producer needs, with or without idempotence since KIP-679),
    READ on ``topics_read`` and on ``groups_read`` (a consumer group)."""
    principal = f"User:{name}"
    wanted = [(ResourceType.TOPIC, topic, AclOperation.WRITE) for topic in topics_write]
    wanted += [(ResourceType.TOPIC, topic, AclOperation.READ) for topic in topics_read]
    wanted += [(ResourceType.GROUP, group, AclOperation.READ) for group in groups_read]
    return [
        AclBinding(
            kind,
            resource,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            operation,
            AclPermissionType.ALLOW,
        )
        for kind, resource, operation in wanted
    ]


def issue_client(
    cluster: LocalKafkaCluster,
    name: str,
    *,
    topics_write: Iterable[str] = (),
    topics_read: Iterable[str] = (),
    groups_read: Iterable[str] = (),
    extra_bindings: Iterable[AclBinding] = (),
) -> IdentityFiles:
    """Issue a client certificate with CN ``name`` (principal ``User:<name>``) from the
    cluster CA and grant it exactly these ACLs, as ``admin``, on the running ``cluster``.

    Use :meth:`LocalKafkaCluster.client_config` or ``java_client_config`` with ``name``
    afterwards. An identity that exists already keeps its key and gets a fresh certificate;
    the built-in identities and ``rogue-*`` names are refused (their meaning is fixed).
    Raises :class:`LocalClusterError` if the name is invalid or a binding is rejected.
    """
    if name in CLIENT_IDENTITIES or name.startswith(ROGUE_PREFIX) or name.startswith("broker-"):
        raise LocalClusterError(f"{name!r} is reserved: pick another client name")
    files = cluster.pki.issue(name)
    bindings = [
        *client_acl_bindings(
            name, topics_write=topics_write, topics_read=topics_read, groups_read=groups_read
        ),
        *extra_bindings,
    ]
    if bindings:
        create_acls(cluster, bindings)
    return files
