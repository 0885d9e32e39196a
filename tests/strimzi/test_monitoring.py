"""Monitoring of the Strimzi mode (deploy/strimzi/monitoring.yaml): a PodMonitor for the cluster
agent and a PrometheusRule on what it serves.

Both validate against the Prometheus Operator CRD schemas (the chart tests' validators,
tests/chart/validate_crds.mjs); the PodMonitor selects the agent's pods and port; every rule
parses with promtool and uses only metrics the agent exports; and promtool runs the alerts on
series labelled as this PodMonitor's scrape labels them (namespace and pod of the target, the
job its relabeling sets), so each fires for what it should and stays quiet otherwise.
"""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.chart.chart_tools import REPO, crd_errors
from tests.chart.test_alert_rules import promtool
from tests.chart.test_monitoring import METRIC_SOURCES, _anchors
from tests.strimzi.recipe import AGENT, RECIPE, agent_container, documents, one

MONITORING = RECIPE / "monitoring.yaml"
NAMESPACE = "kafka"
A0, A1 = "volume-quota-agent-6d9f7c-a0", "volume-quota-agent-6d9f7c-a1"


def _pod_monitor() -> dict[str, Any]:
    return one(documents(MONITORING), "PodMonitor")


def _rules() -> dict[str, dict[str, Any]]:
    rule = one(documents(MONITORING), "PrometheusRule")
    return {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}


def _job() -> str:
    (endpoint,) = _pod_monitor()["spec"]["podMetricsEndpoints"]
    (relabel,) = [r for r in endpoint["relabelings"] if r.get("targetLabel") == "job"]
    assert relabel["action"] == "replace"
    job: str = relabel["replacement"]
    return job


def test_both_validate_against_the_prometheus_operator_crd_schemas() -> None:
    manifests = documents(MONITORING)
    assert sorted(m["kind"] for m in manifests) == ["PodMonitor", "PrometheusRule"]
    assert crd_errors(manifests) == [[], []]
    broken = copy.deepcopy(_pod_monitor())
    broken["spec"]["podMetricsEndpoints"] = "metrics"
    assert crd_errors([broken]) != [[]], "the validator must reject a mistyped field"


