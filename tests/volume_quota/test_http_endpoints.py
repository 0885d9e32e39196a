from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from publisher.health import HealthVerdict
from publisher.publisher_metrics import PublisherMetrics
from publisher.volumes import Volume, VolumeMeasurement
from volume_quota.http_endpoints import EndpointServer


class Switch:
    def __init__(self) -> None:
        self.live = HealthVerdict(True)
        self.ready = HealthVerdict(False, ("no snapshot delivered yet",))


@pytest.fixture
def served() -> Iterator[tuple[str, PublisherMetrics, Switch]]:
    metrics = PublisherMetrics()
    switch = Switch()
    server = EndpointServer(
        "127.0.0.1", 0, metrics.registry, lambda: switch.live, lambda: switch.ready
    ).start()
    try:
        yield f"http://127.0.0.1:{server.port}", metrics, switch
    finally:
        server.stop()


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def test_metrics_are_valid_prometheus_exposition(
    served: tuple[str, PublisherMetrics, Switch],
) -> None:
    base, metrics, _ = served
    volume = Volume("/dev/sdb", "/data", ("/data/kafka",))
    metrics.record_volumes({3: [VolumeMeasurement(volume, 1000, 250)]})
    metrics.publication_errors.inc()
    metrics.kafka_connected.set(1)
    status, content_type, body = get(base + "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain")
    families = {family.name: family for family in text_string_to_metric_families(body.decode())}
    errors = families["volume_quota_publication_errors"]
    assert errors.type == "counter"
    assert [sample.value for sample in errors.samples if sample.name.endswith("_total")] == [1.0]
    capacity = families["volume_quota_volume_capacity_bytes"].samples[0]
    assert capacity.labels == {"broker": "3", "volume": "/dev/sdb"}
    assert capacity.value == 1000
    assert families["volume_quota_volume_consumed_bytes"].samples[0].value == 750
    assert families["volume_quota_publisher_kafka_connected"].samples[0].value == 1
    assert "process_resident_memory_bytes" in families


def test_vanished_volumes_leave_the_metrics(served: tuple[str, PublisherMetrics, Switch]) -> None:
    base, metrics, _ = served
    first = Volume("/dev/sdb", "/data", ("/data/kafka",))
    second = Volume("/dev/sdc", "/data1", ("/data1/kafka",))
    metrics.record_volumes({3: [VolumeMeasurement(first, 10, 5), VolumeMeasurement(second, 10, 5)]})
    metrics.record_volumes({3: [VolumeMeasurement(second, 10, 5)]})
    body = get(base + "/metrics")[2].decode()
    assert 'volume="/dev/sdc"' in body
    assert 'volume="/dev/sdb"' not in body


def test_health_endpoints_follow_the_verdicts(served: tuple[str, PublisherMetrics, Switch]) -> None:
    base, _, switch = served
    status, content_type, body = get(base + "/healthz")
    assert (status, content_type) == (200, "application/json")
    assert json.loads(body) == {"status": "ok", "problems": []}
    status, _, body = get(base + "/readyz")
    assert status == 503
    assert json.loads(body) == {"status": "failing", "problems": ["no snapshot delivered yet"]}
    switch.ready = HealthVerdict(True)
    switch.live = HealthVerdict(False, ("last volume sample was 99.0s ago",))
    assert get(base + "/readyz")[0] == 200
    assert get(base + "/healthz?verbose=1")[0] == 503


def test_unknown_paths_are_404(served: tuple[str, PublisherMetrics, Switch]) -> None:
    base, _, _ = served
    status, _, body = get(base + "/")
    assert status == 404
    assert json.loads(body)["paths"] == ["/metrics", "/healthz", "/readyz"]


@pytest.fixture
def quick_timeout() -> Iterator[EndpointServer]:
    metrics = PublisherMetrics()
    ready = HealthVerdict(True)
    server = EndpointServer(
        "127.0.0.1", 0, metrics.registry, lambda: ready, lambda: ready, idle_timeout_seconds=0.5
    ).start()
    try:
        yield server
    finally:
        server.stop()


def _closed_by_server_within(connection: socket.socket, seconds: float) -> bool:
    connection.settimeout(seconds)
    try:
        return connection.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_idle_connections_neither_take_a_thread_each_nor_block_the_probes(
    served: tuple[str, PublisherMetrics, Switch],
) -> None:
    # A unit capped at 64 tasks (deploy/systemd) dies of 64 idle connections if each takes a
    # thread; a port scanner or a stuck scraper must not make /readyz go unanswered.
    base, _, switch = served
    switch.ready = HealthVerdict(True)
    port = int(base.rsplit(":", 1)[1])
    threads_before = threading.active_count()
    with contextlib.ExitStack() as stack:
        for _ in range(500):
            stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(0.5)
        started = time.monotonic()
        assert get(base + "/readyz")[0] == 200
        assert time.monotonic() - started < 2.0
        assert threading.active_count() - threads_before <= 2


def test_a_connection_that_sends_nothing_is_closed_after_the_idle_timeout(
    quick_timeout: EndpointServer,
) -> None:
    with socket.create_connection(("127.0.0.1", quick_timeout.port), timeout=5) as connection:
        assert _closed_by_server_within(connection, 3.0)


def test_a_request_head_trickled_byte_by_byte_is_cut_off(quick_timeout: EndpointServer) -> None:
    with socket.create_connection(("127.0.0.1", quick_timeout.port), timeout=5) as connection:
        deadline = time.monotonic() + 3.0
        closed = False
        for byte in b"GET /readyz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
            try:
                connection.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.1)
            if time.monotonic() > deadline:
                break
        assert closed or _closed_by_server_within(connection, 1.0)


def test_a_kept_alive_connection_serves_several_requests(
    served: tuple[str, PublisherMetrics, Switch],
) -> None:
    base, _, _ = served
    port = int(base.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        for path in ("/healthz", "/metrics", "/readyz"):
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            assert response.status in (200, 503)
            assert not response.will_close
    finally:
        connection.close()


def test_an_oversized_request_head_is_refused(quick_timeout: EndpointServer) -> None:
    with socket.create_connection(("127.0.0.1", quick_timeout.port), timeout=5) as connection:
        connection.sendall(b"GET /readyz HTTP/1.1\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n")
        answer = connection.recv(1024)
        assert answer.startswith(b"HTTP/1.1 431") or answer == b""


def test_a_health_check_that_raises_is_a_500_and_the_server_keeps_serving() -> None:
    def broken() -> HealthVerdict:
        raise RuntimeError("state not built yet")

    metrics = PublisherMetrics()
    server = EndpointServer(
        "127.0.0.1", 0, metrics.registry, lambda: HealthVerdict(True), broken
    ).start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        status, _, body = get(base + "/readyz")
        assert (status, body) == (500, b"RuntimeError: state not built yet")
        assert get(base + "/healthz")[0] == 200
    finally:
        server.stop()
