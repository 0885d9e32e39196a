"""ServiceMonitor and PrometheusRule: off by default, and when on, pointed at the sidecars'
metrics and the brokers' JMX exporter agent, with alerts on series the sidecar and the
exporter configuration really produce."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.chart.chart_tools import RELEASE, REPO, Manifest, find, pod_spec, render

FULLNAME = f"{RELEASE}-volume-quota"
METRIC_SOURCES = ("publisher/publisher_metrics.py", "consumer/consumer_metrics.py")
# Metrics from outside volume-quota: Prometheus' own and kube-state-metrics'.
# cert-manager's, for the broker certificate.
FOREIGN_METRICS = {"up", "certmanager_certificate_expiration_timestamp_seconds"}
RUNBOOKS = REPO / "docs" / "runbooks.md"
EXPORTER_CONFIGS = REPO / "deploy" / "container" / "jmx-exporter"
CALLBACK_CONFIG = EXPORTER_CONFIGS / "volume-quota-callback.yaml"
BROKER_JOB = f"{FULLNAME}-broker"
CALLBACK_ALERTS = {
    "VolumeQuotaBrokerNoValidDecision",
    "VolumeQuotaBrokerDecisionStale",
    "VolumeQuotaBrokerDecisionReloadErrors",
    "VolumeQuotaBrokerDecisionExpiries",
    "VolumeQuotaBrokerCallbackPollerErrors",
    "VolumeQuotaBrokerObservedRateUnavailable",
    "VolumeQuotaBrokerMetricsDown",
    "VolumeQuotaBrokerCallbackMetricsMissing",
    "VolumeQuotaBrokerCallbackMetricsAbsent",
}


def exporter_series(config: Path = CALLBACK_CONFIG) -> set[str]:
    """The series names the JMX exporter configuration's rules produce.

    A rule's name is a literal, or a template whose ``$n`` is a pattern group of alternatives
    (``(A|B)``): expanded, and lower-cased as ``lowercaseOutputName`` does. A COUNTER's name
    keeps its ``_total`` (the agent exposes it so, tests/real_broker/test_callback_prometheus.py).
    """
    rules = yaml.safe_load(config.read_text())
    names: set[str] = set()
    for rule in rules["rules"]:
        name = rule["name"]
        group = re.search(r"\$(\d)", name)
        if group is None:
            names.add(name)
            continue
        groups = re.findall(r"\(([^()]*)\)", rule["pattern"])
        alternatives = groups[int(group[1]) - 1].split("|")
        assert all(re.fullmatch(r"[A-Za-z]+", a) for a in alternatives), rule["pattern"]
        names |= {name.replace(group[0], a) for a in alternatives}
    if rules.get("lowercaseOutputName"):
        names = {name.lower() for name in names}
    return names


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
    endpoint, broker_endpoint = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics"
    assert endpoint["path"] == "/metrics"
    assert "relabelings" not in endpoint, "the sidecars keep the Service's name as their job"
    port = next(p for p in service["spec"]["ports"] if p["name"] == "metrics")
    sidecar = next(c for c in pod_spec(monitored)["containers"] if c["name"] == "volume-quota")
    assert port["port"] == sidecar["ports"][0]["containerPort"] == 9464
    # The brokers' agent: a job of its own (what the callback alerts select).
    assert broker_endpoint["port"] == "broker-metrics"
    assert broker_endpoint["path"] == "/metrics"
    assert broker_endpoint["relabelings"] == [
        {"action": "replace", "targetLabel": "job", "replacement": BROKER_JOB}
    ]


def test_the_broker_scrape_keeps_only_the_exporter_configurations_series(
    monitored: list[Manifest],
) -> None:
    def keep_regex(manifests: list[Manifest]) -> str:
        endpoint = find(manifests, "ServiceMonitor")["spec"]["endpoints"][1]
        [keep] = endpoint["metricRelabelings"]
        assert keep["action"] == "keep"
        assert keep["sourceLabels"] == ["__name__"]
        return str(keep["regex"])

    regex = keep_regex(monitored)
    for name in exporter_series() | {"jmx_scrape_error"}:
        assert re.fullmatch(regex, name), name
    # The agent's own JVM series and every Kafka series are dropped.
    for name in ("jvm_memory_used_bytes", "process_cpu_seconds_total", "kafka_server_x"):
        assert not re.fullmatch(regex, name), name
    with_kafka = render(
        settings={"serviceMonitor.enabled": "true", "kafka.metrics.kafkaMetrics": "true"}
    )
    regex = keep_regex(with_kafka)
    for name in exporter_series(EXPORTER_CONFIGS / "volume-quota-callback-and-kafka.yaml"):
        assert re.fullmatch(regex, name), name
    assert not re.fullmatch(regex, "jvm_memory_used_bytes")


def test_the_alerts_cover_what_an_operator_must_know(monitored: list[Manifest]) -> None:
    rules = _rules(monitored)
    assert set(rules) == {
        "VolumeQuotaSidecarDown",
        "VolumeQuotaSidecarMetricsAbsent",
        "VolumeQuotaSidecarCannotReachKafka",
        "VolumeQuotaSnapshotsNotPublished",
        "VolumeQuotaPublicationErrors",
        "VolumeQuotaSnapshotTopicMisconfigured",
        "VolumeQuotaSnapshotTopicReadErrors",
        "VolumeQuotaDecisionFileWriteErrors",
        "VolumeQuotaThrottlingForMissingData",
        "VolumeQuotaPauseInForce",
        "VolumeQuotaThrottleInForce",
        "VolumeQuotaClientCertificateExpiring",
        "VolumeQuotaBrokerCertificateExpiring",
        "VolumeQuotaTieredUploadBacklog",
        *CALLBACK_ALERTS,
    }
    assert 'state="PAUSE"' in rules["VolumeQuotaPauseInForce"]["expr"]
    assert rules["VolumeQuotaPauseInForce"]["labels"]["severity"] == "critical"
    assert (
        "increase(volume_quota_publication_errors_total"
        in rules["VolumeQuotaPublicationErrors"]["expr"]
    )
    assert (
        "volume_quota_publisher_topic_misconfigured"
        in rules["VolumeQuotaSnapshotTopicMisconfigured"]["expr"]
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


def _series_in(expression: str) -> set[str]:
    return set(re.findall(r"\b([a-z_]+)\s*\{", expression))


def test_every_alert_uses_metrics_the_sidecar_or_the_exporter_exports(
    monitored: list[Manifest],
) -> None:
    source = "\n".join((REPO / path).read_text() for path in METRIC_SOURCES)
    sidecar = set(re.findall(r'"(volume_quota_[a-z_]+)"', source))
    # prometheus_client adds _total to a counter's name.
    sidecar |= {f"{name}_total" for name in sidecar}
    callback = exporter_series()
    assert not sidecar & callback, "the two sources' names must not overlap"
    for name, rule in _rules(monitored).items():
        expression = rule["expr"]
        used = _series_in(expression)
        assert used, name
        unknown = used - sidecar - callback - FOREIGN_METRICS
        assert not unknown, f"{name} uses metrics nobody exports: {unknown}"
        assert expression.count("(") == expression.count(")"), name
        assert expression.count("{") == expression.count("}"), name
        assert not (used & sidecar and used & callback), f"{name} mixes sidecar and broker series"
        if used & sidecar:
            assert f'namespace="kafka", job="{FULLNAME}-headless"' in expression, name
        if used & callback or name in CALLBACK_ALERTS:
            # Every selector in a callback alert names the brokers' job, none the sidecars'.
            selectors = re.findall(r"\{([^}]*)\}", expression)
            assert selectors, name
            for selector in selectors:
                assert selector == f'namespace="kafka", job="{BROKER_JOB}"', name


def test_an_alert_on_a_series_the_exporter_config_lacks_is_caught() -> None:
    """The check above is not vacuous: a misspelt callback series is unknown to it."""
    callback = exporter_series()
    assert "volume_quota_callback_state" in callback
    assert "volume_quota_callback_reload_errors_total" in callback
    assert "volume_quota_callback_reload_error_total" not in callback
    assert "volume_quota_callback_decision_age" not in callback
    misspelt = 'increase(volume_quota_callback_reload_error_total{job="x"}[15m]) > 0'
    assert _series_in(misspelt) - callback == {"volume_quota_callback_reload_error_total"}


def test_the_exporter_config_exports_every_documented_callback_metric_in_base_units() -> None:
    """One rule per metric of docs/broker-plugin.md's table (the callback's Monitorable
    metrics), named after it, and the kafkaMetrics configuration keeps the same rules."""
    documented = set(
        re.findall(
            r"^\| `volume-quota-([a-z-]+)` \|",
            (REPO / "docs" / "broker-plugin.md").read_text(),
            re.MULTILINE,
        )
    )
    registered = set(
        re.findall(
            r'gauge\(metrics, "([a-z-]+)"',
            (
                REPO / "deploy/broker-plugin/src/main/java/io/volumequota/broker"
                "/VolumeQuotaCallback.java"
            ).read_text(),
        )
    )
    assert documented == registered, "docs/broker-plugin.md lists what the callback registers"
    config = yaml.safe_load(CALLBACK_CONFIG.read_text())
    by_attribute = {}
    for rule in config["rules"]:
        match = re.search(r"><>volume-quota-([a-z-]+)$", rule["pattern"])
        assert match is not None, rule["pattern"]
        by_attribute[match[1]] = rule
        assert rule["name"] == "volume_quota_callback_" + match[1].replace("-", "_")
        assert rule["type"] == ("COUNTER" if rule["name"].endswith("_total") else "GAUGE")
        assert rule["labels"] == {"role": "$1"}
        assert "role=([^,>]+)" in rule["pattern"]
    assert set(by_attribute) == documented
    assert config["includeObjectNames"] == [
        "kafka.server:type=plugins,config=client.quota.callback.class,class=VolumeQuotaCallback,*"
    ]
    with_kafka = yaml.safe_load(
        (EXPORTER_CONFIGS / "volume-quota-callback-and-kafka.yaml").read_text()
    )
    assert with_kafka["rules"][: len(config["rules"])] == config["rules"]
    assert set(config["includeObjectNames"]) <= set(with_kafka["includeObjectNames"])
    extra = exporter_series(EXPORTER_CONFIGS / "volume-quota-callback-and-kafka.yaml")
    assert {name for name in extra - exporter_series() if not name.startswith("kafka_")} == set()


def test_the_callback_alerts_follow_the_broker_metrics_switch() -> None:
    off = render(settings={"prometheusRule.enabled": "true", "kafka.metrics.enabled": "false"})
    assert not CALLBACK_ALERTS & set(_rules(off))
    no_callback = render(settings={"prometheusRule.enabled": "true", "quota.enabled": "false"})
    assert not CALLBACK_ALERTS & set(_rules(no_callback))
    aged = render(
        settings={"prometheusRule.enabled": "true", "prometheusRule.decisionMaxAgeSeconds": "90"}
    )
    stale = _rules(aged)["VolumeQuotaBrokerDecisionStale"]
    assert stale["expr"].endswith("> 90")
    assert "over 90 seconds" in stale["annotations"]["summary"]


def test_the_callback_alerts_watch_what_the_runbook_says(monitored: list[Manifest]) -> None:
    rules = _rules(monitored)
    no_decision = rules["VolumeQuotaBrokerNoValidDecision"]
    assert no_decision["expr"].endswith("== -1")
    assert no_decision["for"] == "3m"
    assert no_decision["labels"]["severity"] == "critical"
    assert rules["VolumeQuotaBrokerDecisionStale"]["expr"].endswith("> 60")
    assert (
        "increase(volume_quota_callback_reload_errors_total{"
        in (rules["VolumeQuotaBrokerDecisionReloadErrors"]["expr"])
    )
    assert rules["VolumeQuotaBrokerDecisionExpiries"]["expr"].endswith("[30m])) >= 2")
    rate = rules["VolumeQuotaBrokerObservedRateUnavailable"]["expr"]
    assert "volume_quota_callback_tracked_principals" in rate, "idle brokers sample no rates"
    assert rules["VolumeQuotaBrokerCallbackMetricsAbsent"]["expr"].startswith(
        "absent(volume_quota_callback_state{"
    )
    missing = rules["VolumeQuotaBrokerCallbackMetricsMissing"]["expr"]
    assert missing.startswith("max by (namespace, pod) (up{")
    assert "unless on (namespace, pod)" in missing


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
