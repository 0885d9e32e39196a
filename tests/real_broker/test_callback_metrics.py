"""The quota callback's own metrics (Kafka ``Monitorable``), read over JMX from a real broker.

One combined KRaft node (Kafka 4.3.1 from ``local_cluster``) runs with the plugin jar on its
classpath, ``client.quota.callback.class`` set and JMX remote open on a loopback port. A tiny
Java JMX client (a single-file source program run with the broker's ``java``) reads every
attribute of the callback's metrics while the test rewrites the decision file and produces.

Needs the jar: ``cd deploy/broker-plugin && mvn -q -B package``.
Run alone: ``python3 -m pytest tests/real_broker/test_callback_metrics.py -x``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported, no __all__
    AdminClient,
    NewTopic,
)

from local_cluster import LocalKafkaCluster

REPO = Path(__file__).resolve().parents[2]
PLUGIN_JAR = REPO / "deploy" / "broker-plugin" / "target" / "volume-quota-broker-plugin-0.1.0.jar"
MIB = 1024 * 1024
BASE = 1 * MIB
FLOOR = 64 * 1024
METRIC_PREFIX = "volume-quota-"
EXPECTED_METRICS = {
    "state",
    "throttle-factor",
    "produce-quota-bytes-per-second",
    "produce-quota-target-bytes-per-second",
    "produce-quota-max-bytes-per-second",
    "decision-age-seconds",
    "reload-errors-total",
    "expiries-total",
    "step-downs-total",
    "quota-changes-total",
    "quota-resets-total",
    "poller-errors-total",
    "decision-reader-rebuilds-total",
    "tracked-principals",
    "quota-limit-errors-total",
    "observed-rate-available",
}

# Reads every attribute of the MBeans matching a pattern from a remote JMX port and prints
# one JSON object per MBean: {"name": ..., "attributes": {...}}. Numbers only; NaN as null.
JMX_CLIENT = r"""
import javax.management.*;
import javax.management.remote.*;

public class JmxRead {
    public static void main(String[] args) throws Exception {
        String address = "service:jmx:rmi:///jndi/rmi://" + args[0] + "/jmxrmi";
        try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            for (ObjectName name : server.queryNames(new ObjectName(args[1]), null)) {
                String quoted = name.toString().replace("\"", "\\\"");
                StringBuilder out = new StringBuilder("{\"name\": \"" + quoted + "\", ");
                out.append("\"attributes\": {");
                String separator = "";
                for (MBeanAttributeInfo info : server.getMBeanInfo(name).getAttributes()) {
                    Object value = server.getAttribute(name, info.getName());
                    boolean finite = value instanceof Number n && Double.isFinite(n.doubleValue());
                    String text = finite ? String.valueOf(((Number) value).doubleValue()) : "null";
                    out.append(separator).append('"').append(info.getName()).append("\": ");
                    out.append(text);
                    separator = ", ";
                }
                System.out.println(out.append("}}"));
            }
        }
    }
}
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_decision(path: Path, state: str, factor: float, valid_for_s: float = 300) -> None:
    now = datetime.now(UTC)
    decision = {
        "schemaVersion": 1,
        "decidedAt": now.isoformat(),
        "validUntil": (now + timedelta(seconds=valid_for_s)).isoformat(),
        "state": state,
        "throttleFactor": factor,
        "causedByMissingData": False,
        "unknownBrokers": [],
        "reasons": [],
    }
    write_raw(path, json.dumps(decision))


