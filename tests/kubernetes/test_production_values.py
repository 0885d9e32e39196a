"""`helm install -f deploy/helm/values-production.yaml` on the real control plane, after creating
exactly what docs/kubernetes.md tells the user to create first ("Before you install" and
"Certificates": the Issuer, the Certificates and, through cert-manager, their Secrets; a
StorageClass for the PersistentVolumeClaims).

The cluster is what the values file describes: five nodes over three zones, labelled
node-role.example.com/kafka=true and tainted dedicated=kafka:NoSchedule (its nodeSelector and
tolerations), registered for this test only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import yaml

from tests.kubernetes.cluster_checks import (
    CHART,
    PRODUCTION_VALUES,
    RELEASE,
    apply_objects,
    describe_problems,
    documented_prerequisites,
    in_namespace,
    issue_certificate_secrets,
    missing_references,
    pod_template_specs,
    wait_for_bound_pods,
)
from tests.kubernetes.control_plane import (
    ZONES,
    ControlPlane,
    KubeApiError,
    NodeSpec,
    storage_class,
)

pytestmark = pytest.mark.kubernetes

NAMESPACE = "vq-production"
NODES = [f"kafka-node-{i}" for i in range(5)]


@pytest.fixture(scope="module")
def production_install(control_plane: ControlPlane) -> Iterator[dict[str, object]]:
    values = yaml.safe_load(PRODUCTION_VALUES.read_text())
    for index, name in enumerate(NODES):
        control_plane.register_node(
            NodeSpec(
                name,
                ZONES[index % len(ZONES)],
                labels=dict(values["nodeSelector"]),
                taints=[{"key": "dedicated", "value": "kafka", "effect": "NoSchedule"}],
            )
        )
    storage_class_name = values["kafka"]["storage"]["data"][0]["storageClassName"]
    control_plane.api.create(
        "/apis/storage.k8s.io/v1/storageclasses", storage_class(storage_class_name)
    )
    control_plane.create_namespace(NAMESPACE)
    try:
        prerequisites = in_namespace(documented_prerequisites(), NAMESPACE)
        apply_objects(control_plane, prerequisites)
        issue_certificate_secrets(control_plane, NAMESPACE, prerequisites)
        control_plane.helm(
            "install",
            RELEASE,
            str(CHART),
            "--namespace",
            NAMESPACE,
            "--values",
            str(PRODUCTION_VALUES),
        )
        yield values
    finally:
        control_plane.helm("uninstall", RELEASE, "--namespace", NAMESPACE, check=False)
        control_plane.delete_namespace(NAMESPACE)
        for name in NODES:
            control_plane.remove_node(name)
        with contextlib.suppress(KubeApiError):
            control_plane.api.delete(f"/apis/storage.k8s.io/v1/storageclasses/{storage_class_name}")


def test_five_brokers_are_created_and_scheduled_one_per_node(
    production_install: dict[str, object], control_plane: ControlPlane
) -> None:
    selector = (
        "app.kubernetes.io/name=volume-quota,app.kubernetes.io/instance=kafka,"
        "app.kubernetes.io/component=kafka"
    )
    placement = wait_for_bound_pods(control_plane, NAMESPACE, selector, 5)
    # Required anti-affinity on the host name, the nodeSelector and the toleration: one broker
    # on each of the five dedicated nodes, and the zones spread by at most one.
    assert sorted(placement.bound.values()) == NODES
    zones = [
        control_plane.api.get(f"/api/v1/nodes/{n}")["metadata"]["labels"][
            "topology.kubernetes.io/zone"
        ]
        for n in placement.bound.values()
    ]
    counts = [zones.count(z) for z in ZONES]
    assert max(counts) - min(counts) <= 1, counts


def test_acl_job_pod_is_created_and_scheduled(
    production_install: dict[str, object], control_plane: ControlPlane
) -> None:
    jobs = control_plane.api.items(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs")
    assert [j["metadata"]["name"] for j in jobs] == [f"{RELEASE}-volume-quota-acls-1"]
    wait_for_bound_pods(
        control_plane, NAMESPACE, f"batch.kubernetes.io/job-name={jobs[0]['metadata']['name']}", 1
    )


def test_every_object_the_pods_reference_was_created_as_the_docs_say(
    production_install: dict[str, object], control_plane: ControlPlane
) -> None:
    # Stands in for the kubelet, which refuses to start a pod whose Secret, ConfigMap (or key),
    # PersistentVolumeClaim or ServiceAccount is missing, until the pods are run by podman.
    # The PVCs are the StatefulSet controller's; they exist once its pods do.
    problems = {
        name: missing_references(control_plane, NAMESPACE, spec)
        for name, spec in pod_template_specs(control_plane, NAMESPACE).items()
    }
    problems = {
        name: [p for p in found if "PersistentVolumeClaim" not in p]
        for name, found in problems.items()
    }
    assert not any(problems.values()), describe_problems(problems)
