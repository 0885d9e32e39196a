"""The quota callback's metrics as Prometheus series, scraped from the JMX exporter java agent
inside a real broker: the path the Helm chart sets up (kafka.metrics).

One combined KRaft node (Kafka 4.3.1 from ``local_cluster``) runs with the plugin jar on its
classpath and ``-javaagent:jmx_prometheus_javaagent.jar=127.0.0.1:PORT:volume-quota-callback.yaml``,
the exporter configuration the image ships (deploy/container/jmx-exporter). The test scrapes
``/metrics`` before and after a decision file is written and checks the series, their labels and
their values, and that the configuration exports nothing but the callback's series (besides the
agent's own jvm_*, process_* and jmx_* series, which it always adds).

Needs the plugin jar (``cd deploy/broker-plugin && mvn -q -B package``); the agent is taken
from deploy/container/target/ (deploy/container/build.sh fetches it) or fetched with mvn.
Run alone: ``python3 -m pytest tests/real_broker/test_callback_prometheus.py -x``.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from local_cluster import LocalKafkaCluster
from tests.real_broker.test_callback_metrics import EXPECTED_METRICS

REPO = Path(__file__).resolve().parents[2]
PLUGIN_JAR = REPO / "deploy" / "broker-plugin" / "target" / "volume-quota-broker-plugin-0.1.0.jar"
CONTAINER = REPO / "deploy" / "container"
EXPORTER_CONFIG = CONTAINER / "jmx-exporter" / "volume-quota-callback.yaml"
BUILT_AGENT = CONTAINER / "target" / "jmx_prometheus_javaagent.jar"
BUILT_AGENT_VERSION = CONTAINER / "target" / "jmx_prometheus_javaagent.version"
MIB = 1024 * 1024
BASE = 1 * MIB
FLOOR = 64 * 1024
PREFIX = "volume_quota_callback_"
# Series the agent adds on its own, whatever the configuration says.
AGENT_OWN = ("jvm_", "process_", "jmx_")


def agent_version() -> str:
    match = re.search(
        r"^ARG JMX_EXPORTER_VERSION=(\S+)$", (CONTAINER / "Dockerfile").read_text(), re.MULTILINE
    )
    assert match is not None, "deploy/container/Dockerfile sets no JMX_EXPORTER_VERSION"
    return match[1]


def java_agent(work: Path) -> Path:
    """The agent build.sh fetched, if it is the Dockerfile's version; else fetched with mvn."""
    version = agent_version()
    built = BUILT_AGENT_VERSION.read_text().strip() if BUILT_AGENT_VERSION.is_file() else None
    if BUILT_AGENT.is_file() and built == version:
        return BUILT_AGENT
    subprocess.run(
        [
            "mvn",
            "-q",
            "-B",
            "dependency:copy",
            f"-Dartifact=io.prometheus.jmx:jmx_prometheus_javaagent:{version}",
            f"-DoutputDirectory={work}",
        ],
        cwd=work,
        check=True,
        capture_output=True,
        timeout=300,
    )
    agent = work / f"jmx_prometheus_javaagent-{version}.jar"
    assert agent.is_file(), f"mvn did not fetch {agent.name}"
    return agent


def configured_series() -> dict[str, str]:
    """Series name -> type of every rule in the exporter configuration."""
    config = yaml.safe_load(EXPORTER_CONFIG.read_text())
    return {rule["name"]: rule["type"] for rule in config["rules"]}


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
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(decision))
    os.replace(tmp, path)


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


class Scraper:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"

    def scrape(self) -> tuple[dict[str, str], list[Sample]]:
        """(family name -> type, every sample) from the agent's text exposition."""
        with urllib.request.urlopen(self.url, timeout=10) as response:
            assert response.status == 200
            text = response.read().decode()
        types: dict[str, str] = {}
        samples: list[Sample] = []
        for family in text_string_to_metric_families(text):
            types[family.name] = family.type
            samples += [Sample(s.name, dict(s.labels), float(s.value)) for s in family.samples]
        return types, samples

    def callback(self) -> dict[str, dict[str, float]]:
        """volume_quota_callback_* sample name -> role -> value."""
        values: dict[str, dict[str, float]] = {}
        for sample in self.scrape()[1]:
            if sample.name.startswith(PREFIX):
                values.setdefault(sample.name, {})[sample.labels["role"]] = sample.value
        return values

    def wait_for(
        self, condition: Callable[[dict[str, dict[str, float]]], bool], timeout_s: float = 30
    ) -> dict[str, dict[str, float]]:
        deadline = time.monotonic() + timeout_s
        values = self.callback()
        while not condition(values):
            if time.monotonic() > deadline:
                raise AssertionError(f"the series did not reach the expected values: {values}")
            time.sleep(0.5)
            values = self.callback()
        return values


