"""The publisher's HTTP endpoints: ``/metrics``, ``/healthz`` (live) and ``/readyz`` (ready).

A stdlib ``ThreadingHTTPServer`` on a daemon thread. Health answers are JSON:
``{"status": "ok"|"failing", "problems": [...]}`` with 200 or 503.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from publisher.health import HealthVerdict

HealthCheck = Callable[[], HealthVerdict]


class _Handler(BaseHTTPRequestHandler):
    server: _EndpointServer
    protocol_version = "HTTP/1.1"
    routes: ClassVar[tuple[str, ...]] = ("/metrics", "/healthz", "/readyz")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(HTTPStatus.OK, CONTENT_TYPE_LATEST, generate_latest(self.server.registry))
        elif path == "/healthz":
            self._send_health(self.server.liveness())
        elif path == "/readyz":
            self._send_health(self.server.readiness())
        else:
            body = json.dumps({"error": "not found", "paths": list(self.routes)}).encode()
            self._send(HTTPStatus.NOT_FOUND, "application/json", body)

    def _send_health(self, verdict: HealthVerdict) -> None:
        status = HTTPStatus.OK if verdict.healthy else HTTPStatus.SERVICE_UNAVAILABLE
        body = json.dumps(
            {"status": "ok" if verdict.healthy else "failing", "problems": list(verdict.problems)}
        ).encode()
        self._send(status, "application/json", body)

    def _send(self, status: HTTPStatus, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: probes every few seconds would drown the log."""


class _EndpointServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        registry: CollectorRegistry,
        liveness: HealthCheck,
        readiness: HealthCheck,
    ) -> None:
        super().__init__(address, _Handler)
        self.registry = registry
        self.liveness = liveness
        self.readiness = readiness


class EndpointServer:
    """Serves the endpoints until ``stop``; ``port`` is the bound port (useful with port 0)."""

    def __init__(
        self,
        host: str,
        port: int,
        registry: CollectorRegistry,
        liveness: HealthCheck,
        readiness: HealthCheck,
    ) -> None:
        self._server = _EndpointServer((host, port), registry, liveness, readiness)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.5},
            name="volume-quota-http",
            daemon=True,
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> EndpointServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
