"""Decision file faults on a real broker: the file deleted, truncated, overwritten with garbage,
and its filesystem turned read-only under a running sidecar.

One Kafka node whose quota callback reads the sidecar's decision file; the file's directory is a
tmpfs of its own, so it can be remounted read-only.

What must happen (docs/broker-plugin.md "The decision file", docs/architecture.md):
- a missing, truncated or unparseable file is no decision: the callback applies its on-missing
  action (PAUSE) at its next read, keeps the broker serving, and applies the sidecar's next
  write again (the sidecar rewrites an unchanged decision every validity/3);
- a file the sidecar cannot replace (read-only filesystem) keeps its last decision, which the
  callback applies until its validUntil and then treats as missing (PAUSE); the sidecar logs
  the failure, counts it and fails /readyz, and writes again once it can.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, grant_sidecar_acls
from schemas.decision import QuotaState
from tests.e2e.cluster_harness import (
    STALE_AFTER_S,
    CallbackLog,
    callback_properties,
    read_decision,
    require_plugin_jar,
    wait_for,
)
from tests.faults.data_harness import (
    Daemon,
    Figures,
    compacted_topic,
    create_topic,
    daemon,
    is_open,
    wait_for_decision,
)
from tests.real_broker.kafka_helpers import produce
from tests.real_fs.real_mounts import Mounts

pytestmark = [pytest.mark.real_broker, pytest.mark.real_fs]

FIGURES = Figures()
REFRESH_S = max(1.0, STALE_AFTER_S / 3)
"""How often the sidecar rewrites an unchanged decision (validity / 3)."""


@dataclass
class FileCluster:
    kafka: LocalKafkaCluster
    decisions: Path
    decision_file: Path
    sidecar: Daemon
    callback_log: CallbackLog

    def wait_for_a_fresh_write(self) -> None:
        """Until the sidecar next replaces the file (a new inode): a fault applied then lasts
        a whole rewrite period, far longer than the callback's 250 ms between reads."""
        before = os.stat(self.decision_file).st_ino
        wait_for(
            "the sidecar to rewrite its decision",
            lambda: self.decision_file.exists() and os.stat(self.decision_file).st_ino != before,
            REFRESH_S + 10,
            interval_s=0.02,
        )

    def broker_serves(self) -> bool:
        outcome = produce(
            self.kafka.client_config("admin"), "serving", [(b"k", b"v")], timeout_s=15
        )
        return outcome.all_delivered


def remount(directory: Path, mode: str) -> None:
    subprocess.run(
        ["mount", "-o", f"remount,{mode}", str(directory)],
        check=True,
        capture_output=True,
        timeout=30,
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileCluster]:
    jar = require_plugin_jar()
    base = tmp_path_factory.mktemp("decision-file-faults")
    with Mounts() as mounts:
        decisions = mounts.tmpfs(base / "decisions", size="1m")
        decision_file = decisions / "broker-0.json"
        properties = {
            **callback_properties(decision_file),
            "volume.quota.excluded.principals": "User:publisher;User:consumer;User:admin",
        }
        with LocalKafkaCluster(
            base / "kafka",
            broker_count=1,
            per_broker_properties=[properties],
            extra_classpath=[jar],
        ) as kafka:
            compacted_topic(kafka, SNAPSHOT_TOPIC)
            create_topic(kafka, "serving")
            grant_sidecar_acls(kafka)
            sidecar = daemon(
                kafka,
                command="sidecar",
                broker_id=0,
                log_dirs=[kafka.broker_files(0).data_dirs[0]],
                decision_file=decision_file,
                log_file=base / "sidecar.log",
                topic=SNAPSHOT_TOPIC,
            )
            log = CallbackLog(kafka.broker_log(0))
            try:
                sidecar.start()
                wait_for_decision(decision_file, "OPEN", is_open, 90)
                wait_for("the callback to apply OPEN", lambda: log.applied(QuotaState.OPEN), 30)
                yield FileCluster(kafka, decisions, decision_file, sidecar, log)
            finally:
                sidecar.stop()


