"""The brokers the cluster says are alive, from the Admin client (shell)."""

from __future__ import annotations

from typing import Any, Protocol


class AdminClient(Protocol):
    def describe_cluster(self, **kwargs: Any) -> Any: ...


def describe_live_brokers(admin: AdminClient, timeout_seconds: float = 5.0) -> frozenset[int]:
    """Broker ids from DescribeCluster; raises if the cluster does not answer in time."""
    future = admin.describe_cluster(request_timeout=timeout_seconds)
    description = future.result(timeout=timeout_seconds + 1)
    return frozenset(int(node.id) for node in description.nodes)
