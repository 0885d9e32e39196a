"""Attach mode (kafka.enabled=false): next to a Kafka cluster someone else runs, the chart renders
only what that cluster needs, and the sidecar is the same container as in the chart's own pods."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from tests.chart.chart_tools import (
    CHART,
    CI_VALUES,
    RELEASE,
    Manifest,
    attach_snippets,
    container,
    env_of,
    env_values,
    find,
    kinds,
    parse_properties,
    pod_spec,
    render,
    run_helm,
    server_properties,
)

ATTACH_VALUES = next(path for path in CI_VALUES if path.name == "attach-values.yaml")
FULLNAME = f"{RELEASE}-volume-quota"


@pytest.fixture(scope="module")
def attached() -> list[Manifest]:
    return render([ATTACH_VALUES])


def test_attach_mode_renders_no_kafka_of_its_own(attached: list[Manifest]) -> None:
    assert kinds(attached) == [
        "ConfigMap",  # the ACL script
        "ConfigMap",  # <fullname>-attach
        "Job",
        "Pod",  # the helm test hook
        "PrometheusRule",
        "Service",  # the metrics Service, nothing for clients
        "ServiceAccount",
        "ServiceMonitor",
    ]
    service = find(attached, "Service")
    assert service["metadata"]["name"] == f"{FULLNAME}-metrics"
    assert service["spec"]["selector"] == {"app": "kafka", "role": "broker"}
    # The sidecars' metrics, and the brokers' JMX exporter agent (kafka.metrics, on with the
    # monitoring).
    assert [port["name"] for port in service["spec"]["ports"]] == ["metrics", "broker-metrics"]


def test_the_monitoring_follows_the_metrics_service(attached: list[Manifest]) -> None:
    service = find(attached, "Service")
    monitor = find(attached, "ServiceMonitor")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    groups = find(attached, "PrometheusRule")["spec"]["groups"]
    expressions = [rule["expr"] for group in groups for rule in group["rules"]]
    assert any(f'job="{FULLNAME}-metrics"' in expression for expression in expressions)
    assert not any("-headless" in expression for expression in expressions)


def test_the_broker_properties_are_the_callback_settings_of_the_own_cluster(
    attached: list[Manifest], default_manifests: list[Manifest]
) -> None:
    properties = parse_properties(attach_snippets(attached)["volume-quota.properties"])
    own = {
        key: value
        for key, value in server_properties(default_manifests).items()
        if key.startswith(("volume.quota.", "client.quota."))
    }
    assert properties == own
    assert properties["client.quota.callback.class"] == "io.volumequota.broker.VolumeQuotaCallback"
    assert properties["volume.quota.decision.path"] == "/var/run/volume-quota/decision.json"


def test_the_sidecar_is_the_one_of_the_own_cluster_with_the_attached_volumes(
    attached: list[Manifest], default_manifests: list[Manifest]
) -> None:
    snippets = attach_snippets(attached)
    sidecar = snippets["sidecar-container.yaml"]
    own = container(pod_spec(default_manifests), "volume-quota")
    assert sidecar["name"] == own["name"]
    assert sidecar["livenessProbe"] == own["livenessProbe"]
    assert sidecar["securityContext"] == own["securityContext"]
    assert set(env_of(sidecar)) - {"POD_INDEX", "VOLUME_QUOTA_VOLUME_LIMITS"} == set(
        env_of(own)
    ) - {"VOLUME_QUOTA_BROKER_ID"}
    env = env_values(sidecar)
    assert env["VOLUME_QUOTA_LOG_DIRS"] == "/var/lib/kafka/a/logs,/var/lib/kafka/b/logs"
    assert env["VOLUME_QUOTA_BOOTSTRAP_SERVERS"] == (
        "kafka-0.kafka:9093,kafka-1.kafka:9093,kafka-2.kafka:9093"
    )
    assert env["VOLUME_QUOTA_VOLUME_LIMITS"] == (
        "/var/lib/kafka/b/logs:soft=MinFreePercentage:30,hard=MinFreePercentage:10"
    )
    assert env["VOLUME_QUOTA_TLS_CERT_FILE"] == "/etc/volume-quota/tls/user.crt"
    broker_mounts = [m for m in sidecar["volumeMounts"] if m["name"].startswith("logs-")]
    assert broker_mounts == [
        {"name": "logs-a", "mountPath": "/var/lib/kafka/a", "readOnly": True},
        {"name": "logs-b", "mountPath": "/var/lib/kafka/b", "readOnly": True},
    ]
    # Every other volume the sidecar mounts is one the snippet's volumes list provides.
    provided = {volume["name"] for volume in snippets["volumes.yaml"]}
    mounted = {m["name"] for m in sidecar["volumeMounts"]} - {"logs-a", "logs-b"}
    assert mounted <= provided
    init_mounts = {m["name"] for m in snippets["init-container.yaml"]["volumeMounts"]}
    broker_side = {m["name"] for m in snippets["broker-mounts.yaml"]}
    assert init_mounts | broker_side <= provided
    secret = next(v for v in snippets["volumes.yaml"] if v["name"] == "sidecar-tls")["secret"]
    assert secret["secretName"] == "kafka-volume-quota-client"


def test_the_broker_id_is_the_ordinal_plus_the_offset(attached: list[Manifest]) -> None:
    sidecar = attach_snippets(attached)["sidecar-container.yaml"]
    assert "VOLUME_QUOTA_BROKER_ID" not in env_of(sidecar)
    assert env_of(sidecar)["POD_INDEX"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}
    }
    command = sidecar["command"]
    assert command[:2] == ["/bin/sh", "-c"]
    # Run the wrapper with a stand-in for volume-quota that prints the id it was given.
    script = command[2].replace("exec volume-quota sidecar", "exec printenv VOLUME_QUOTA_BROKER_ID")
    printed = subprocess.run(
        ["/bin/sh", "-c", script],
        env={"POD_INDEX": "2", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed.strip() == "1002"


def test_the_hostname_source_adds_the_offset_too() -> None:
    manifests = render([ATTACH_VALUES], {"sidecar.brokerIdSource": "hostname"})
    command = attach_snippets(manifests)["sidecar-container.yaml"]["command"]
    script = command[2].replace("exec volume-quota sidecar", "exec printenv VOLUME_QUOTA_BROKER_ID")
    printed = subprocess.run(
        ["/bin/sh", "-c", script],
        env={"HOSTNAME": "kafka-broker-7", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed.strip() == "1007"


def test_meta_properties_leaves_the_broker_id_to_the_sidecar() -> None:
    manifests = render([ATTACH_VALUES], {"sidecar.brokerIdSource": "metaProperties"})
    sidecar = attach_snippets(manifests)["sidecar-container.yaml"]
    assert sidecar["command"] == ["volume-quota", "sidecar"]
    assert not {"VOLUME_QUOTA_BROKER_ID", "POD_INDEX"} & set(env_of(sidecar))


def test_the_acl_job_runs_against_the_existing_cluster(attached: list[Manifest]) -> None:
    job = find(attached, "Job")["spec"]["template"]["spec"]
    env = env_values(container(job, "grant-acls"))
    assert env["BOOTSTRAP_SERVERS"] == "kafka-0.kafka:9093,kafka-1.kafka:9093,kafka-2.kafka:9093"
    assert env["ACL_JOB_PRINCIPAL"] == "ops-admin"
    secret = next(v for v in job["volumes"] if v["name"] == "admin-tls")["secret"]
    assert secret["secretName"] == "ops-admin-tls"


def test_a_parent_chart_includes_the_sidecar_template(tmp_path: Path) -> None:
    """An umbrella chart with volume-quota as a dependency puts the sidecar into its own pods."""
    parent = tmp_path / "platform"
    (parent / "templates").mkdir(parents=True)
    (parent / "charts").mkdir()
    shutil.copytree(CHART, parent / "charts" / "volume-quota")
    (parent / "Chart.yaml").write_text(
        "apiVersion: v2\nname: platform\nversion: 1.0.0\n"
        "dependencies:\n  - name: volume-quota\n    version: 0.1.0\n"
    )
    values = yaml.safe_load(ATTACH_VALUES.read_text())
    (parent / "values.yaml").write_text(yaml.safe_dump({"volume-quota": values}))
    (parent / "templates" / "brokers.yaml").write_text(
        """{{- $values := index .Values "volume-quota" -}}
{{- $chart := dict "Name" "volume-quota" -}}
{{- $vq := dict "Values" $values "Release" .Release "Chart" $chart -}}
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: kafka
spec:
  serviceName: kafka
  selector:
    matchLabels: {app: kafka, role: broker}
  template:
    metadata:
      labels: {app: kafka, role: broker}
    spec:
      initContainers:
        - {{- include "volume-quota.pluginInitContainer" $vq | nindent 10 }}
      containers:
        - name: kafka
          image: apache/kafka:4.3.1
        - {{- include "volume-quota.sidecarContainer" $vq | nindent 10 }}
      volumes:
        {{- include "volume-quota.sidecarPodVolumes" $vq | nindent 8 }}