@pytest.fixture(scope="module")
def broker(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LocalKafkaCluster, Path, Scraper]]:
    if not PLUGIN_JAR.exists():
        raise AssertionError(
            f"{PLUGIN_JAR} is missing: build it with `mvn -q -B package` in deploy/broker-plugin"
        )
    work = tmp_path_factory.mktemp("callback-prometheus")
    agent = java_agent(work)
    decision = work / "decision.json"  # not written yet: no valid decision at start
    port = free_port()
    properties = {
        "client.quota.callback.class": "io.volumequota.broker.VolumeQuotaCallback",
        "volume.quota.decision.path": str(decision),
        "volume.quota.produce.base.bytes.per.second": str(BASE),
        "volume.quota.pause.bytes.per.second": str(FLOOR),
        "volume.quota.excluded.principals": "User:publisher;User:consumer",
        "volume.quota.reload.interval.ms": "250",
    }
    with LocalKafkaCluster(
        work / "kafka",
        broker_count=1,
        broker_properties=properties,
        extra_classpath=[PLUGIN_JAR],
        extra_jvm_options=[f"-javaagent:{agent}=127.0.0.1:{port}:{EXPORTER_CONFIG}"],
    ) as cluster:
        yield cluster, decision, Scraper(port)


@pytest.mark.real_broker
def test_the_agent_exports_the_callback_metrics_as_prometheus_series(
    broker: tuple[LocalKafkaCluster, Path, Scraper],
) -> None:
    cluster, decision, scraper = broker
    expected = configured_series()
    assert len(expected) == len(EXPECTED_METRICS), "one series per callback metric"

    # Every configured series, for both callback instances of the combined node, and no other
    # series from the broker's MBeans: only the agent's own jvm_*, process_* and jmx_* ones.
    types, samples = scraper.scrape()
    exported = {s.name for s in samples if s.name.startswith(PREFIX)}
    assert exported == set(expected)
    others = {s.name for s in samples if not s.name.startswith((PREFIX, *AGENT_OWN))}
    assert others == set(), f"series besides the callback's: {sorted(others)}"
    for name, rule_type in expected.items():
        family = name.removesuffix("_total") if rule_type == "COUNTER" else name
        assert types[family] == rule_type.lower(), name
        roles = {s.labels["role"] for s in samples if s.name == name}
        assert roles == {"broker", "controller"}, name
    jmx_errors = [s.value for s in samples if s.name == "jmx_scrape_error"]
    assert jmx_errors == [0.0], "the agent read every MBean it was given"

    # No decision file yet: no valid decision (-1), none ever read (age -1), the on-missing
    # PAUSE floor as the target.
    values = scraper.wait_for(lambda v: v[f"{PREFIX}state"]["broker"] == -1.0)
    assert values[f"{PREFIX}decision_age_seconds"] == {"broker": -1.0, "controller": -1.0}
    assert values[f"{PREFIX}produce_quota_target_bytes_per_second"]["broker"] == FLOOR
    assert math.isnan(values[f"{PREFIX}throttle_factor"]["broker"])

    # A THROTTLE decision: state 1 on both roles (one shared engine), its factor and quota, and
    # a decision just read.
    write_decision(decision, "THROTTLE", 0.5)
    values = scraper.wait_for(lambda v: v[f"{PREFIX}state"] == {"broker": 1.0, "controller": 1.0})
    assert values[f"{PREFIX}throttle_factor"]["broker"] == 0.5
    assert values[f"{PREFIX}produce_quota_bytes_per_second"]["broker"] == BASE * 0.5
    assert values[f"{PREFIX}produce_quota_target_bytes_per_second"]["broker"] == BASE * 0.5
    for role in ("broker", "controller"):
        assert 0 <= values[f"{PREFIX}decision_age_seconds"][role] < 10, role
    assert values[f"{PREFIX}reload_errors_total"]["broker"] == 0
    assert values[f"{PREFIX}poller_errors_total"]["broker"] == 0
    assert values[f"{PREFIX}quota_limit_errors_total"]["broker"] == 0
    assert values[f"{PREFIX}expiries_total"]["broker"] == 0
    assert values[f"{PREFIX}quota_changes_total"]["broker"] >= 1, "the default quota changed"

    # PAUSE: state 2 and the floor.
    write_decision(decision, "PAUSE", 0.0)
    values = scraper.wait_for(lambda v: v[f"{PREFIX}state"]["broker"] == 2.0)
    assert values[f"{PREFIX}produce_quota_target_bytes_per_second"]["broker"] == FLOOR
    assert values[f"{PREFIX}throttle_factor"]["broker"] == 0.0

    # A broken file: counted as a reload error (what VolumeQuotaBrokerDecisionReloadErrors
    # watches), and no valid decision any more.
    tmp = decision.with_name("broken.tmp")
    tmp.write_text("{not json")
    os.replace(tmp, decision)
    values = scraper.wait_for(lambda v: v[f"{PREFIX}state"]["broker"] == -1.0)
    assert values[f"{PREFIX}reload_errors_total"]["broker"] >= 1
    assert values[f"{PREFIX}decision_age_seconds"]["broker"] >= 0, "a valid one was read before"
    assert cluster.is_running(0)
