from __future__ import annotations

import json
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
