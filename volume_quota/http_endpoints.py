"""The daemons' HTTP endpoints: ``/metrics``, ``/healthz`` (live) and ``/readyz`` (ready).

Health answers are JSON: ``{"status": "ok"|"failing", "problems": [...]}`` with 200 or 503.

One thread runs an asyncio loop that serves every connection, so the resources a client can
hold are bounded whatever it does: no thread per connection (a unit capped at 64 tasks would
die of 64 idle connections), a connection that has not sent a complete request head within
``idle_timeout_seconds`` is closed (idle keep-alive and byte-by-byte heads alike), a head over
``MAX_HEAD_BYTES`` gets 431, and past ``max_connections`` a new connection is closed at once.
Only ``GET`` without a body is served: probes and scrapes need nothing else.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable
from http import HTTPStatus

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from publisher.health import HealthVerdict

HealthCheck = Callable[[], HealthVerdict]

ROUTES = ("/metrics", "/healthz", "/readyz")
MAX_HEAD_BYTES = 8 * 1024
"""Request line and headers together; a Prometheus scrape or a kubelet probe sends ~200."""


class EndpointServer:
    """Serves the endpoints until ``stop``; ``port`` is the bound port (useful with port 0)."""

    def __init__(
        self,
        host: str,
        port: int,
        registry: CollectorRegistry,
        liveness: HealthCheck,
        readiness: HealthCheck,
        *,
        idle_timeout_seconds: float = 10.0,
        max_connections: int = 1024,
    ) -> None:
        self._registry = registry
        self._liveness = liveness
        self._readiness = readiness
        self._idle_timeout = idle_timeout_seconds
        self._max_connections = max_connections
        self._writers: set[asyncio.StreamWriter] = set()
        # Bind now, so a port in use fails the caller at once with the system's own words.
        listening = socket.create_server((host, port))
        self._loop = asyncio.new_event_loop()
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, sock=listening, limit=MAX_HEAD_BYTES)
        )
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="volume-quota-http", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.sockets[0].getsockname()[1])

    def start(self) -> EndpointServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        else:
            self._loop.run_until_complete(self._close())
        self._loop.close()

    async def _close(self) -> None:
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            if len(self._writers) <= self._max_connections:
                await self._serve_requests(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _serve_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while True:
            try:
                async with asyncio.timeout(self._idle_timeout):
                    head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.LimitOverrunError:
                await self._answer(writer, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, keep=False)
                return
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            parts = request_line.split(" ")
            if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                await self._answer(writer, HTTPStatus.BAD_REQUEST, keep=False)
                return
            method, target, version = parts
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in header_lines if line)
            }
            keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
            if "content-length" in headers or "transfer-encoding" in headers:
                keep = False  # a body we do not read would be parsed as the next request
            if method != "GET":
                await self._answer(writer, HTTPStatus.METHOD_NOT_ALLOWED, keep=False)
                return
            try:
                status, content_type, body = self._route(target.split("?", 1)[0])
            except Exception as error:  # a failing check must not take the endpoint down
                status, content_type = HTTPStatus.INTERNAL_SERVER_ERROR, "text/plain"
                body = f"{type(error).__name__}: {error}".encode()[:500]
            await self._answer(writer, status, keep, content_type, body)
            if not keep:
                return

    def _route(self, path: str) -> tuple[HTTPStatus, str, bytes]:
        if path == "/metrics":
            return HTTPStatus.OK, CONTENT_TYPE_LATEST, generate_latest(self._registry)
        if path == "/healthz":
            return _health(self._liveness())
        if path == "/readyz":
            return _health(self._readiness())
        body = json.dumps({"error": "not found", "paths": list(ROUTES)}).encode()
        return HTTPStatus.NOT_FOUND, "application/json", body

    @staticmethod
    async def _answer(
        writer: asyncio.StreamWriter,
        status: HTTPStatus,
        keep: bool,
        content_type: str = "text/plain",
        body: bytes = b"",
    ) -> None:
        head = (
            f"HTTP/1.1 {status.value} {status.phrase}\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep else 'close'}\r\n\r\n"
        )
        writer.write(head.encode("latin-1") + body)
        await writer.drain()


def _health(verdict: HealthVerdict) -> tuple[HTTPStatus, str, bytes]:
    status = HTTPStatus.OK if verdict.healthy else HTTPStatus.SERVICE_UNAVAILABLE
    body = json.dumps(
        {"status": "ok" if verdict.healthy else "failing", "problems": list(verdict.problems)}
    ).encode()
    return status, "application/json", body
