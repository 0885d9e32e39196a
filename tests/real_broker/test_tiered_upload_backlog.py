"""The tiered-storage upload backlog on a real 1-node mTLS Kafka cluster whose remote store is
Kafka's own ``LocalTieredStorage`` (``LocalKafkaCluster(tiered_storage_dir=...)``), writing into
a tmpfs of its own.

A tiered topic (``remote.storage.enable=true``, 1 MiB segments, ``local.retention.ms`` of 2 s)
is written at about 1 MB/s while a sidecar-style publisher surveys the log dir every 2 s:

1. healthy: segments are uploaded and deleted locally, the backlog is about 0;
2. stalled: the remote store's tmpfs is remounted read-only, so every upload fails with
   "Read-only file system" (we run as root: file modes would not stop the broker's writes, a
   read-only mount does, and it can be undone without touching the broker); the segments stay
   on the broker, and the backlog grows in ``volume_quota_*_upload_backlog_bytes``, in
   ``volume-quota status --topics`` (text and JSON) and in the chart's alert expression, which
   promtool evaluates on the scraped values;
3. healed: remounted read-write, the broker uploads the backlog, deletes the local segments
   and the backlog drains.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation, ResourceType  # type: ignore[attr-defined]

from local_cluster import LocalKafkaCluster, grant_sidecar_acls
from local_cluster.acls import PUBLISHER_PRINCIPAL, allow, create_acls
from tests.chart.chart_tools import render
from tests.chart.test_alert_rules import promtool_failures
from tests.chart.test_monitoring import FULLNAME
from tests.publisher.daemon_harness import DaemonProcess, metric_values
from tests.support import wait_for

from .kafka_helpers import create_topic, produce, sidecar_settings, volume_quota_command

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(300)]

TOPIC = "vq-tiered"
MiB = 1024 * 1024
SEGMENT_BYTES = MiB
"""Kafka's smallest segment.bytes."""
INTERVAL_SECONDS = 2.0
ABOUT_ZERO = 2 * SEGMENT_BYTES
"""What the estimate may show while uploads keep up: a segment being uploaded, one active."""
STALLED = 8 * MiB
TOPIC_BACKLOG = "volume_quota_topic_upload_backlog_bytes"
VOLUME_BACKLOG = "volume_quota_volume_upload_backlog_bytes"


def _mount(*arguments: str) -> None:
    """``mount`` with retries: a remount read-only is refused (busy) while a file is open for
    writing, which an upload in progress may hold for a moment."""
    for _ in range(50):
        if subprocess.run(["mount", *arguments], capture_output=True, check=False).returncode == 0:
            return
        time.sleep(0.1)
    completed = subprocess.run(["mount", *arguments], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr


@pytest.fixture(scope="module")
def remote_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A tmpfs of its own for the remote segments (needs root, as the real_fs tests)."""
    directory = tmp_path_factory.mktemp("remote-store")
    _mount("-t", "tmpfs", "-o", "size=256m", "tmpfs", str(directory))
    try:
        yield directory
    finally:
        subprocess.run(["umount", "--lazy", str(directory)], check=False)


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, remote_store: Path
) -> Iterator[LocalKafkaCluster]:
    base = tmp_path_factory.mktemp("kafka-tiered")
    with LocalKafkaCluster(base, broker_count=1, tiered_storage_dir=remote_store) as started:
        grant_sidecar_acls(started)
        # The sidecar reads the configs of the topics it names, for their upload backlog.
        create_acls(
            started,
            allow(ResourceType.TOPIC, TOPIC, PUBLISHER_PRINCIPAL, AclOperation.DESCRIBE_CONFIGS),
        )
        create_topic(
            started.client_config("admin"),
            TOPIC,
            topic_config={
                "remote.storage.enable": "true",
                "segment.bytes": str(SEGMENT_BYTES),
                "local.retention.ms": "2000",
                "retention.ms": "3600000",
                "file.delete.delay.ms": "1000",
            },
        )
        yield started


class Writer:
    """About 1 MB/s of incompressible records to the topic, from a thread, until stopped."""

    def __init__(self, cluster: LocalKafkaCluster) -> None:
        self._config = cluster.client_config("admin")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.failure: str | None = None

    def _run(self) -> None:
        while not self._stop.is_set():
            outcome = produce(self._config, TOPIC, [(b"k", os.urandom(100_000)) for _ in range(5)])
            if not outcome.all_delivered:
                self.failure = f"records not delivered: {outcome}"
                return
            self._stop.wait(0.5)

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        assert self.failure is None, self.failure


class Scrapes:
    """The sidecar's backlog series, as Prometheus would scrape them, one sample per call."""

    def __init__(self, port: int) -> None:
        self._port = port
        self.volume_samples: list[float] = []
        self.labels: dict[str, str] = {}

    def backlogs(self) -> tuple[float | None, float | None]:
        """(the topic's backlog, its volume's) now; None while not exported."""
        topic = volume = None
        for key, value in metric_values(self._port).items():
            if key.startswith(TOPIC_BACKLOG + "{") and f'topic="{TOPIC}"' in key:
                topic = value
            elif key.startswith(VOLUME_BACKLOG + "{"):
                volume = value
                self.labels = dict(
                    part.split("=", 1) for part in key[len(VOLUME_BACKLOG) + 1 : -1].split(",")
                )
        if volume is not None:
            self.volume_samples.append(volume)
        return topic, volume

    def exported(self) -> tuple[float, float]:
        """(the topic's backlog, its volume's) now; both must be exported."""
        topic, volume = self.backlogs()
        assert topic is not None, "no volume_quota_topic_upload_backlog_bytes for the topic"
        assert volume is not None, "no volume_quota_volume_upload_backlog_bytes"
        return topic, volume


def _segments(cluster: LocalKafkaCluster) -> list[Path]:
    (directory,) = [d / f"{TOPIC}-0" for d in cluster.broker_files(0).data_dirs]
    return sorted(directory.glob("*.log"))


def _remote_segments(remote_store: Path) -> list[Path]:
    return sorted(remote_store.rglob("*.log"))


def _status(cluster: LocalKafkaCluster, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        volume_quota_command(cluster, "admin", "status", "--topics", "--timeout=60", *extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _status_backlogs(cluster: LocalKafkaCluster) -> tuple[int, int, str]:
    """(the topic's uploadBacklogBytes, its volume's) from ``status --topics --json``, and the
    text table."""
    as_json = _status(cluster, "--json")
    assert as_json.returncode == 0, as_json.stderr
    volumes = json.loads(as_json.stdout)["topics"]
    (volume,) = [v for v in volumes if any(t["topic"] == TOPIC for t in v["topics"])]
    (topic,) = [t for t in volume["topics"] if t["topic"] == TOPIC]
    text = _status(cluster)
    assert text.returncode == 0, text.stderr
    return topic["uploadBacklogBytes"], volume["uploadBacklogBytes"], text.stdout


def _alert_expression_check(
    labels: dict[str, str], samples: list[float], firing: list[bool], directory: Path
) -> str:
    """promtool's complaints (empty: as expected) about the chart's VolumeQuotaTieredUploadBacklog
    expression (threshold rendered at 4 MiB) on ``samples``, one a minute as the sidecars' job
    scrapes them: at sample i it returns the volume with that value if ``firing[i]``, else
    nothing."""
    manifests = render(
        settings={
            "serviceMonitor.enabled": "true",
            "prometheusRule.enabled": "true",
            "prometheusRule.uploadBacklogBytes": str(4 * MiB),
        }
    )
    (rules,) = [m for m in manifests if m["kind"] == "PrometheusRule"]
    (rule,) = [
        r
        for group in rules["spec"]["groups"]
        for r in group["rules"]
        if r.get("alert") == "VolumeQuotaTieredUploadBacklog"
    ]
    pod = {"namespace": '"kafka"', "pod": f'"{FULLNAME}-0"'}
    scraped = {**labels, **pod, "job": f'"{FULLNAME}-headless"'}
    returned = "{" + ", ".join(f"{k}={v}" for k, v in sorted({**labels, **pod}.items())) + "}"
    test = {
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": VOLUME_BACKLOG
                        + "{"
                        + ", ".join(f"{k}={v}" for k, v in scraped.items())
                        + "}",
                        "values": " ".join(f"{value:.0f}" for value in samples),
                    }
                ],
                "promql_expr_test": [
                    {
                        "expr": rule["expr"],
                        "eval_time": f"{index}m",
                        "exp_samples": [{"labels": returned, "value": value}] if fires else [],
                    }
                    for index, (value, fires) in enumerate(zip(samples, firing, strict=True))
                ],
            }
        ],
    }
    return promtool_failures(directory, test)


