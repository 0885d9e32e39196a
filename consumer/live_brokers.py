"""The brokers the cluster says are alive, from the Admin client (shell).

Asked with a metadata request, which any broker answers with the brokers the controller
considers alive (fenced brokers are left out). DescribeCluster would give the same set, but
librdkafka sends it to the controller it last knew of: measured in the end-to-end suite, when
that broker was the one stopped, DescribeCluster timed out ("waiting for controller") for the
whole minute the broker was away, and the consumer kept a stopped broker in its live set.
"""

from __future__ import annotations

from typing import Any, Protocol


class AdminClient(Protocol):
    def list_topics(self, topic: str | None = ..., timeout: float = ...) -> Any: ...


def describe_live_brokers(
    admin: AdminClient, topic: str | None = None, timeout_seconds: float = 5.0
) -> frozenset[int]:
    """Ids of the live brokers; raises if no broker answers in time.

    ``topic`` limits the answer to one topic's metadata (the snapshot topic) so a cluster with
    thousands of topics does not send them all every few seconds.
    """
    metadata = admin.list_topics(topic=topic, timeout=timeout_seconds)
    return frozenset(int(broker_id) for broker_id in metadata.brokers)
