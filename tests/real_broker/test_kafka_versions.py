"""The quota callback loads and applies a decision file on every Kafka version the docs name.

For each version, one combined KRaft node runs from that release's Maven Central jars
(``ensure_kafka_jars(version=...)``, cached in ``~/.cache/volume-quota/kafka-<version>/libs``)
with the plugin jar on its classpath and ``client.quota.callback.class`` set to the class the
docs give for that version. The decision file says PAUSE and ``on.missing`` is OPEN, so a
throttled produce can only come from the file being read and applied. On Kafka 4.1 and newer
the callback's metrics (``Monitorable``) are read over JMX as well; Kafka 4.0 has no
``Monitorable``, so it runs the callback without metrics. That class also runs on the pinned
version, where it must say in the log that ``VolumeQuotaCallback`` would have metrics.

Needs the jar: ``cd deploy/broker-plugin && mvn -q -B package``.
Run alone: ``python3 -m pytest tests/real_broker/test_kafka_versions.py -x``
(five brokers, one at a time: about 85 s here with warm caches).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from local_cluster import LocalKafkaCluster, ensure_kafka_jars, kafka_version
from tests.real_broker.kafka_helpers import create_topic, quiet
from tests.real_broker.test_callback_metrics import CallbackMetrics, free_port, write_decision
from tests.support import wait_for

CALLBACK = "io.volumequota.broker.VolumeQuotaCallback"
"""The callback with its metrics: Kafka 4.1 and newer (docs/broker-plugin.md, Install)."""
CALLBACK_WITHOUT_METRICS = "io.volumequota.broker.VolumeQuotaCallbackWithoutMetrics"
"""The same callback without ``Monitorable``: Kafka 4.0."""

PINNED = kafka_version()
"""The version the project builds and runs everything else against (deploy/local/kafka-jars)."""
WITHOUT_MONITORABLE = {"4.0.1"}
CASES = [
    ("4.0.1", CALLBACK_WITHOUT_METRICS),
    ("4.1.2", CALLBACK),
    ("4.2.0", CALLBACK),  # the Strimzi recipe's Kafka (docs/strimzi.md)
    (PINNED, CALLBACK),
    (PINNED, CALLBACK_WITHOUT_METRICS),  # works, but warns that it has no metrics
]
METRICS_HINT = "client.quota.callback.class=io.volumequota.broker.VolumeQuotaCallback to get them"
MIB = 1024 * 1024
BASE = 1 * MIB
FLOOR = 64 * 1024
PAUSED_STATE = 2.0


def jmx_options(jmx_port: int) -> list[str]:
    return [
        f"-Dcom.sun.management.jmxremote.port={jmx_port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={jmx_port}",
        "-Dcom.sun.management.jmxremote.host=127.0.0.1",
        "-Djava.rmi.server.hostname=127.0.0.1",
        "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false",
    ]


def largest_throttle_ms(cluster: LocalKafkaCluster, topic: str, timeout_s: float = 30) -> int:
    """Produce 2 MiB as ``User:admin`` (not excluded) until the broker answers with a throttle.

    Returns the largest ``throttle_time_ms`` seen within ``timeout_s`` (0: never throttled).
    Records still queued once a throttle is seen are purged: the throttle is the point.
    """
    throttles: list[int] = []

    def on_throttle(event: Any) -> None:
        throttles.append(int(event.throttle_time))

    producer = Producer(
        {
            **quiet(cluster.client_config("admin")),
            "acks": "1",
            "linger.ms": 5,
            "throttle_cb": on_throttle,
        }
    )
    for _ in range(128):
        producer.produce(topic, b"x" * (16 * 1024))
    deadline = time.monotonic() + timeout_s
    while not any(throttles) and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.purge()
    producer.flush(10)
    return max(throttles, default=0)


@pytest.mark.real_broker
@pytest.mark.parametrize(
    ("version", "callback_class"), CASES, ids=[f"{v}-{c.rsplit('.', 1)[1]}" for v, c in CASES]
)
def test_callback_loads_and_applies_the_decision_file(
    version: str, callback_class: str, plugin_jar: Path, tmp_path: Path
) -> None:
    jars = ensure_kafka_jars(version=version)
    assert (jars / f"kafka_2.13-{version}.jar").is_file()
    decision = tmp_path / "decision.json"
    write_decision(decision, "PAUSE", 0.0)
    jmx_port = free_port()
    properties = {
        "client.quota.callback.class": callback_class,
        "volume.quota.decision.path": str(decision),
        "volume.quota.on.missing": "OPEN",  # a throttle can only come from the file
        "volume.quota.produce.base.bytes.per.second": str(BASE),
        "volume.quota.pause.bytes.per.second": str(FLOOR),
        "volume.quota.excluded.principals": "User:publisher;User:consumer",
        "volume.quota.reload.interval.ms": "250",
    }
    with LocalKafkaCluster(
        tmp_path / "kafka",
        broker_count=1,
        broker_properties=properties,
        extra_classpath=[plugin_jar],
        extra_jvm_options=jmx_options(jmx_port),
        jars_dir=jars,
    ) as cluster:
        log = cluster.broker_log(0)
        assert f"Kafka version: {version}" in log.read_text()
        wait_for(
            lambda: "volume-quota engine #1: decision PAUSE factor 0.0" in log.read_text(),
            timeout=30,
            what="the callback to read the PAUSE decision file",
        )
        assert "volume-quota callback #1 configured with engine #1" in log.read_text()

        create_topic(cluster.client_config("admin"), "versions")
        throttle_ms = largest_throttle_ms(cluster, "versions")
        assert throttle_ms > 0, "a PAUSE decision throttles a producer that is not excluded"

        metrics = CallbackMetrics(tmp_path, jmx_port)
        values = metrics.read()
        if callback_class == CALLBACK:
            assert values.get("state") == PAUSED_STATE, values
            assert values.get("throttle-factor") == 0.0
        else:
            assert values == {}, "no Monitorable, no plugin metrics"
        hinted = METRICS_HINT in log.read_text()
        assert hinted == (
            callback_class == CALLBACK_WITHOUT_METRICS and version not in WITHOUT_MONITORABLE
        )
        assert "ERROR" not in "".join(
            line for line in log.read_text().splitlines(True) if "volume-quota" in line
        )
