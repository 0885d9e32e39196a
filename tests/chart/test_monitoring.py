"""ServiceMonitor and PrometheusRule: off by default, and when on, pointed at the sidecars'
metrics with alerts on metrics the sidecar really exports."""

from __future__ import annotations

import re

import pytest

from tests.chart.chart_tools import RELEASE, REPO, Manifest, find, pod_spec, render

FULLNAME = f"{RELEASE}-volume-quota"
METRIC_SOURCES = ("publisher/publisher_metrics.py", "consumer/consumer_metrics.py")
# Metrics from outside volume-quota: Prometheus' own and kube-state-metrics'.
FOREIGN_METRICS = {"up", "kube_pod_container_status_ready"}


@pytest.fixture(scope="module")
def monitored() -> list[Manifest]:
    return render(settings={"serviceMonitor.enabled": "true", "prometheusRule.enabled": "true"})


def _rules(manifests: list[Manifest]) -> dict[str, Manifest]:
    groups = find(manifests, "PrometheusRule")["spec"]["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"]}


def test_monitoring_objects_appear_only_when_enabled(default_manifests: list[Manifest]) -> None:
    kinds = {manifest["kind"] for manifest in default_manifests}
    assert "ServiceMonitor" not in kinds
    assert "PrometheusRule" not in kinds
    only_monitor = render(settings={"serviceMonitor.enabled": "true"})
    assert [m["kind"] for m in only_monitor].count("ServiceMonitor") == 1
    assert "PrometheusRule" not in {m["kind"] for m in only_monitor}
    only_rule = render(settings={"prometheusRule.enabled": "true"})
    assert [m["kind"] for m in only_rule].count("PrometheusRule") == 1
    assert "ServiceMonitor" not in {m["kind"] for m in only_rule}


def test_the_servicemonitor_scrapes_the_sidecars_metrics_port(monitored: list[Manifest]) -> None:
    monitor = find(monitored, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    service = find(monitored, "Service", f"{FULLNAME}-headless")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    bootstrap = find(monitored, "Service", FULLNAME)
    assert (
        not monitor["spec"]["selector"]["matchLabels"].items()
        <= bootstrap["metadata"]["labels"].items()
    )
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics"
    assert endpoint["path"] == "/metrics"
    port = next(p for p in service["spec"]["ports"] if p["name"] == "metrics")
    sidecar = next(c for c in pod_spec(monitored)["containers"] if c["name"] == "volume-quota")
    assert port["port"] == sidecar["ports"][0]["containerPort"] == 9464


def test_the_alerts_cover_what_an_operator_must_know(monitored: list[Manifest]) -> None:
    rules = _rules(monitored)
    assert set(rules) == {
        "VolumeQuotaSidecarDown",
        "VolumeQuotaSidecarNotReady",
        "VolumeQuotaSnapshotsNotPublished",
        "VolumeQuotaPublicationErrors",
        "VolumeQuotaDecisionFileWriteErrors",
        "VolumeQuotaThrottlingForMissingData",
        "VolumeQuotaPauseInForce",
        "VolumeQuotaThrottleInForce",
        "VolumeQuotaClientCertificateExpiring",
    }
    assert 'state="PAUSE"' in rules["VolumeQuotaPauseInForce"]["expr"]
    assert rules["VolumeQuotaPauseInForce"]["labels"]["severity"] == "critical"
    assert (
        "increase(volume_quota_publication_errors_total"
        in rules["VolumeQuotaPublicationErrors"]["expr"]
    )
    assert (
        "volume_quota_throttling_for_missing_data"
        in rules["VolumeQuotaThrottlingForMissingData"]["expr"]
    )
    expiry = rules["VolumeQuotaClientCertificateExpiring"]["expr"]
    assert expiry.endswith(f"< {14 * 86400}")
    for name, rule in rules.items():
        assert rule["annotations"]["summary"], name
        assert rule["labels"]["severity"] in {"warning", "critical"}, name


def test_the_certificate_expiry_threshold_is_configurable() -> None:
    manifests = render(
        settings={"prometheusRule.enabled": "true", "prometheusRule.certificateExpiryDays": "30"}
    )
    expiry = _rules(manifests)["VolumeQuotaClientCertificateExpiring"]
    assert expiry["expr"].endswith(f"< {30 * 86400}")
    assert "within 30 days" in expiry["annotations"]["summary"]


def test_every_alert_uses_metrics_the_sidecar_exports(monitored: list[Manifest]) -> None:
    source = "\n".join((REPO / path).read_text() for path in METRIC_SOURCES)
    exported = set(re.findall(r'"(volume_quota_[a-z_]+)"', source))
    # prometheus_client adds _total to a counter's name.
    exported |= {f"{name}_total" for name in exported}
    for name, rule in _rules(monitored).items():
        expression = rule["expr"]
        used = set(re.findall(r"\b([a-z_]+)\s*\{", expression))
        assert used, name
        unknown = used - exported - FOREIGN_METRICS
        assert not unknown, f"{name} uses metrics nobody exports: {unknown}"
        assert expression.count("(") == expression.count(")"), name
        assert expression.count("{") == expression.count("}"), name
        if used & exported:
            assert f'namespace="kafka", job="{FULLNAME}-headless"' in expression, name