def write_raw(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class CallbackMetrics:
    """Reads the callback's metrics from the broker's JMX port."""

    def __init__(self, work_dir: Path, jmx_port: int) -> None:
        source = work_dir / "JmxRead.java"
        source.write_text(JMX_CLIENT)
        self.classes = work_dir / "classes"
        subprocess.run(
            ["javac", "-d", str(self.classes), str(source)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        self.address = f"127.0.0.1:{jmx_port}"

    def read_all(self, pattern: str = "kafka.server:type=plugins,*") -> list[dict[str, object]]:
        result = subprocess.run(
            ["java", "-cp", str(self.classes), "JmxRead", self.address, pattern],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]

    def read(self) -> dict[str, float | None]:
        values: dict[str, float | None] = {}
        for mbean in self.read_all():
            for attribute, value in dict(mbean["attributes"]).items():  # type: ignore[call-overload]
                if attribute.startswith(METRIC_PREFIX):
                    values[attribute.removeprefix(METRIC_PREFIX)] = value
        return values

    def wait_for(
        self, condition: Callable[[dict[str, float | None]], bool], timeout_s: float = 30
    ) -> dict[str, float | None]:
        deadline = time.monotonic() + timeout_s
        values = self.read()
        while not condition(values):
            if time.monotonic() > deadline:
                raise AssertionError(f"metrics did not reach the expected values: {values}")
            time.sleep(0.5)
            values = self.read()
        return values


@pytest.fixture(scope="module")
def broker(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LocalKafkaCluster, Path, int]]:
    if not PLUGIN_JAR.exists():
        raise AssertionError(
            f"{PLUGIN_JAR} is missing: build it with `mvn -q -B package` in deploy/broker-plugin"
        )
    work = tmp_path_factory.mktemp("callback-metrics")
    decision = work / "decision.json"
    write_decision(decision, "PAUSE", 0.0)
    jmx_port = free_port()
    properties = {
        "client.quota.callback.class": "io.volumequota.broker.VolumeQuotaCallback",
        "volume.quota.decision.path": str(decision),
        "volume.quota.produce.base.bytes.per.second": str(BASE),
        "volume.quota.pause.bytes.per.second": str(FLOOR),
        "volume.quota.excluded.principals": "User:publisher;User:consumer",
        "volume.quota.reload.interval.ms": "250",
    }
    jmx_options = [
        f"-Dcom.sun.management.jmxremote.port={jmx_port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={jmx_port}",
        "-Dcom.sun.management.jmxremote.host=127.0.0.1",
        "-Djava.rmi.server.hostname=127.0.0.1",
        "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false",
    ]
    with LocalKafkaCluster(
        work / "kafka",
        broker_count=1,
        broker_properties=properties,
        extra_classpath=[PLUGIN_JAR],
        extra_jvm_options=jmx_options,
    ) as cluster:
        yield cluster, decision, jmx_port


def produce(cluster: LocalKafkaCluster, topic: str, count: int) -> None:
    producer = Producer({**cluster.client_config("admin"), "acks": "1", "linger.ms": 5})
    for _ in range(count):
        producer.produce(topic, b"x" * 1024)
        producer.poll(0)
    assert producer.flush(60) == 0, "every record delivered"


@pytest.mark.real_broker
def test_callback_metrics_follow_the_decision_on_a_real_broker(
    broker: tuple[LocalKafkaCluster, Path, int], tmp_path: Path
) -> None:
    cluster, decision, jmx_port = broker
    metrics = CallbackMetrics(tmp_path, jmx_port)

    mbeans = [
        m
        for m in metrics.read_all()
        if any(str(a).startswith(METRIC_PREFIX) for a in dict(m["attributes"]))  # type: ignore[call-overload]
    ]
    assert mbeans, "the callback registered no metrics"
    names = {
        str(a).removeprefix(METRIC_PREFIX)
        for m in mbeans
        for a in dict(m["attributes"])  # type: ignore[call-overload]
    }
    assert names == EXPECTED_METRICS
    for mbean in mbeans:
        assert str(mbean["name"]).startswith("kafka.server:")
        assert "type=plugins" in str(mbean["name"])
        assert "config=client.quota.callback.class" in str(mbean["name"])
        assert "class=VolumeQuotaCallback" in str(mbean["name"])
    # A combined node wraps one callback per role; both report the shared engine's values.
    roles = {
        part.split("=", 1)[1]
        for m in mbeans
        for part in str(m["name"]).split(",")
        if "role=" in part
    }
    assert roles == {"broker", "controller"}

    # Started on a PAUSE decision: the floor, and a decision just read.
    values = metrics.wait_for(lambda v: v.get("state") == 2.0)
    # A principal without a measured request size: max(floor, 1 MiB assumed request / 12 s)
    # = 85.3 KiB/s, rounded up to the grid base / 2^(k/4): 1 MiB / 2^3.5.
    assert values["produce-quota-bytes-per-second"] == pytest.approx(BASE / 2**3.5)
    assert values["produce-quota-target-bytes-per-second"] == FLOOR
    assert values["throttle-factor"] == 0.0
    age = values["decision-age-seconds"]
    assert age is not None
    assert 0 <= age < 600
    assert values["poller-errors-total"] == 0

    write_decision(decision, "THROTTLE", 0.5)
    values = metrics.wait_for(lambda v: v.get("state") == 1.0)
    assert values["throttle-factor"] == 0.5
    assert values["produce-quota-bytes-per-second"] == BASE * 0.5

    # A producing principal: tracked, and its byte rate readable from the broker's own MBeans.
    admin = AdminClient(cluster.client_config("admin"))
    created = admin.create_topics(
        [NewTopic("metrics-test", num_partitions=1, replication_factor=1)]
    )
    created["metrics-test"].result(timeout=30)
    produce(cluster, "metrics-test", 200)
    values = metrics.wait_for(
        lambda v: (
            (v.get("tracked-principals") or 0) >= 1 and v.get("observed-rate-available") == 1.0
        )
    )
    assert (values["quota-resets-total"] or 0) >= 1, "the changed quota was handed to the broker"
    assert (values["quota-changes-total"] or 0) >= 1

    write_raw(decision, "{not json")
    values = metrics.wait_for(lambda v: v.get("state") == -1.0)
    assert (values["reload-errors-total"] or 0) >= 1
    assert values["produce-quota-target-bytes-per-second"] == FLOOR, "on-missing PAUSE"
    values = metrics.wait_for(lambda v: (v.get("step-downs-total") or 0) >= 1)

    # An OPEN decision that expires without the file changing: the expiry is counted.
    write_decision(decision, "OPEN", 1.0, valid_for_s=5)
    values = metrics.wait_for(
        lambda v: (v.get("expiries-total") or 0) >= 1 and v.get("state") == -1.0, timeout_s=60
    )
    assert values["produce-quota-target-bytes-per-second"] == FLOOR
    assert "decision OPEN factor 1.0" in cluster.broker_log(0).read_text(), "it was applied first"

    # Combined broker+controller node: two callback instances, one engine (one poller).
    log = cluster.broker_log(0).read_text()
    assert log.count("volume-quota engine #1 started") == 1, "one engine for the process"
    assert "volume-quota engine #1 shared with another callback instance" in log