def test_the_backlog_grows_while_the_remote_store_is_read_only_and_drains_after(
    cluster: LocalKafkaCluster, remote_store: Path, tmp_path: Path
) -> None:
    settings = sidecar_settings(cluster, 0, INTERVAL_SECONDS)
    with DaemonProcess(settings) as daemon:
        scrapes = Scrapes(daemon.wait_started())

        # 1. Healthy: segments reach the remote store and leave the broker.
        with Writer(cluster):
            wait_for(lambda: len(_remote_segments(remote_store)) >= 3, 60, "3 segments uploaded")
            wait_for(lambda: len(_segments(cluster)) <= 2, 30, "local segments deleted")
            time.sleep(2 * INTERVAL_SECONDS)  # a survey after the deletions
            healthy = scrapes.exported()
        assert max(healthy) <= ABOUT_ZERO, healthy

        # 2. Stalled: nothing can be uploaded, nothing is deleted locally.
        _mount("-o", "remount,ro", str(remote_store))
        uploaded = len(_remote_segments(remote_store))
        with Writer(cluster):

            def grown() -> bool:
                topic, _volume = scrapes.backlogs()
                return topic is not None and topic >= STALLED

            wait_for(grown, 90, f"a backlog of {STALLED} bytes")
        stalled = scrapes.exported()
        assert min(stalled) >= STALLED, stalled
        assert len(_segments(cluster)) >= 8
        assert len(_remote_segments(remote_store)) == uploaded
        topic_backlog, volume_backlog, table = _status_backlogs(cluster)
        assert topic_backlog >= STALLED, topic_backlog
        assert volume_backlog >= topic_backlog
        assert "UPLOAD BACKLOG" in table
        assert "upload backlog: " in table

        # 3. Healed: the broker uploads the backlog and deletes its local segments.
        _mount("-o", "remount,rw", str(remote_store))

        def drained() -> bool:
            topic, volume = scrapes.backlogs()
            return topic is not None and volume is not None and volume <= ABOUT_ZERO

        wait_for(drained, 90, "the backlog drained")
        assert len(_segments(cluster)) <= 2
        assert len(_remote_segments(remote_store)) > uploaded
        assert daemon.terminate()[0] == 0

    # The alert expression on what was scraped: quiet while healthy and after healing, the
    # volume with its backlog while stalled (above the 4 MiB threshold rendered for the test).
    samples = [healthy[1], stalled[1], scrapes.volume_samples[-1]]
    assert _alert_expression_check(scrapes.labels, samples, [False, True, False], tmp_path) == ""