def test_the_pod_monitor_scrapes_the_agents_metrics_port() -> None:
    monitor = _pod_monitor()
    deployment = one(documents(AGENT), "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert monitor["metadata"]["namespace"] == deployment["metadata"]["namespace"] == NAMESPACE
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    ports = {port["name"] for port in agent_container()["ports"]}
    assert endpoint["port"] in ports
    assert endpoint["path"] == "/metrics"


def test_every_rule_selects_the_pod_monitors_job_and_uses_metrics_the_agent_exports() -> None:
    source = "\n".join((REPO / path).read_text() for path in METRIC_SOURCES)
    exported = set(re.findall(r'"(volume_quota_[a-z_]+)"', source))
    exported |= {f"{name}_total" for name in exported} | {"up"}
    for name, rule in _rules().items():
        expression = rule["expr"]
        used = set(re.findall(r"\b([a-z_]+)\s*\{", expression))
        assert used, name
        assert used <= exported, f"{name}: {used - exported}"
        for selector in re.findall(r"\{([^}]*)\}", expression):
            assert selector.startswith(f'namespace="{NAMESPACE}", job="{_job()}"'), name


def test_every_runbook_link_has_its_section() -> None:
    base = "https://github.com/volume-quota/volume-quota/blob/main/"
    for name, rule in _rules().items():
        page, _, anchor = rule["annotations"]["runbook_url"].partition("#")
        assert page.startswith(base), name
        document = REPO / page.removeprefix(base)
        assert anchor in _anchors(document.read_text()), f"{name}: {page}#{anchor}"


def test_every_rule_parses(tmp_path: Path) -> None:
    rule = one(documents(MONITORING), "PrometheusRule")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    completed = subprocess.run(
        [promtool(), "check", "rules", str(tmp_path / "rules.yaml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def _series(name: str, values: str, pod: str, **labels: str) -> dict[str, str]:
    # What the PodMonitor's scrape attaches to every sample of an agent pod.
    scraped = {
        "namespace": NAMESPACE,
        "job": _job(),
        "pod": pod,
        "container": "agent",
        "endpoint": "metrics",
        "instance": f"10.0.1.{7 if pod == A0 else 8}:9464",
        **labels,
    }
    text = ", ".join(f'{key}="{value}"' for key, value in scraped.items())
    return {"series": f"{name}{{{text}}}", "values": values}


def _fires(alert: str, at: str, labels: list[dict[str, str]]) -> dict[str, Any]:
    return {"eval_time": at, "alertname": alert, "exp_alerts": [{"exp_labels": x} for x in labels]}


def _run_alerts(
    series: list[dict[str, str]], checks: list[dict[str, Any]], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    rule = one(documents(MONITORING), "PrometheusRule")
    groups = copy.deepcopy(rule["spec"]["groups"])
    for group in groups:
        for entry in group["rules"]:
            entry.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": checks}],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    return subprocess.run(
        [promtool(), "test", "rules", "tests.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_alerts_on_series_as_the_pod_monitor_scrapes_them(tmp_path: Path) -> None:
    job = _job()
    agent = {"namespace": NAMESPACE, "job": job, "severity": "warning"}
    series = [
        # Agent a0 stops answering after 2 minutes; a1 keeps running.
        _series("up", "1 1 0+0x20", A0),
        _series("up", "1+0x22", A1),
        # a1 loses its Kafka connection for good after 3 minutes.
        _series("volume_quota_publisher_kafka_connected", "1 1 1 0+0x20", A1),
        # a1 decides PAUSE after 4 minutes, with one unknown broker.
        _series("volume_quota_decision_state", "1 1 1 1 0+0x20", A1, state="OPEN"),
        _series("volume_quota_decision_state", "0 0 0 0 1+0x20", A1, state="PAUSE"),
        _series("volume_quota_decision_state", "0+0x22", A1, state="THROTTLE"),
        _series("volume_quota_unknown_brokers", "0 0 0 0 1+0x20", A1),
    ]
    checks = [
        _fires(
            "VolumeQuotaAgentDown",
            "10m",
            [
                {
                    **agent,
                    "pod": A0,
                    "container": "agent",
                    "endpoint": "metrics",
                    "instance": "10.0.1.7:9464",
                }
            ],
        ),
        _fires("VolumeQuotaAgentsAllDown", "10m", []),
        _fires(
            "VolumeQuotaAgentCannotReachKafka",
            "10m",
            [{"namespace": NAMESPACE, "pod": A1, "severity": "warning"}],
        ),
        _fires("VolumeQuotaPauseInForce", "3m", []),
        _fires(
            "VolumeQuotaPauseInForce",
            "6m",
            [{"namespace": NAMESPACE, "severity": "critical"}],
        ),
        _fires("VolumeQuotaThrottleInForce", "10m", []),
        _fires(
            "VolumeQuotaUnknownBrokers",
            "10m",
            [{"namespace": NAMESPACE, "severity": "warning"}],
        ),
        _fires("VolumeQuotaAgentMetricsAbsent", "20m", []),
    ]
    completed = _run_alerts(series, checks, tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_all_agents_down_and_no_agent_at_all(tmp_path: Path) -> None:
    series = [_series("up", "0+0x20", A0), _series("up", "0+0x20", A1)]
    checks = [
        _fires("VolumeQuotaAgentsAllDown", "1m", []),
        _fires(
            "VolumeQuotaAgentsAllDown",
            "5m",
            [{"namespace": NAMESPACE, "job": _job(), "severity": "critical"}],
        ),
    ]
    assert _run_alerts(series, checks, tmp_path).returncode == 0
    absent = [
        _fires(
            "VolumeQuotaAgentMetricsAbsent",
            "15m",
            [{"namespace": NAMESPACE, "job": _job(), "severity": "warning"}],
        )
    ]
    other = [{"series": 'up{namespace="other", job="x", pod="p"}', "values": "1+0x20"}]
    completed = _run_alerts(other, absent, tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_the_scrape_labels_matter(tmp_path: Path) -> None:
    """Series without the PodMonitor's job fire nothing: the labels above are not decoration."""
    series = [
        {
            "series": 'up{namespace="kafka", job="kafka/volume-quota-agent", pod="p"}',
            "values": "0+0x20",
        }
    ]
    checks = [_fires("VolumeQuotaAgentDown", "10m", [])]
    assert _run_alerts(series, checks, tmp_path).returncode == 0


def test_the_upload_backlog_alert_fires_once_per_broker_volume_above_1_gib(
    tmp_path: Path,
) -> None:
    """Both agents publish broker 2's usage: one alert for its volume, after 15 minutes above
    1 GiB; broker 1's 100 MiB backlog is not alarming; a drained backlog clears it."""
    mib = 1024 * 1024
    labels = {"broker": "2", "volume": "/var/lib/kafka/data-0"}
    series = [
        _series(
            "volume_quota_volume_upload_backlog_bytes", f"0+{100 * mib}x40 0+0x20", pod, **labels
        )
        for pod in (A0, A1)
    ]
    series.append(
        _series(
            "volume_quota_volume_upload_backlog_bytes",
            f"{100 * mib}+0x60",
            A0,
            broker="1",
            volume="/var/lib/kafka/data-0",
        )
    )
    firing = {"namespace": NAMESPACE, **labels, "severity": "warning"}
    checks = [
        _fires("VolumeQuotaTieredUploadBacklog", "25m", []),
        _fires("VolumeQuotaTieredUploadBacklog", "30m", [firing]),
        _fires("VolumeQuotaTieredUploadBacklog", "45m", []),
    ]
    completed = _run_alerts(series, checks, tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