def apply(fault: str, path: Path) -> str:
    """Do ``fault`` to the decision file; return what the callback must say about it."""
    if fault == "missing":
        path.unlink()
        return "decision file not found"
    content = path.read_bytes()
    with path.open("r+b") as file:  # in place, as a torn non-atomic write leaves it
        if fault == "truncated":
            file.truncate(len(content) // 2)
        else:
            file.write(b"\x00\xff\xfe garbage \x9c" * 8)
            file.truncate()
    return "garbled decision file"


@pytest.mark.timeout(90)
@pytest.mark.parametrize("fault", ["missing", "truncated", "corrupt"])
def test_a_missing_or_damaged_file_is_no_decision_until_the_next_write(
    cluster: FileCluster, fault: str
) -> None:
    log = cluster.callback_log
    cluster.wait_for_a_fresh_write()
    log.mark()
    problem = apply(fault, cluster.decision_file)

    to_fail_safe = wait_for(
        "the callback to refuse the file",
        lambda: log.seen(f"no valid decision ({problem}"),
        5,
        interval_s=0.02,
    )
    assert log.seen("applying on-missing PAUSE"), "the fail-safe"
    assert not log.applied(QuotaState.OPEN), "the damaged file itself is never applied"
    log.mark()
    restored = wait_for(
        "the sidecar's next write to be applied",
        lambda: log.applied(QuotaState.OPEN),
        REFRESH_S + 10,
        interval_s=0.02,
    )
    assert is_open(read_decision(cluster.decision_file))
    assert cluster.kafka.is_running(0)
    assert cluster.broker_serves()
    assert cluster.sidecar.running
    FIGURES.record(f"decision_file_{fault}_to_fail_safe_s", to_fail_safe)
    FIGURES.record(f"decision_file_{fault}_fail_safe_lasted_s", restored)


@pytest.mark.timeout(120)
def test_a_read_only_filesystem_keeps_the_last_decision_until_it_expires(
    cluster: FileCluster,
) -> None:
    log, sidecar = cluster.callback_log, cluster.sidecar
    cluster.wait_for_a_fresh_write()
    log.mark()
    remount(cluster.decisions, "ro")
    start, wall = time.monotonic(), datetime.now(UTC)
    kept = read_decision(cluster.decision_file)
    assert is_open(kept)
    assert kept is not None
    validity_left = (kept.valid_until - wall).total_seconds()
    write_errors = "volume_quota_decision_file_write_errors_total"
    errors_before = sidecar.metric(write_errors) or 0.0
    try:
        to_unready = wait_for(
            "the sidecar to report it cannot write",
            lambda: not sidecar.ready()[0],
            REFRESH_S + 10,
            interval_s=0.1,
        )
        why = sidecar.ready()[1]
        assert "the decision file could not be written" in why, why
        assert (sidecar.metric(write_errors) or 0) > errors_before
        failures = [e for e in sidecar.events() if e.get("event") == "could not write the decision"]
        assert failures, "the failure is logged"
        assert "Read-only file system" in str(failures[-1].get("error")), failures[-1]
        assert not log.seen("no valid decision"), "the last decision is kept while valid"
        wait_for(
            "the callback to find the kept decision expired",
            lambda: log.seen("no valid decision (decision expired"),
            validity_left + 10,
            interval_s=0.05,
        )
        to_expiry = time.monotonic() - start
        assert log.seen("applying on-missing PAUSE")
        assert to_expiry >= validity_left - 0.5, (to_expiry, validity_left)
        assert sidecar.running
        assert cluster.broker_serves()
    finally:
        remount(cluster.decisions, "rw")
    log.mark()
    writable = time.monotonic()
    to_open = wait_for(
        "the callback to apply the sidecar's next write",
        lambda: log.applied(QuotaState.OPEN),
        20,
        interval_s=0.05,
    )
    wait_for("the sidecar ready again", lambda: sidecar.ready()[0], 20)
    assert any(e.get("event") == "the decision is written again" for e in sidecar.events())
    FIGURES.record("decision_file_read_only_validity_left_s", validity_left)
    FIGURES.record("decision_file_read_only_to_unready_s", to_unready)
    FIGURES.record("decision_file_read_only_to_callback_pause_s", to_expiry)
    FIGURES.record("decision_file_read_only_writable_to_open_s", to_open)
    FIGURES.record("decision_file_read_only_fault_s", writable - start)
