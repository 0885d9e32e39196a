"""The local cluster's harness API for code outside its own tests: client identities with
least-privilege ACLs, broker process ids, brokers with the quota callback, children that die
with their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AclOperation  # type: ignore[attr-defined]

from local_cluster import LocalClusterError, LocalKafkaCluster
from local_cluster.clients import client_acl_bindings, issue_client
from local_cluster.processes import broker_pid, die_with_parent
from local_cluster.quota_callback import CALLBACK_CLASS, callback_cluster, callback_properties
from tests.support import wait_for

from .kafka_helpers import create_topic, produce

pytestmark = pytest.mark.real_broker


def test_an_issued_client_writes_its_topic_and_nothing_else(
    single_node_cluster: LocalKafkaCluster,
) -> None:
    create_topic(single_node_cluster.client_config("admin"), "app-a-topic")
    create_topic(single_node_cluster.client_config("admin"), "someone-elses")
    files = issue_client(single_node_cluster, "app-a", topics_write=["app-a-topic"])
    assert files.keystore.exists()
    config = single_node_cluster.client_config("app-a")
    own = produce(config, "app-a-topic", [(b"k", b"v")])
    assert own.all_delivered, own.delivery_errors
    other = produce(config, "someone-elses", [(b"k", b"v")], timeout_s=10)
    assert not other.all_delivered
    assert any(
        error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        for error in other.delivery_errors
    ), other


def test_reserved_names_are_refused(single_node_cluster: LocalKafkaCluster) -> None:
    for name in ("admin", "publisher", "rogue-x", "broker-0"):
        with pytest.raises(LocalClusterError):
            issue_client(single_node_cluster, name)


def test_acl_bindings_are_exactly_what_was_asked() -> None:
    bindings = client_acl_bindings("app-b", topics_write=["t1"], topics_read=["t2"])
    assert [(b.name, b.operation, b.principal) for b in bindings] == [
        ("t1", AclOperation.WRITE, "User:app-b"),
        ("t2", AclOperation.READ, "User:app-b"),
    ]


def test_broker_pid_is_the_brokers_jvm(single_node_cluster: LocalKafkaCluster) -> None:
    pid = broker_pid(single_node_cluster, 0)
    assert pid is not None
    assert b"kafka.Kafka" in Path(f"/proc/{pid}/cmdline").read_bytes()
    with pytest.raises(LocalClusterError):
        broker_pid(single_node_cluster, 1)


def test_a_stopped_broker_has_no_pid(tmp_path: Path) -> None:
    cluster = LocalKafkaCluster(tmp_path / "never-started")
    assert broker_pid(cluster, 0) is None


def test_callback_properties_carry_the_rates_and_the_jar_is_a_parameter(tmp_path: Path) -> None:
    properties = callback_properties(
        tmp_path / "d.json", base_bytes_per_second=4096, pause_bytes_per_second=1024
    )
    assert properties["client.quota.callback.class"] == CALLBACK_CLASS
    assert properties["volume.quota.produce.base.bytes.per.second"] == "4096"
    assert properties["volume.quota.pause.bytes.per.second"] == "1024"
    with pytest.raises(LocalClusterError):
        callback_properties(tmp_path / "d.json", base_bytes_per_second=1, pause_bytes_per_second=2)
    with pytest.raises(LocalClusterError, match="missing"):
        callback_cluster(
            tmp_path, [tmp_path / "d.json"], tmp_path / "no.jar",
            base_bytes_per_second=4096, pause_bytes_per_second=1024,
        )  # fmt: skip


def test_a_child_dies_with_its_parent(tmp_path: Path) -> None:
    """The parent is killed with SIGKILL (no cleanup runs); the kernel still ends the child."""
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import pathlib, time
                from local_cluster.processes import start_child
                log = pathlib.Path({str(tmp_path / "c.log")!r})
                child = start_child(["sleep", "300"], log_file=log)
                pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))
                time.sleep(300)
            """),
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        wait_for(pid_file.exists, 30, "the child to start")
        child = int(pid_file.read_text())
        assert die_with_parent(["x"])[0].endswith("setpriv")
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        wait_for(lambda: not _alive(child), 10, "the child to die with its parent")
    finally:
        parent.kill()
        parent.wait()


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return status != "Z"
