"""Fixtures for tests against a real, mTLS-secured Kafka cluster started by ``local_cluster``.

Each cluster fixture is module-scoped: starting JVMs is the slow part, so a module starts its
cluster once and every test in it shares that cluster. Leaving the ``with`` block stops the
brokers even when a test fails.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from local_cluster import LocalKafkaCluster


@pytest.fixture(scope="module")
def single_node_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    """One combined broker+controller node: enough for security behaviour."""
    with LocalKafkaCluster(tmp_path_factory.mktemp("kafka-1-node"), broker_count=1) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def three_node_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    """Three combined nodes: the end-to-end shape, which keeps quorum while one restarts.

    Each node gets two data dirs outside its home, the way the volume-quota tests place them
    on separate (tmpfs) volumes.
    """
    volumes = tmp_path_factory.mktemp("volumes")
    log_dirs = [[volumes / f"node-{i}-vol-a", volumes / f"node-{i}-vol-b"] for i in range(3)]
    base_dir = tmp_path_factory.mktemp("kafka-3-node")
    with LocalKafkaCluster(base_dir, broker_count=3, log_dirs=log_dirs) as cluster:
        yield cluster
