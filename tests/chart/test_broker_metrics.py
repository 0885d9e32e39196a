"""kafka.metrics: the Prometheus JMX exporter agent from the volume-quota image, copied into the
broker pod by an init container and loaded into the broker JVM only, its port on the Services
and the NetworkPolicy, the same pieces in attach mode, and the switch that follows the
monitoring."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.chart.chart_tools import (
    CHART,
    CI_VALUES,
    REPO,
    HelmError,
    Manifest,
    attach_snippets,
    container,
    env_values,
    find,
    mounts,
    pod_spec,
    render,
)
from tests.chart.test_start_scripts import FULLNAME, _kafka_start_script

DOCKERFILE = REPO / "deploy" / "container" / "Dockerfile"
EXPORTER_CONFIGS = REPO / "deploy" / "container" / "jmx-exporter"
ATTACH_VALUES = next(path for path in CI_VALUES if path.name == "attach-values.yaml")
MONITORING = {"serviceMonitor.enabled": "true", "prometheusRule.enabled": "true"}
PLUGIN_DIR = "/opt/volume-quota/broker-plugin"
AGENT_OPTION = re.compile(r"-javaagent:(?P<jar>[^=]+)=(?P<port>\d+):(?P<config>[^\s\"]+)")
# Records the KAFKA_OPTS each Kafka tool was started with.
RECORDING_TOOL = """#!/bin/bash
printf '%s' "${KAFKA_OPTS:-}" > "$(dirname "$0")/$(basename "$0").opts"
"""


@pytest.fixture(scope="module")
def monitored() -> list[Manifest]:
    return render(settings=MONITORING)


def _agent_option(manifests: list[Manifest]) -> re.Match[str]:
    script = find(manifests, "ConfigMap", f"{FULLNAME}-kafka")["data"]["kafka-start.sh"]
    matches = list(AGENT_OPTION.finditer(script))
    assert len(matches) == 1, "one -javaagent option in kafka-start.sh"
    return matches[0]


def _has_agent(manifests: list[Manifest]) -> bool:
    spec = pod_spec(manifests)
    names = [entry["name"] for entry in spec.get("initContainers", [])]
    script = find(manifests, "ConfigMap", f"{FULLNAME}-kafka")["data"]["kafka-start.sh"]
    ports = [port["name"] for port in container(spec, "kafka")["ports"]]
    present = ["install-metrics-agent" in names, "-javaagent" in script, "broker-metrics" in ports]
    assert len(set(present)) == 1, f"the agent's pieces come together: {present}"
    return present[0]


def test_the_agent_follows_the_monitoring_unless_set(default_manifests: list[Manifest]) -> None:
    assert not _has_agent(default_manifests)
    assert _has_agent(render(settings={"serviceMonitor.enabled": "true"}))
    assert _has_agent(render(settings={"prometheusRule.enabled": "true"}))
    assert _has_agent(render(settings={"kafka.metrics.enabled": "true"}))
    assert not _has_agent(render(settings={**MONITORING, "kafka.metrics.enabled": "false"}))
    # Without the callback there is nothing to export.
    assert not _has_agent(render(settings={**MONITORING, "quota.enabled": "false"}))


def test_the_init_container_copies_what_the_broker_jvm_loads(monitored: list[Manifest]) -> None:
    spec = pod_spec(monitored)
    init = container(spec, "install-metrics-agent", init=True)
    plugin = container(spec, "install-broker-plugin", init=True)
    kafka = container(spec, "kafka")
    values = yaml.safe_load((CHART / "values.yaml").read_text())["sidecar"]["image"]
    assert init["image"] == plugin["image"] == container(spec, "volume-quota")["image"]
    assert init["securityContext"] == plugin["securityContext"]
    command = init["command"]
    assert command[0] == "cp"
    assert command[1] == values["metricsAgentPath"]
    assert command[2] == f"{values['metricsConfigDir']}/volume-quota-callback.yaml"
    assert command[3] == f"{PLUGIN_DIR}/"
    # The option names the files where cp puts them, on the volume the broker mounts.
    option = _agent_option(monitored)
    assert option["jar"] == f"{PLUGIN_DIR}/{Path(command[1]).name}"
    assert option["config"] == f"{PLUGIN_DIR}/{Path(command[2]).name}"
    assert mounts(init)[PLUGIN_DIR]["name"] == mounts(kafka)[PLUGIN_DIR]["name"]
    assert mounts(kafka)[PLUGIN_DIR]["readOnly"] is True
    port = next(p for p in kafka["ports"] if p["name"] == "broker-metrics")
    assert port["containerPort"] == int(option["port"]) == 9404
    assert "KAFKA_OPTS" not in env_values(kafka), "never for every JVM of the container"


def test_the_image_ships_the_agent_and_configs_where_the_chart_copies_them_from() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())["sidecar"]["image"]
    dockerfile = re.sub(r"\s*\\\n\s*", " ", DOCKERFILE.read_text())
    assert re.search(
        rf"^COPY --from=plugin \S+ /build/jmx_prometheus_javaagent\.jar "
        rf"{re.escape(values['metricsAgentPath'])}$",
        dockerfile,
        re.MULTILINE,
    )
    configs = sorted(path.name for path in EXPORTER_CONFIGS.glob("*.yaml"))
    assert configs == ["volume-quota-callback-and-kafka.yaml", "volume-quota-callback.yaml"]
    copy = next(line for line in dockerfile.splitlines() if "jmx-exporter/volume-quota" in line)
    assert copy.endswith(f" {values['metricsConfigDir']}/")
    for name in configs:
        assert f"deploy/container/jmx-exporter/{name}" in copy
    ignore = (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().splitlines()
    assert "!deploy/container/jmx-exporter/" in ignore
    assert "!deploy/container/target/jmx_prometheus_javaagent.jar" in ignore


def test_kafka_metrics_switches_to_the_configuration_with_kafkas_own_series() -> None:
    manifests = render(settings={**MONITORING, "kafka.metrics.kafkaMetrics": "true"})
    init = container(pod_spec(manifests), "install-metrics-agent", init=True)
    assert init["command"][2].endswith("/volume-quota-callback-and-kafka.yaml")
    assert _agent_option(manifests)["config"].endswith("/volume-quota-callback-and-kafka.yaml")


def test_the_port_is_on_the_headless_service_and_the_network_policy(
    monitored: list[Manifest],
) -> None:
    headless = find(monitored, "Service", f"{FULLNAME}-headless")
    port = next(p for p in headless["spec"]["ports"] if p["name"] == "broker-metrics")
    assert port == {"name": "broker-metrics", "port": 9404, "targetPort": "broker-metrics"}
    bootstrap = find(monitored, "Service", FULLNAME)
    assert [p["name"] for p in bootstrap["spec"]["ports"]] == ["client"]
    policy = find(render(settings={**MONITORING, "networkPolicy.enabled": "true"}), "NetworkPolicy")
    metrics_rule = next(
        rule for rule in policy["spec"]["ingress"] if {"port": 9464} in rule["ports"]
    )
    assert {"port": 9404} in metrics_rule["ports"]
    moved = render(settings={**MONITORING, "kafka.metrics.port": "9500"})
    assert _agent_option(moved)["port"] == "9500"


def test_impossible_settings_are_refused() -> None:
    with pytest.raises(HelmError, match=r"kafka\.metrics\.enabled=true needs quota\.enabled=true"):
        render(settings={"kafka.metrics.enabled": "true", "quota.enabled": "false"})
    with pytest.raises(HelmError, match=r"kafka\.metrics\.port 9464 is already used"):
        render(settings={**MONITORING, "kafka.metrics.port": "9464"})
    with pytest.raises(HelmError, match=r"kafka\.metrics\.port 9092 is already used"):
        render(settings={**MONITORING, "kafka.metrics.port": "9092"})
    with pytest.raises(HelmError, match="port"):
        render(settings={"kafka.metrics.port": "70000"})


def test_only_the_brokers_jvm_loads_the_agent(monitored: list[Manifest], tmp_path: Path) -> None:
    """kafka-start.sh run against stand-ins: the storage tool (run first, in the same container)
    must not load the agent, or the broker's start would race it for the port."""
    script = _kafka_start_script(monitored, tmp_path)
    bin_dir = tmp_path / "kafka" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("kafka-storage.sh", "kafka-server-start.sh"):
        (bin_dir / tool).write_text(RECORDING_TOOL)
        (bin_dir / tool).chmod(0o755)
    kafka = container(pod_spec(monitored), "kafka")
    env = {
        "PATH": os.environ["PATH"],
        **env_values(kafka),
        "KAFKA_HOME": str(tmp_path / "kafka"),
        "POD_NAME": f"{FULLNAME}-0",
        "HOSTNAME": f"{FULLNAME}-0",
        "KAFKA_NODE_ID": "0",
        "TLS_RELOAD_INTERVAL_SECONDS": "0",
        "KAFKA_OPTS": "-Dalready=set",
    }
    completed = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=False, timeout=30
    )
    assert completed.returncode == 0, completed.stderr
    option = _agent_option(monitored)[0]
    assert (bin_dir / "kafka-storage.sh.opts").read_text() == "-Dalready=set"
    assert (bin_dir / "kafka-server-start.sh.opts").read_text() == f"-Dalready=set {option}"


def test_attach_mode_carries_the_same_pieces(monitored: list[Manifest]) -> None:
    attached = render([ATTACH_VALUES])  # monitoring on in that file
    snippets = attach_snippets(attached)
    own = container(pod_spec(monitored), "install-metrics-agent", init=True)
    assert snippets["metrics-init-container.yaml"]["command"] == own["command"]
    assert snippets["broker-kafka-opts"] == _agent_option(monitored)[0]
    # The agent lands on the volume the callback jar already uses.
    init_volumes = {m["name"] for m in snippets["metrics-init-container.yaml"]["volumeMounts"]}
    assert init_volumes == {m["name"] for m in snippets["init-container.yaml"]["volumeMounts"]}
    service = find(attached, "Service", f"{FULLNAME}-metrics")
    port = next(p for p in service["spec"]["ports"] if p["name"] == "broker-metrics")
    assert port == {"name": "broker-metrics", "port": 9404, "targetPort": 9404}
    monitor = find(attached, "ServiceMonitor")
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics", "broker-metrics"]
    off = attach_snippets(render([ATTACH_VALUES], {"kafka.metrics.enabled": "false"}))
    assert "metrics-init-container.yaml" not in off
    assert "broker-kafka-opts" not in off
