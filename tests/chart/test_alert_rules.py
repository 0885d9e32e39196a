"""The PrometheusRule's alerts run by Prometheus' own rule engine (promtool): every expression and
annotation template of every shipped value set parses, and the broker callback alerts fire, and
stay quiet, on synthetic series shaped like the JMX exporter's (labels as the ServiceMonitor sets
them: namespace, job, pod; the callback's role).

promtool comes from deploy/helm/install-helm.sh (Debian's package prometheus)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
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


def promtool_failures(directory: Path, tests: Mapping[str, Any]) -> str:
    """Run ``promtool test rules`` on ``tests`` (written to ``directory``, beside the rule files
    they name): "" when every test passes, else promtool's report."""
    (directory / "tests.yaml").write_text(yaml.safe_dump(dict(tests)))
    completed = subprocess.run(
        [promtool(), "test", "rules", "tests.yaml"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return "" if completed.returncode == 0 else completed.stdout + completed.stderr


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
    failures = promtool_failures(tmp_path, tests)
    assert not failures, failures


# certmanager_certificate_expiration_timestamp_seconds as Prometheus stores it when it scrapes
# cert-manager with the default ServiceMonitor/PodMonitor (honorLabels false): the target's
# namespace (cert-manager's own) wins, and the Certificate's namespace, exported by cert-manager
# as `namespace`, is renamed `exported_namespace`. With honorLabels true the exported label is
# kept as `namespace`. Both must fire for the broker Certificate, and only for it.
_CERT_METRIC = "certmanager_certificate_expiration_timestamp_seconds"
_CERT_SCRAPE = {
    "job": "cert-manager",
    "namespace": "cert-manager",
    "service": "cert-manager",
    "endpoint": "tcp-prometheus-servicemonitor",
    "container": "cert-manager-controller",
    "pod": "cert-manager-5d7f97b46d-x2x9k",
    "instance": "10.0.3.7:9402",
    "issuer_group": "cert-manager.io",
    "issuer_kind": "Issuer",
    "issuer_name": "kafka-ca",
}
_DAY = 86400


def _cert_series(expires_at: int, **labels: str) -> dict[str, str]:
    text = ", ".join(f'{key}="{value}"' for key, value in labels.items())
    return {"series": f"{_CERT_METRIC}{{{text}}}", "values": f"{expires_at}+0x30"}


def _broker_certificate_alert_test(
    series: list[dict[str, str]], tmp_path: Path, *, fires: bool = True
) -> str:
    """promtool's complaints (empty: as expected): quiet after 5 minutes (its `for` is 10m),
    then firing at 15 minutes for the broker Certificate alone if ``fires``, else quiet."""
    groups = _groups(
        render(settings=MONITORING | {"prometheusRule.brokerCertificateName": "kafka-broker"})
    )
    for group in groups:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    expected = {"name": "kafka-broker", "namespace": NAMESPACE, "severity": "warning"}
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    {"eval_time": "5m", "alertname": "VolumeQuotaBrokerCertificateExpiring"},
                    {
                        "eval_time": "15m",
                        "alertname": "VolumeQuotaBrokerCertificateExpiring",
                        "exp_alerts": [{"exp_labels": expected}] if fires else [],
                    },
                ],
            }
        ],
    }
    return promtool_failures(tmp_path, tests)


def test_the_broker_certificate_alert_fires_on_the_default_cert_manager_scrape(
    tmp_path: Path,
) -> None:
    series = [
        # The broker Certificate, 3 days left (under the 14-day threshold).
        _cert_series(3 * _DAY, **_CERT_SCRAPE, exported_namespace=NAMESPACE, name="kafka-broker"),
        # Same name in another namespace, and another Certificate here: neither may fire.
        _cert_series(2 * _DAY, **_CERT_SCRAPE, exported_namespace="other", name="kafka-broker"),
        _cert_series(1 * _DAY, **_CERT_SCRAPE, exported_namespace=NAMESPACE, name="web"),
    ]
    failure = _broker_certificate_alert_test(series, tmp_path)
    assert not failure, failure


