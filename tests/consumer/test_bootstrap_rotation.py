"""Which broker a rebuilt client bootstraps from."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from consumer.bootstrap_rotation import ClusterView, cluster_view, next_bootstrap


def test_the_view_is_read_from_librdkafka_metadata() -> None:
    metadata = SimpleNamespace(
        brokers={
            0: SimpleNamespace(host="kafka-0.kafka", port=9093),
            2: SimpleNamespace(host="kafka-2.kafka", port=9093),
        },
        topics={"snapshots": SimpleNamespace(partitions={0: SimpleNamespace(leader=2)})},
    )
    view = cluster_view(metadata, "snapshots")
    assert view == ClusterView({0: "kafka-0.kafka:9093", 2: "kafka-2.kafka:9093"}, frozenset({2}))
    assert cluster_view(metadata, "other").leaders == frozenset()


def test_a_partition_without_a_leader_names_none() -> None:
    metadata = SimpleNamespace(
        brokers={}, topics={"t": SimpleNamespace(partitions={0: SimpleNamespace(leader=-1)})}
    )
    assert cluster_view(metadata, "t") == ClusterView({}, frozenset())


def test_no_broker_known_gives_no_address() -> None:
    assert next_bootstrap(ClusterView({}, frozenset()), 0) is None


@given(
    brokers=st.sets(st.integers(0, 20), min_size=1, max_size=8),
    leaders=st.sets(st.integers(0, 20), max_size=3),
    start=st.integers(0, 100),
)
def test_turns_visit_every_non_leader_and_never_a_leader_while_one_is_left(
    brokers: set[int], leaders: set[int], start: int
) -> None:
    view = ClusterView({b: f"b{b}:9093" for b in brokers}, frozenset(leaders))
    followers = {f"b{b}:9093" for b in brokers - leaders}
    expected = followers or {f"b{b}:9093" for b in brokers}
    visited = {next_bootstrap(view, turn) for turn in range(start, start + len(expected))}
    assert visited == expected
