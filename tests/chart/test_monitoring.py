"""ServiceMonitor and PrometheusRule: off by default, and when on, pointed at the sidecars'
metrics with alerts on metrics the sidecar really exports."""

from __future__ import annotations

import re

import pytest

from tests.chart.chart_tools import RELEASE, REPO, Manifest, find, pod_spec, render

FULLNAME = f"{RELEASE}-volume-quota"
METRIC_SOURCES = ("publisher/publisher_metrics.py", "consumer/consumer_metrics.py")
# Metrics from outside volume-quota: Prometheus' own and kube-state-metrics'.
# cert-manager's, for the broker certificate.
FOREIGN_METRICS = {"up", "certmanager_certificate_expiration_timestamp_seconds"}
RUNBOOKS = REPO / "docs" / "runbooks.md"


@pytest.fixture(scope="module")
def monitored() -> list[Manifest]:
    return render(
        settings={
            "serviceMonitor.enabled": "true",
            "prometheusRule.enabled": "true",
            "prometheusRule.brokerCertificateName": "kafka-broker",
        }
    )


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
        "VolumeQuotaSidecarMetricsAbsent",
        "VolumeQuotaSidecarCannotReachKafka",
        "VolumeQuotaSnapshotsNotPublished",
        "VolumeQuotaPublicationErrors",
        "VolumeQuotaSnapshotTopicReadErrors",
        "VolumeQuotaDecisionFileWriteErrors",
        "VolumeQuotaThrottlingForMissingData",
        "VolumeQuotaPauseInForce",
        "VolumeQuotaThrottleInForce",
        "VolumeQuotaClientCertificateExpiring",
        "VolumeQuotaBrokerCertificateExpiring",
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


def test_missing_sidecar_metrics_and_topic_read_errors_alert(monitored: list[Manifest]) -> None:
    rules = _rules(monitored)
    absent = rules["VolumeQuotaSidecarMetricsAbsent"]["expr"]
    assert absent.startswith("absent(volume_quota_")
    assert f'job="{FULLNAME}-headless"' in absent
    reads = rules["VolumeQuotaSnapshotTopicReadErrors"]["expr"]
    assert reads.startswith("increase(volume_quota_snapshot_topic_errors_total{")
    kafka = rules["VolumeQuotaSidecarCannotReachKafka"]["expr"]
    assert "volume_quota_publisher_kafka_connected" in kafka
    assert kafka.endswith("== 0")


def test_the_broker_certificate_alert_needs_a_certificate_name(monitored: list[Manifest]) -> None:
    expression = _rules(monitored)["VolumeQuotaBrokerCertificateExpiring"]["expr"]
    assert 'certmanager_certificate_expiration_timestamp_seconds{namespace="kafka", ' in expression
    assert 'name="kafka-broker"' in expression
    assert expression.endswith(f"- time() < {14 * 86400}")
    unnamed = render(settings={"prometheusRule.enabled": "true"})
    assert "VolumeQuotaBrokerCertificateExpiring" not in _rules(unnamed)


def _anchors(markdown: str) -> dict[str, str]:
    """GitHub's anchor for every '## ' heading, to the section's text."""
    sections = re.split(r"^## ", markdown, flags=re.MULTILINE)[1:]
    anchors = {}
    for section in sections:
        heading, _, body = section.partition("\n")
        slug = re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")
        anchors[slug] = body
    return anchors


def test_every_alert_links_its_runbook_section(monitored: list[Manifest]) -> None:
    base = "https://github.com/volume-quota/volume-quota/blob/main/docs/runbooks.md"
    sections = _anchors(RUNBOOKS.read_text())
    for name, rule in _rules(monitored).items():
        url = rule["annotations"]["runbook_url"]
        page, _, anchor = url.partition("#")
        assert page == base, name
        assert anchor == name.lower(), name
        body = sections.get(anchor)
        assert body is not None, f"docs/runbooks.md has no section for {name}"
        for part in ("**Meaning.**", "**Check.**", "**Action.**"):
            assert part in body, f"{name}: runbook section lacks {part}"
    moved = render(
        settings={
            "prometheusRule.enabled": "true",
            "prometheusRule.runbookBaseUrl": "https://wiki.example.com/vq",
        }
    )
    assert _rules(moved)["VolumeQuotaPauseInForce"]["annotations"]["runbook_url"] == (
        "https://wiki.example.com/vq#volumequotapauseinforce"
    )


def test_every_runbook_section_belongs_to_an_alert(monitored: list[Manifest]) -> None:
    assert set(_anchors(RUNBOOKS.read_text())) == {name.lower() for name in _rules(monitored)}
