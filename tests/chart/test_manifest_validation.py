"""Every rendered manifest is a valid Kubernetes object.

Built-in kinds are checked against the strict JSON schemas (unknown fields are errors) that the
kubernetes-validate package ships, with the ``jsonschema`` library, for the oldest Kubernetes
the chart supports and the newest schemas available. ServiceMonitor and PrometheusRule are
checked with validators generated from the Prometheus Operator's CRD schemas.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tests.chart.chart_tools import (
    KUBERNETES_VERSIONS,
    REPO,
    SHIPPED_VALUES,
    Manifest,
    crd_errors,
    find,
    kinds,
    kubernetes_schemas,
    render,
    validation_errors,
)

VALUE_SETS: dict[str, tuple[list[Path], dict[str, str]]] = {
    "default": ([], {}),
    # Every values file the project ships: ci/*-values.yaml (own cluster, attach mode) and
    # values-production.yaml.
    **{str(path.relative_to(REPO)): ([path], {}) for path in SHIPPED_VALUES},
    "everything-off": (
        [],
        {
            "quota.enabled": "false",
            "sidecar.enabled": "false",
            "aclJob.enabled": "false",
            "podDisruptionBudget.enabled": "false",
            "serviceAccount.create": "false",
            "kafka.storage.metadata.enabled": "false",
        },
    ),
    "hostname-ids-and-csi-certificates": (
        [],
        {
            "sidecar.brokerIdSource": "hostname",
            "sidecar.tls.volume.csi.driver": "csi.cert-manager.io",
            "sidecar.tls.volume.csi.readOnly": "true",
            "sidecar.tls.volume.csi.volumeAttributes.csi\\.cert-manager\\.io/issuer-name": "ca",
            "serviceMonitor.enabled": "true",
            "prometheusRule.enabled": "true",
            "replicas": "1",
        },
    ),
}


@pytest.mark.parametrize("kube_version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("value_set", sorted(VALUE_SETS))
def test_every_manifest_is_valid(value_set: str, kube_version: str) -> None:
    values_files, settings = VALUE_SETS[value_set]
    manifests = render(values_files, settings, kube_version=kube_version)
    assert manifests, "nothing rendered"
    assert validation_errors(manifests, kube_version) == {}


def test_the_value_sets_cover_every_kind_the_chart_renders() -> None:
    rendered = {
        kind for files, settings in VALUE_SETS.values() for kind in kinds(render(files, settings))
    }
    assert rendered == {
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "CronJob",
        "Job",
        "NetworkPolicy",
        "PersistentVolumeClaim",
        "Pod",
        "PodDisruptionBudget",
        "PriorityClass",
        "PrometheusRule",
        "Service",
        "ServiceAccount",
        "ServiceMonitor",
        "StatefulSet",
    }


def test_the_kubernetes_schemas_reject_a_misspelt_or_mistyped_field(
    default_manifests: list[Manifest],
) -> None:
    schemas = kubernetes_schemas(KUBERNETES_VERSIONS[-1])
    statefulset = find(default_manifests, "StatefulSet")
    assert schemas.errors(statefulset) == []

    misspelt = copy.deepcopy(statefulset)
    misspelt["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    assert any("imagePullPolicyy" in error for error in schemas.errors(misspelt))

    mistyped = copy.deepcopy(statefulset)
    mistyped["spec"]["replicas"] = "three"
    assert any(error.startswith("$.spec.replicas") for error in schemas.errors(mistyped))

    unknown_kind = {"apiVersion": "v1", "kind": "Nonsense", "metadata": {"name": "x"}}
    assert schemas.errors(unknown_kind) == ["no schema for v1 Nonsense in 1.37.0"]


def test_the_crd_validators_reject_a_broken_servicemonitor_and_rule(
    production_manifests: list[Manifest],
) -> None:
    monitor = find(production_manifests, "ServiceMonitor")
    rule = find(production_manifests, "PrometheusRule")
    broken_monitor = copy.deepcopy(monitor)
    broken_monitor["spec"]["endpoints"] = "metrics"
    broken_rule = copy.deepcopy(rule)
    broken_rule["spec"]["groups"][0]["rules"][0]["for"] = "five minutes"

    valid_monitor, valid_rule, monitor_errors, rule_errors = crd_errors(
        [monitor, rule, broken_monitor, broken_rule]
    )
    assert (valid_monitor, valid_rule) == ([], [])
    assert monitor_errors == ["data/spec/endpoints must be array"]
    assert len(rule_errors) == 1
    assert "rules/0/for must match pattern" in rule_errors[0]
