"""The kubelet's rules as kubelet_prober.ProbeTrack applies them, and one probe of each kind
against a real socket."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.pods.kubelet_prober import ProbeTrack, probe_once


def track(kind: str, **probe: int) -> ProbeTrack:
    return ProbeTrack.of("c", kind, probe)


def test_the_kubelets_defaults_apply_when_the_chart_sets_nothing() -> None:
    defaults = track("livenessProbe")
    assert (defaults.period, defaults.initial_delay) == (10.0, 0.0)
    assert (defaults.failure_threshold, defaults.success_threshold) == (3, 1)


def test_liveness_restarts_after_failure_threshold_failures_in_a_row_only() -> None:
    liveness = track("livenessProbe", failureThreshold=3)
    for at, ok in enumerate([False, False, True, False, False]):
        liveness.record(at, ok, "")
    assert liveness.restart_due is None
    liveness.record(5, False, "refused")
    assert liveness.restart_due is not None
    assert "3 failures in a row" in liveness.restart_due


def test_a_startup_probe_restarts_only_before_its_first_success() -> None:
    startup = track("startupProbe", failureThreshold=2)
    startup.record(0, False, "")
    startup.record(1, True, "")
    startup.record(2, False, "")
    startup.record(3, False, "")
    assert startup.restart_due is None
    assert startup.succeeded_at == 1
    never = track("startupProbe", failureThreshold=2)
    never.record(0, False, "")
    never.record(1, False, "")
    assert never.restart_due is not None


def test_readiness_never_restarts_and_needs_its_success_threshold() -> None:
    readiness = track("readinessProbe", failureThreshold=1, successThreshold=2)
    readiness.record(0, False, "")
    readiness.record(1, True, "")
    assert readiness.succeeded_at is None
    readiness.record(2, True, "")
    assert readiness.succeeded_at == 2
    assert readiness.restart_due is None


class _Status(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/healthz" else 503)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_port() -> Iterator[int]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


def test_http_and_tcp_probes_succeed_and_fail_as_the_kubelet_says(http_port: int) -> None:
    assert probe_once({"httpGet": {"path": "/healthz", "port": http_port}}, 1)[0]
    assert not probe_once({"httpGet": {"path": "/readyz", "port": http_port}}, 1)[0]
    assert probe_once({"tcpSocket": {"port": http_port}}, 1)[0]
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = unused.getsockname()[1]
    assert not probe_once({"tcpSocket": {"port": closed}}, 1)[0]
    with pytest.raises(ValueError, match="not run here"):
        probe_once({"exec": {"command": ["true"]}}, 1)