def test_the_broker_certificate_alert_fires_when_cert_manager_is_scraped_with_honor_labels(
    tmp_path: Path,
) -> None:
    honored = {**_CERT_SCRAPE, "namespace": NAMESPACE}
    series = [
        _cert_series(3 * _DAY, **honored, name="kafka-broker"),
        _cert_series(2 * _DAY, **{**honored, "namespace": "other"}, name="kafka-broker"),
        _cert_series(1 * _DAY, **honored, name="web"),
    ]
    failure = _broker_certificate_alert_test(series, tmp_path)
    assert not failure, failure


def test_the_broker_certificate_alert_stays_quiet_with_time_left(tmp_path: Path) -> None:
    series = [
        _cert_series(60 * _DAY, **_CERT_SCRAPE, exported_namespace=NAMESPACE, name="kafka-broker")
    ]
    failure = _broker_certificate_alert_test(series, tmp_path, fires=False)
    assert not failure, failure


SIDECAR_JOB = f"{FULLNAME}-headless"
MiB = 1024 * 1024
BACKLOG = "volume_quota_volume_upload_backlog_bytes"


def _backlog_series(values: str, pod: str, broker: str) -> dict[str, str]:
    labels = {"namespace": NAMESPACE, "job": SIDECAR_JOB, "pod": pod}
    labels |= {"instance": f"10.0.1.{broker}:8080", "broker": broker, "volume": "/dev/sdb"}
    text = ", ".join(f'{key}="{value}"' for key, value in labels.items())
    return {"series": f"{BACKLOG}{{{text}}}", "values": values}


def _upload_backlog_alert_test(
    series: list[dict[str, str]],
    checks: list[tuple[str, list[str]]],
    tmp_path: Path,
    settings: dict[str, str] | None = None,
) -> str:
    """promtool's complaints (empty: as expected) about VolumeQuotaTieredUploadBacklog firing,
    at each (eval time, brokers), for exactly those brokers' volumes."""
    groups = _groups(render(settings=MONITORING | (settings or {})))
    for group in groups:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    pods = {"0": P0, "1": P1}
    alert_tests = [
        {
            "eval_time": at,
            "alertname": "VolumeQuotaTieredUploadBacklog",
            "exp_alerts": [
                {
                    "exp_labels": {
                        "namespace": NAMESPACE,
                        "pod": pods[broker],
                        "broker": broker,
                        "volume": "/dev/sdb",
                        "severity": "warning",
                    }
                }
                for broker in brokers
            ],
        }
        for at, brokers in checks
    ]
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": alert_tests}],
    }
    return promtool_failures(tmp_path, tests)


def test_the_upload_backlog_alert_fires_after_15_minutes_above_1_gib_and_clears(
    tmp_path: Path,
) -> None:
    # Broker 0's backlog grows by 100 MiB a minute from 0 (above 1 GiB from 11m), then drains
    # at 40m; broker 1 keeps 100 MiB waiting, which is not alarming.
    series = [
        _backlog_series(f"0+{100 * MiB}x40 0+0x20", P0, "0"),
        _backlog_series(f"{100 * MiB}+0x60", P1, "1"),
    ]
    checks = [("10m", []), ("25m", []), ("30m", ["0"]), ("39m", ["0"]), ("45m", [])]
    assert _upload_backlog_alert_test(series, checks, tmp_path) == ""


def test_the_upload_backlog_threshold_is_a_chart_value(tmp_path: Path) -> None:
    series = [_backlog_series(f"{100 * MiB}+0x30", P1, "1")]
    lowered = {"prometheusRule.uploadBacklogBytes": str(50 * MiB)}
    assert _upload_backlog_alert_test(series, [("20m", ["1"])], tmp_path, lowered) == ""
    assert _upload_backlog_alert_test(series, [("20m", ["1"])], tmp_path) != ""