"""
    )
    text = run_helm("template", RELEASE, str(parent), "--namespace", "kafka")
    manifests = [cast(Manifest, d) for d in yaml.safe_load_all(text) if d]
    brokers = next(m for m in manifests if m["kind"] == "StatefulSet")
    included = container(brokers["spec"]["template"]["spec"], "volume-quota")
    snippet = attach_snippets(render([ATTACH_VALUES]))["sidecar-container.yaml"]
    assert included == snippet
    volumes: list[dict[str, Any]] = brokers["spec"]["template"]["spec"]["volumes"]
    assert {v["name"] for v in volumes} == {
        "broker-plugin",
        "decision",
        "sidecar-tls",
        "sidecar-tmp",
    }


def test_a_scram_user_reaches_the_attached_sidecar_through_extra_env(tmp_path: Path) -> None:
    """docs/publisher.md's recipe for a cluster with a SASL_SSL listener: the password from a
    Secret (never in the values), the principal (ACL Job, quota exclusion) the SCRAM user."""
    sasl = tmp_path / "sasl-values.yaml"
    sasl.write_text(
        yaml.safe_dump(
            {
                "sidecar": {
                    "principal": "kafka-0-scram",
                    "bootstrapServers": "kafka-0.kafka:9094,kafka-1.kafka:9094",
                    "extraEnv": [
                        {"name": "VOLUME_QUOTA_SECURITY_PROTOCOL", "value": "SASL_SSL"},
                        {"name": "VOLUME_QUOTA_SASL_USERNAME", "value": "kafka-0-scram"},
                        {
                            "name": "VOLUME_QUOTA_SASL_PASSWORD",
                            "valueFrom": {
                                "secretKeyRef": {"name": "volume-quota-scram", "key": "password"}
                            },
                        },
                    ],
                }
            }
        )
    )
    manifests = render([ATTACH_VALUES, sasl])
    sidecar = attach_snippets(manifests)["sidecar-container.yaml"]
    env = env_values(sidecar)
    assert env["VOLUME_QUOTA_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert env["VOLUME_QUOTA_SASL_USERNAME"] == "kafka-0-scram"
    assert env["VOLUME_QUOTA_BOOTSTRAP_SERVERS"] == "kafka-0.kafka:9094,kafka-1.kafka:9094"
    assert env_of(sidecar)["VOLUME_QUOTA_SASL_PASSWORD"]["valueFrom"] == {
        "secretKeyRef": {"name": "volume-quota-scram", "key": "password"}
    }
    job = find(manifests, "Job")["spec"]["template"]["spec"]
    assert env_values(container(job, "grant-acls"))["SIDECAR_PRINCIPAL"] == "kafka-0-scram"
    properties = parse_properties(attach_snippets(manifests)["volume-quota.properties"])
    assert "User:kafka-0-scram" in properties["volume.quota.excluded.principals"].split(";")
