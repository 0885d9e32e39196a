"""The Strimzi recipe (deploy/strimzi) applied to the real control plane in the order of
deploy/strimzi/README.md, server-side with strict field validation (an unknown or misplaced field
is an error, not a warning), after Strimzi 1.2.0's own CRDs. No Strimzi operator runs: the
custom resources are admitted and stored, and the agent's Deployment is run by the real
Deployment and ReplicaSet controllers and the scheduler into a namespace enforcing Pod Security
"restricted"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.kubernetes.cluster_checks import (
    STRIMZI_DIR,
    describe_problems,
    missing_references,
    pod_template_specs,
    tls_secret,
    wait_for_bound_pods,
)
from tests.kubernetes.control_plane import CertificateAuthority, ControlPlane, Json

pytestmark = pytest.mark.kubernetes

NAMESPACE = "kafka"
"""The recipe's namespace, as written in every file."""
APPLY_ORDER = ["topics.yaml", "user.yaml", "agent-deployment.yaml", "kafka.yaml"]
"""deploy/strimzi/README.md: topics, users, the agent, then the Kafka resource (kafka.yaml, or
kafka-image-volume.yaml instead)."""
AGENT_SELECTOR = (
    "app.kubernetes.io/name=volume-quota,app.kubernetes.io/component=cluster-agent,"
    "app.kubernetes.io/instance=my-cluster"
)


def apply_strict(plane: ControlPlane, path: Path) -> str:
    return plane.kubectl(
        "apply",
        "--server-side",
        "--validate=strict",
        "--field-manager=volume-quota-test",
        "-f",
        str(path),
    )


def operator_secrets(plane: ControlPlane) -> None:
    """Stand-in for Strimzi's operators, which do not run here: the Secrets they would write
    that the agent mounts (the User Operator's volume-quota-agent, the Cluster Operator's
    my-cluster-cluster-ca-cert and my-cluster-clients-ca-cert), with the keys docs/strimzi.md
    names."""
    clients_ca = CertificateAuthority.create("clients-ca")
    cluster_ca = CertificateAuthority.create("cluster-ca")
    cert, key = clients_ca.issue("volume-quota-agent", client=True)
    for name, data in (
        (
            "volume-quota-agent",
            {
                "user.crt": cert,
                "user.key": key,
                "user.p12": b"stand-in",
                "user.password": b"stand-in",
                "ca.crt": clients_ca.certificate_pem,
            },
        ),
        (
            "my-cluster-cluster-ca-cert",
            {"ca.crt": cluster_ca.certificate_pem, "ca.p12": b"stand-in", "ca.password": b"x"},
        ),
        (
            "my-cluster-clients-ca-cert",
            {"ca.crt": clients_ca.certificate_pem, "ca.p12": b"stand-in", "ca.password": b"x"},
        ),
    ):
        plane.api.create(
            f"/api/v1/namespaces/{NAMESPACE}/secrets", tls_secret(name, NAMESPACE, data)
        )


@pytest.fixture(scope="module")
def applied(control_plane: ControlPlane) -> Iterator[dict[str, str]]:
    control_plane.create_namespace(NAMESPACE)
    try:
        operator_secrets(control_plane)
        outputs = {name: apply_strict(control_plane, STRIMZI_DIR / name) for name in APPLY_ORDER}
        yield outputs
    finally:
        control_plane.delete_namespace(NAMESPACE)


def resource_of(obj: Json) -> str:
    """kubectl's fully qualified resource for an object: deployment.v1.apps, kafka.v1.kafka..."""
    group, _, version = obj["apiVersion"].rpartition("/")
    return f"{obj['kind'].lower()}.{version}.{group}" if group else obj["kind"].lower()


def documents(path: Path) -> list[Json]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_every_recipe_file_is_admitted_with_strict_field_validation(
    applied: dict[str, str], control_plane: ControlPlane
) -> None:
    for name in APPLY_ORDER:
        for obj in documents(STRIMZI_DIR / name):
            kind, object_name = obj["kind"], obj["metadata"]["name"]
            stored = json.loads(
                control_plane.kubectl(
                    "get", "-n", NAMESPACE, resource_of(obj), object_name, "-o", "json"
                )
            )
            assert stored["metadata"]["name"] == object_name
            assert stored.get("spec", {}).keys() >= obj.get("spec", {}).keys(), (name, kind)


def test_image_volume_variant_is_admitted_with_strict_field_validation(
    applied: dict[str, str], control_plane: ControlPlane
) -> None:
    # kafka-image-volume.yaml is the same cluster with the jar from an image volume: applied
    # over kafka.yaml's resources, it must be admitted just as strictly.
    output = apply_strict(control_plane, STRIMZI_DIR / "kafka-image-volume.yaml")
    assert "serverside-applied" in output


def test_agent_deployment_pods_are_created_scheduled_and_spread(
    applied: dict[str, str], control_plane: ControlPlane
) -> None:
    deployment = documents(STRIMZI_DIR / "agent-deployment.yaml")[0]
    replicas = int(deployment["spec"]["replicas"])
    placement = wait_for_bound_pods(control_plane, NAMESPACE, AGENT_SELECTOR, replicas)
    owners = {
        ref["kind"] for pod in placement.pods for ref in pod["metadata"].get("ownerReferences", [])
    }
    assert owners == {"ReplicaSet"}
    # The preferred anti-affinity puts the two agents on different nodes.
    assert len(set(placement.bound.values())) == replicas, placement.bound


def test_every_object_the_agent_pods_reference_exists(
    applied: dict[str, str], control_plane: ControlPlane
) -> None:
    # Stands in for the kubelet, which refuses to start a pod whose Secret (or key), ConfigMap,
    # PersistentVolumeClaim or ServiceAccount is missing, until the pods are run by podman.
    wait_for_bound_pods(control_plane, NAMESPACE, AGENT_SELECTOR, 2)
    problems = {
        name: missing_references(control_plane, NAMESPACE, spec)
        for name, spec in pod_template_specs(control_plane, NAMESPACE).items()
    }
    assert not any(problems.values()), describe_problems(problems)


def test_strict_field_validation_refuses_a_misspelt_field(
    applied: dict[str, str], control_plane: ControlPlane, tmp_path: Path
) -> None:
    # The check above means something only if the API server refuses an unknown field.
    user = documents(STRIMZI_DIR / "user.yaml")[0]
    user["metadata"]["name"] = "misspelt"
    user["spec"]["authentication"]["tpye"] = user["spec"]["authentication"].pop("type")
    path = tmp_path / "misspelt-user.yaml"
    path.write_text(yaml.safe_dump(user))
    result = control_plane.run(
        "kubectl", "apply", "--server-side", "--validate=strict", "-f", str(path), check=False
    )
    assert result.returncode != 0
    # Server-side apply's words for an unknown field.
    assert ".spec.authentication.tpye: field not declared in schema" in result.stderr, result.stderr
