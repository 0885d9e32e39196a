"""The daemon with Kafka unreachable: it samples, serves health and metrics, counts errors, stops
cleanly on SIGTERM. Loopback only: the bootstrap address is a closed local port."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.publisher.daemon_harness import (
    DaemonProcess,
    InProcessDaemon,
    http_get,
    metric_values,
)
from tests.publisher.tls_material import TestCertificateAuthority, TlsPaths
from tests.support import wait_for

pytestmark = pytest.mark.timeout(90)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def tls(tmp_path: Path) -> TlsPaths:
    return TestCertificateAuthority().write_identity(tmp_path / "tls", "publisher")


def daemon_settings(tls: TlsPaths, log_dir: Path) -> dict[str, object]:
    return {
        "broker_id": 3,
        "log_dirs": log_dir,
        "bootstrap_servers": f"127.0.0.1:{closed_port()}",
        "tls_ca_file": tls.ca,
        "tls_cert_file": tls.cert,
        "tls_key_file": tls.key,
        "metrics_host": "127.0.0.1",
        "metrics_port": 0,
        "delivery_timeout": "2s",
        "heartbeat_interval": "2s",
        "readiness_max_age": "5s",
    }


def test_daemon_process_survives_an_unreachable_kafka_and_stops_on_sigterm(
    tls: TlsPaths, tmp_path: Path
) -> None:
    with DaemonProcess(daemon_settings(tls, tmp_path)) as daemon:
        port = daemon.wait_started()
        assert http_get(port, "/healthz")[0] == 200
        wait_for(
            lambda: metric_values(port)["volume_quota_publication_errors_total"] >= 2,
            30,
            "publication errors to be counted",
        )
        status, body = http_get(port, "/readyz")
        assert status == 503
        problems = json.loads(body)["problems"]
        assert "Kafka is not reachable (the last attempt to reach it failed)" in problems
        assert "no snapshot delivered yet" in problems
        metrics = metric_values(port)
        assert metrics["volume_quota_publisher_kafka_connected"] == 0
        assert any(
            name.startswith('volume_quota_volume_capacity_bytes{broker="3"') for name in metrics
        )
        assert daemon.process.poll() is None  # still running

        status_code, seconds = daemon.terminate()
        assert status_code == 0
        assert seconds < 8
        wait_for(lambda: daemon.logs.find("publisher stopped") is not None, 5, "the stop log line")
        assert daemon.logs.find("stop requested") is not None
        assert daemon.logs.non_json_lines() == []


def test_daemon_in_process_reports_not_ready(tls: TlsPaths, tmp_path: Path) -> None:
    with InProcessDaemon(daemon_settings(tls, tmp_path)) as running:
        wait_for(lambda: running.daemon.liveness().healthy, 10, "the first sample")
        wait_for(
            lambda: running.metric("volume_quota_publication_errors_total") >= 1,
            30,
            "a counted publication error",
        )
        verdict = running.daemon.readiness()
        assert not verdict.healthy
        assert "no snapshot delivered yet" in verdict.problems
        assert http_get(running.port, "/readyz")[0] == 503
    assert running.outcome == [0]
    events = [event["event"] for event in running.events()]
    assert events.index("publisher started") < events.index("snapshot not delivered")
    assert events[-1] == "publisher stopped"
