"""On a real cluster: the operator's emergency switch reaches every decider within seconds,
expires by itself, can be cleared early, and only the operator's identity may set it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclOperation,
    AdminClient,
    NewTopic,
    ResourceType,
)

from local_cluster import (
    SNAPSHOT_TOPIC,
    LocalKafkaCluster,
    allow,
    grant_volume_quota_acls,
    issue_client,
)
from local_cluster.acls import create_acls
from schemas.override import DEFAULT_OVERRIDE_TOPIC
from tests.snapshot_factory import snapshot_line, volume
from tests.support import wait_for
from volume_quota.config import load_settings
from volume_quota.daemons.decider import DecideDaemon

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]

SEEN_WITHIN_SECONDS = 10.0
"""From the command's return; the first override ever also waits for the deciders to find
the new topic (they look every 2 s)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("override"), broker_count=1) as started:
        grant_volume_quota_acls(started, consumer_group="volume-quota-consumer")
        started.pki.issue("operator")
        admin = AdminClient(started.client_config("admin"))
        topic = NewTopic(SNAPSHOT_TOPIC, 1, 1, config={"cleanup.policy": "compact"})
        admin.create_topics([topic])[SNAPSHOT_TOPIC].result(30)
        bindings = allow(
            ResourceType.TOPIC,
            DEFAULT_OVERRIDE_TOPIC,
            "User:operator",
            AclOperation.CREATE,
            AclOperation.WRITE,
            AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS,
        ) + allow(
            ResourceType.TOPIC,
            DEFAULT_OVERRIDE_TOPIC,
            "User:consumer",
            AclOperation.READ,
            AclOperation.DESCRIBE,
        )
        create_acls(started, bindings)
        # Broker 0 is under its hard limit: the rule says PAUSE.
        producer = Producer(started.client_config("publisher"))
        value = snapshot_line(broker_id=0, volumes=[volume("v", 1000, 990)], at=datetime.now(UTC))
        producer.produce(SNAPSHOT_TOPIC, key=b"0", value=value)
        assert producer.flush(30) == 0
        yield started


def decider(cluster: LocalKafkaCluster, identity: str, decision_file: Path) -> DecideDaemon:
    files = cluster.identity_files(identity)
    settings = load_settings(
        {
            "bootstrap_servers": cluster.bootstrap_servers,
            "tls_ca_file": str(files.ca),
            "tls_cert_file": str(files.cert),
            "tls_key_file": str(files.key),
            "tls_verify_hostname": False,
            "decision_file": str(decision_file),
            "stale_after": "1h",  # the one snapshot above stays fresh for the test
            "live_broker_refresh_interval": "1s",
        }
    )
    return DecideDaemon(settings, serve_http=False)


@pytest.fixture
def decision_files(cluster: LocalKafkaCluster, tmp_path: Path) -> Iterator[list[Path]]:
    """Two deciders, as two brokers' sidecars would run them."""
    stop = threading.Event()
    paths = [tmp_path / f"broker-{index}.json" for index in range(2)]
    threads = []
    for path in paths:
        daemon = decider(cluster, "consumer", path)
        thread = threading.Thread(target=daemon.run, args=(stop,), daemon=True)
        thread.start()
        threads.append(thread)
    yield paths
    stop.set()
    for thread in threads:
        thread.join(timeout=15)


def states(paths: list[Path]) -> list[tuple[str, str]]:
    """(state, first reason's kind) of each decision file; ("", "") while one is missing."""
    found = []
    for path in paths:
        try:
            decision = json.loads(path.read_text())
        except (OSError, ValueError):
            return [("", "")]
        reasons = decision.get("reasons") or [{}]
        found.append((decision["state"], reasons[0].get("kind", "")))
    return found


def all_are(paths: list[Path], state: str, kind: str) -> Callable[[], bool]:
    return lambda: states(paths) == [(state, kind)] * len(paths)


def override(
    cluster: LocalKafkaCluster, identity: str, *arguments: str
) -> subprocess.CompletedProcess[str]:
    """The command as an operator runs it, in its own process."""
    files = cluster.identity_files(identity)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "volume_quota",
            "override",
            *arguments,
            f"--bootstrap-servers={cluster.bootstrap_servers}",
            f"--tls-ca-file={files.ca}",
            f"--tls-cert-file={files.cert}",
            f"--tls-key-file={files.key}",
            "--no-tls-verify-hostname",
            "--delivery-timeout=10s",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_set_seen_by_every_decider_then_expired_then_cleared_early(
    cluster: LocalKafkaCluster, decision_files: list[Path]
) -> None:
    wait_for(all_are(decision_files, "PAUSE", "limit"), 60, "PAUSE by the rule")

    result = override(cluster, "operator", "--state=OPEN", "--for=10s", "--reason=drill")
    started = time.monotonic()
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["setBy"] == "operator"
    wait_for(all_are(decision_files, "OPEN", "override"), SEEN_WITHIN_SECONDS, "OPEN by override")
    seen = time.monotonic() - started

    wait_for(all_are(decision_files, "PAUSE", "limit"), 20, "the override expires")
    expired = time.monotonic() - started
    assert expired >= 10 - 3  # not before its time (less the command's own run time)

    result = override(cluster, "operator", "--state=OPEN", "--for=10m", "--reason=again")
    assert result.returncode == 0, result.stderr
    again = time.monotonic()
    wait_for(all_are(decision_files, "OPEN", "override"), SEEN_WITHIN_SECONDS, "OPEN by override")
    seen_again = time.monotonic() - again
    assert override(cluster, "operator", "--clear").returncode == 0
    cleared_at = time.monotonic()
    wait_for(all_are(decision_files, "PAUSE", "limit"), SEEN_WITHIN_SECONDS, "cleared early")
    print(
        f"first override seen in {seen:.1f}s, expired after {expired:.1f}s, second seen in "
        f"{seen_again:.1f}s, clear seen in {time.monotonic() - cleared_at:.1f}s"
    )


def test_a_publisher_cannot_set_an_override(cluster: LocalKafkaCluster) -> None:
    result = override(cluster, "publisher", "--state=OPEN", "--for=1m", "--reason=mine")
    assert result.returncode == 1
    assert "override not written" in result.stderr


def test_a_decider_refused_the_override_topic_says_so_and_decides_by_the_rule(
    cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    # Every ACL a decider needs but the override topic's: Kafka answers "authorization failed"
    # whether or not an override exists, so this is an error to show, not "no override".
    issue_client(
        cluster,
        "decider-without-overrides",
        topics_read=[SNAPSHOT_TOPIC],
        groups_read=["volume-quota-consumer"],
    )
    path = tmp_path / "decision.json"
    daemon = decider(cluster, "decider-without-overrides", path)
    stop = threading.Event()
    thread = threading.Thread(target=daemon.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(all_are([path], "PAUSE", "limit"), 60, "PAUSE by the rule")
        wait_for(lambda: not daemon.readiness().healthy, 10, "readiness failing")
        (problem,) = daemon.readiness().problems
        assert "not allowed to read the override topic" in problem
        denied = daemon.registry.get_sample_value("volume_quota_override_topic_access_denied")
        assert denied == 1
    finally:
        stop.set()
        thread.join(timeout=15)
