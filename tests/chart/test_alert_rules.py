"""The PrometheusRule's alerts run by Prometheus' own rule engine (promtool): every expression and
annotation template of every shipped value set parses, and the broker callback alerts fire, and
stay quiet, on synthetic series shaped like the JMX exporter's (labels as the ServiceMonitor sets
them: namespace, job, pod; the callback's role).

promtool comes from deploy/helm/install-helm.sh (Debian's package prometheus)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart.chart_tools import (
    INSTALL_SCRIPT,
    REPO,
    SHIPPED_VALUES,
    Manifest,
    find,
    render,
)
from tests.chart.test_monitoring import BROKER_JOB, CALLBACK_ALERTS, FULLNAME

NAMESPACE = "kafka"
P0, P1 = f"{FULLNAME}-0", f"{FULLNAME}-1"
MONITORING = {"serviceMonitor.enabled": "true", "prometheusRule.enabled": "true"}


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            f"promtool not found: run `bash {INSTALL_SCRIPT.relative_to(REPO)}`", pytrace=False
        )
    return path


def _groups(manifests: list[Manifest]) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = find(manifests, "PrometheusRule")["spec"]["groups"]
    return groups


def _run(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *arguments], capture_output=True, text=True, check=False, timeout=120
    )


@pytest.mark.parametrize(
    "values",
    [pytest.param([], id="default")]
    + [pytest.param([path], id=str(path.relative_to(REPO))) for path in SHIPPED_VALUES],
)
def test_every_rule_parses(values: list[Path], tmp_path: Path) -> None:
    manifests = render(values, MONITORING | {"prometheusRule.brokerCertificateName": "kafka-b"})
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": _groups(manifests)}))
    completed = _run("check", "rules", str(rules))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "SUCCESS" in completed.stdout


def test_promtool_rejects_a_broken_expression(tmp_path: Path) -> None:
    groups = _groups(render(settings=MONITORING))
    groups[-1]["rules"][0]["expr"] = "max by (namespace, pod) (volume_quota_callback_state{"
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": groups}))
    assert _run("check", "rules", str(rules)).returncode != 0


def _series(name: str, values: str, **labels: str) -> dict[str, str]:
    selector = {"namespace": NAMESPACE, "job": BROKER_JOB, **labels}
    text = ", ".join(f'{key}="{value}"' for key, value in selector.items())
    return {"series": f"{name}{{{text}}}", "values": values}


def _both_roles(name: str, values: str, pod: str) -> list[dict[str, str]]:
    return [_series(name, values, pod=pod, role=role) for role in ("broker", "controller")]


def _fires(alert: str, at: str, *pods: str, severity: str = "warning") -> dict[str, Any]:
    return {
        "eval_time": at,
        "alertname": alert,
        "exp_alerts": [
            {"exp_labels": {"namespace": NAMESPACE, "pod": pod, "severity": severity}}
            for pod in pods
        ],
    }


# (name, input series, expectations); every test runs one minute apart samples.
SCENARIOS: list[tuple[str, list[dict[str, str]], list[dict[str, Any]]]] = [
    (
        "no valid decision: only after 3 minutes, only the broker at -1",
        [
            *_both_roles("volume_quota_callback_state", "-1+0x10", P0),
            *_both_roles("volume_quota_callback_state", "0+0x10", P1),
        ],
        [
            _fires("VolumeQuotaBrokerNoValidDecision", "2m"),
            _fires("VolumeQuotaBrokerNoValidDecision", "4m", P0, severity="critical"),
        ],
    ),
    (
        "stale decision: above 60 s for 2 minutes; -1 (none read yet) is not stale",
        [
            *_both_roles("volume_quota_callback_decision_age_seconds", "5 5 5 100+0x10", P0),
            *_both_roles("volume_quota_callback_decision_age_seconds", "-1+0x12", P1),
        ],
        [
            _fires("VolumeQuotaBrokerDecisionStale", "4m"),
            _fires("VolumeQuotaBrokerDecisionStale", "6m", P0),
        ],
    ),
    (
        "reload errors: an increase alerts, and clears 15 minutes later",
        [
            *_both_roles("volume_quota_callback_reload_errors_total", "0 0 1+0x30", P0),
            *_both_roles("volume_quota_callback_reload_errors_total", "0+0x32", P1),
        ],
        [
            _fires("VolumeQuotaBrokerDecisionReloadErrors", "4m", P0),
            _fires("VolumeQuotaBrokerDecisionReloadErrors", "25m"),
        ],
    ),
    (
        "expiries: one (a sidecar restart) is tolerated, two in 30 minutes alert",
        [
            *_both_roles("volume_quota_callback_expiries_total", "0 0 1+0x30", P0),
            *_both_roles("volume_quota_callback_expiries_total", "0 0 1 1 2+0x30", P1),
        ],
        [_fires("VolumeQuotaBrokerDecisionExpiries", "10m", P1)],
    ),
    (
        "poller errors: any increase alerts",
        [
            *_both_roles("volume_quota_callback_poller_errors_total", "0 0 3+0x30", P0),
            *_both_roles("volume_quota_callback_poller_errors_total", "0+0x32", P1),
        ],
        [
            _fires("VolumeQuotaBrokerCallbackPollerErrors", "5m", P0),
            _fires("VolumeQuotaBrokerCallbackPollerErrors", "30m"),
        ],
    ),
    (
        "observed rate unavailable: only while principals produce, after 10 minutes",
        [
            *_both_roles("volume_quota_callback_observed_rate_available", "0+0x15", P0),
            *_both_roles("volume_quota_callback_tracked_principals", "2+0x15", P0),
            *_both_roles("volume_quota_callback_observed_rate_available", "0+0x15", P1),
            *_both_roles("volume_quota_callback_tracked_principals", "0+0x15", P1),
        ],
        [
            _fires("VolumeQuotaBrokerObservedRateUnavailable", "9m"),
            _fires("VolumeQuotaBrokerObservedRateUnavailable", "12m", P0),
        ],
    ),
    (
        "an agent that answers without callback series; none at all from any broker",
        [
            _series("up", "1+0x15", pod=P0, instance="10.0.0.1:9404"),
            _series("up", "1+0x15", pod=P1, instance="10.0.0.2:9404"),
            *_both_roles("volume_quota_callback_state", "0+0x15", P0),
        ],
        [
            _fires("VolumeQuotaBrokerCallbackMetricsMissing", "9m"),
            _fires("VolumeQuotaBrokerCallbackMetricsMissing", "12m", P1),
            _fires("VolumeQuotaBrokerCallbackMetricsAbsent", "12m"),
        ],
    ),
    (
        "no callback series at all",
        [_series("up", "0+0x15", pod=P0, instance="10.0.0.1:9404")],
        [
            {
                "eval_time": "12m",
                "alertname": "VolumeQuotaBrokerCallbackMetricsAbsent",
                "exp_alerts": [
                    {
                        "exp_labels": {
                            "namespace": NAMESPACE,
                            "job": BROKER_JOB,
                            "severity": "warning",
                        }
                    }
                ],
            },
            {
                "eval_time": "6m",
                "alertname": "VolumeQuotaBrokerMetricsDown",
                "exp_alerts": [
                    {
                        "exp_labels": {
                            "namespace": NAMESPACE,
                            "job": BROKER_JOB,
                            "pod": P0,
                            "instance": "10.0.0.1:9404",
                            "severity": "warning",
                        }
                    }
                ],
            },
            # The sidecars' alerts select the sidecars' job only.
            {"eval_time": "10m", "alertname": "VolumeQuotaSidecarDown", "exp_alerts": []},
        ],
    ),
]


def test_the_scenarios_cover_every_callback_alert() -> None:
    tested = {check["alertname"] for _, _, checks in SCENARIOS for check in checks}
    assert tested >= CALLBACK_ALERTS


@pytest.mark.parametrize(
    ("series", "checks"),
    [pytest.param(series, checks, id=name) for name, series, checks in SCENARIOS],
)
def test_the_callback_alerts_on_synthetic_series(
    series: list[dict[str, str]], checks: list[dict[str, Any]], tmp_path: Path
) -> None:
    groups = _groups(render(settings=MONITORING))
    # Annotations (templated with $value) are checked by test_every_rule_parses; here only the
    # expressions, durations and labels are compared.
    for group in groups:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": checks}],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    completed = subprocess.run(
        [promtool(), "test", "rules", "tests.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
