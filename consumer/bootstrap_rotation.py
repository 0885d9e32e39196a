"""Choosing the broker a rebuilt Kafka client bootstraps from (pure).

A partition leader cut off from its peers keeps answering clients with its own, stale metadata
("I lead") after the controller moved the leadership: a client that asks it keeps fetching from
it (nothing arrives) or producing to it (every delivery times out). A client rebuilt from a
*different* broker learns the new leader, with a newer leader epoch, so the stale answer no
longer wins. The snapshot reader and the publisher's producer both rebuild this way
(tests/faults, a broker cut off from its peers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What one metadata answer said: every broker's advertised ``host:port`` by id, and the
    brokers leading the topic's partitions."""

    brokers: Mapping[int, str]
    leaders: frozenset[int]


def cluster_view(metadata: Any, topic: str) -> ClusterView:
    """The view in a librdkafka ``ClusterMetadata`` (``brokers``, ``topics[topic].partitions``)."""
    brokers = {
        int(broker_id): f"{broker.host}:{broker.port}"
        for broker_id, broker in (getattr(metadata, "brokers", None) or {}).items()
    }
    topic_metadata = (getattr(metadata, "topics", None) or {}).get(topic)
    partitions = getattr(topic_metadata, "partitions", None) or {}
    leaders = frozenset(
        int(partition.leader)
        for partition in partitions.values()
        if getattr(partition, "leader", -1) >= 0
    )
    return ClusterView(brokers, leaders)


def next_bootstrap(view: ClusterView, turn: int) -> str | None:
    """The address to bootstrap from on the ``turn``-th rebuild (0, 1, ...): in turn, by broker
    id, among the brokers that did not lead (all of them when every broker led), so repeated
    rebuilds try every candidate. None when no broker is known."""
    ordered = sorted(view.brokers.items())
    candidates = [address for broker, address in ordered if broker not in view.leaders]
    candidates = candidates or [address for _, address in ordered]
    return candidates[turn % len(candidates)] if candidates else None
