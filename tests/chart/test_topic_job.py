"""The chart's topic step (create-topics.sh in the ACL Job's ConfigMap), run as the Job runs it:
Kafka's own kafka-topics.sh and kafka-configs.sh (the tools of deploy/local's Kafka version)
against a real mTLS cluster (local_cluster), as its admin. Each topic ends up with the record
size cap local_cluster gives it (tests/supply_chain/test_topic_record_cap.py shows the broker
enforcing it), whether the script creates it or finds it created without the cap."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from local_cluster import (
    SNAPSHOT_TOPIC,
    TOPIC_CONFIGS,
    TOPIC_MAX_MESSAGE_BYTES,
    LocalKafkaCluster,
    ensure_kafka_jars,
    topic_config,
)
from tests.chart.chart_tools import RELEASE, Manifest, container, env_values, find
from tests.systemd.kafka_host import kafka_tools_jar_dir

pytestmark = pytest.mark.real_broker

FULLNAME = f"{RELEASE}-volume-quota"
OVERRIDE_TOPIC = "__volume_quota_overrides"
EARLIER_TOPIC = "created-before-the-job"
SCRIPT_TIMEOUT_S = 300
TOOLS = {
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs.sh": "kafka.admin.ConfigCommand",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("kafka-topic-job"), broker_count=1) as cluster:
        yield cluster


def kafka_home(root: Path) -> Path:
    """$KAFKA_HOME/bin with the two tools, launched from the cached jars."""
    libs, tools = ensure_kafka_jars(), kafka_tools_jar_dir()
    bin_dir = root / "kafka" / "bin"
    bin_dir.mkdir(parents=True)
    for name, main_class in TOOLS.items():
        launcher = bin_dir / name
        launcher.write_text(
            "#!/bin/sh\n"
            "exec java ${KAFKA_HEAP_OPTS:--Xmx256m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \\\n"
            f'    -cp "{libs}/*:{tools}/*" {main_class} "$@"\n'
        )
        launcher.chmod(0o755)
    return bin_dir.parent


def run_topic_script(
    manifests: list[Manifest],
    cluster: LocalKafkaCluster,
    root: Path,
    env_overrides: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    script = find(manifests, "ConfigMap", f"{FULLNAME}-acls")["data"]["create-topics.sh"]
    scratch, tls = root / "scratch", root / "admin-tls"
    scratch.mkdir(parents=True)
    tls.mkdir()
    admin = cluster.identity_files("admin")
    shutil.copy(admin.key, tls / "tls.key")
    shutil.copy(admin.cert, tls / "tls.crt")
    shutil.copy(cluster.pki.ca_cert, tls / "ca.crt")
    script = script.replace("/tmp/", f"{scratch}/").replace("/etc/kafka/admin-tls", str(tls))
    job = find(manifests, "Job")["spec"]["template"]["spec"]
    env = {
        "PATH": os.environ["PATH"],
        **env_values(container(job, "grant-acls")),
        "KAFKA_HOME": str(kafka_home(root)),
        "BOOTSTRAP_SERVERS": cluster.bootstrap_servers,
        "RETRY_INTERVAL_SECONDS": "1",
        **(env_overrides or {}),
    }
    return subprocess.run(
        ["bash", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=SCRIPT_TIMEOUT_S,
    )


def test_the_job_caps_the_topics_as_local_cluster_does(default_manifests: list[Manifest]) -> None:
    job = find(default_manifests, "Job")["spec"]["template"]["spec"]
    assert env_values(container(job, "grant-acls"))["MAX_MESSAGE_BYTES"] == str(
        TOPIC_MAX_MESSAGE_BYTES
    )
    command = " ".join(container(job, "grant-acls")["command"])
    assert command.index("create-topics.sh &&") < command.index("grant-acls.sh")


def test_the_job_creates_both_topics_as_local_cluster_does(
    default_manifests: list[Manifest], cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    completed = run_topic_script(default_manifests, cluster, tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for topic in (SNAPSHOT_TOPIC, OVERRIDE_TOPIC):
        assert TOPIC_CONFIGS[topic].items() <= topic_config(cluster, topic).items(), topic
    again = run_topic_script(default_manifests, cluster, tmp_path / "again")
    assert again.returncode == 0, again.stdout + again.stderr


def test_the_job_caps_a_topic_created_before_it(
    default_manifests: list[Manifest], cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    # As `volume-quota override` (or a sidecar) would have created it: no cap of its own.
    admin = AdminClient(cluster.client_config("admin"))
    uncapped = NewTopic(EARLIER_TOPIC, 1, 1, config={"cleanup.policy": "compact"})
    admin.create_topics([uncapped], request_timeout=30)[EARLIER_TOPIC].result(timeout=30)
    assert topic_config(cluster, EARLIER_TOPIC)["max.message.bytes"] != str(TOPIC_MAX_MESSAGE_BYTES)
    completed = run_topic_script(
        default_manifests, cluster, tmp_path, {"OVERRIDE_TOPIC": EARLIER_TOPIC}
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert topic_config(cluster, EARLIER_TOPIC)["max.message.bytes"] == str(TOPIC_MAX_MESSAGE_BYTES)
