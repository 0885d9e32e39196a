"""`helm install` of deploy/helm/volume-quota on the real control plane, with the defaults (as
docs/kubernetes.md's Install section runs it) and with each ci/*-values.yaml.

For each install: the API server admits every object (Pod Security "restricted" enforced on the
namespace), the controllers create every workload's pods and the scheduler binds each to a node,
and every object those pods reference exists (what the kubelet would check before starting them).
Containers are never started: there is no kubelet, so `helm test` cannot run here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.kubernetes.cluster_checks import (
    CHART,
    RELEASE,
    apply_objects,
    describe_problems,
    documented_install_settings,
    documented_prerequisites,
    in_namespace,
    issue_certificate_secrets,
    missing_references,
    pod_template_specs,
    tls_secret,
    wait_for_bound_pods,
)
from tests.kubernetes.control_plane import CertificateAuthority, ControlPlane, Json

pytestmark = pytest.mark.kubernetes


@dataclass(frozen=True)
class InstallCase:
    name: str
    namespace: str
    values: tuple[Path, ...] = ()
    settings: tuple[str, ...] = ()
    documented_certificates: bool = True
    """Create the Issuer and Certificates of docs/kubernetes.md (and their Secrets) first;
    otherwise the Secrets the values file names (attach mode: the user's own Kafka's)."""
    own_secrets: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


CASES = [
    # The defaults, with the `--set` options of docs/kubernetes.md's `helm install` command.
    InstallCase("defaults", "vq-defaults", settings=documented_install_settings()),
    InstallCase("own-cluster", "vq-own-cluster", values=(CHART / "ci/own-cluster-values.yaml",)),
    InstallCase(
        "attach",
        "vq-attach",
        values=(CHART / "ci/attach-values.yaml",),
        documented_certificates=False,
        # attach-values.yaml: the sidecar's Secret (user.crt, user.key, ca.crt) and the ACL Job's
        # super user certificate, both from the user's existing Kafka.
        own_secrets=(
            ("kafka-volume-quota-client", ("user.crt", "user.key", "ca.crt")),
            ("ops-admin-tls", ("tls.crt", "tls.key", "ca.crt")),
        ),
    ),
]


@dataclass
class Installed:
    case: InstallCase
    manifest: list[Json]


def create_own_secrets(plane: ControlPlane, case: InstallCase) -> None:
    ca = CertificateAuthority.create(f"{case.namespace}-ca")
    for name, keys in case.own_secrets:
        cert, key = ca.issue(name, client=True)
        contents = {"crt": cert, "key": key}
        data = {
            k: ca.certificate_pem if k == "ca.crt" else contents[k.rsplit(".", 1)[1]] for k in keys
        }
        plane.api.create(
            f"/api/v1/namespaces/{case.namespace}/secrets", tls_secret(name, case.namespace, data)
        )


def helm_install(plane: ControlPlane, case: InstallCase) -> list[Json]:
    arguments = ["install", RELEASE, str(CHART), "--namespace", case.namespace]
    for values in case.values:
        arguments += ["--values", str(values)]
    plane.helm(*arguments, *case.settings)
    manifest = plane.helm("get", "manifest", RELEASE, "--namespace", case.namespace).stdout
    return [doc for doc in yaml.safe_load_all(manifest) if doc]


@pytest.fixture(scope="module", params=CASES, ids=[c.name for c in CASES])
def installed(request: pytest.FixtureRequest, control_plane: ControlPlane) -> Iterator[Installed]:
    case: InstallCase = request.param
    control_plane.create_namespace(case.namespace)
    try:
        if case.documented_certificates:
            prerequisites = in_namespace(documented_prerequisites(), case.namespace)
            apply_objects(control_plane, prerequisites)
            issue_certificate_secrets(control_plane, case.namespace, prerequisites)
        create_own_secrets(control_plane, case)
        yield Installed(case, helm_install(control_plane, case))
    finally:
        control_plane.helm("uninstall", RELEASE, "--namespace", case.namespace, check=False)
        control_plane.delete_namespace(case.namespace)


def expected_pods(manifest: list[Json]) -> dict[str, tuple[str, int]]:
    """For each workload the release creates at once: its pods' label selector and count."""
    expected = {}
    for obj in manifest:
        kind, name, spec = obj["kind"], obj["metadata"]["name"], obj.get("spec", {})
        if kind in ("StatefulSet", "Deployment"):
            labels = spec["selector"]["matchLabels"]
            selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
            expected[f"{kind}/{name}"] = (selector, int(spec.get("replicas", 1)))
        elif kind == "Job":
            expected[f"Job/{name}"] = (f"batch.kubernetes.io/job-name={name}", 1)
    return expected


def test_every_workload_gets_its_pods_created_and_scheduled(
    installed: Installed, control_plane: ControlPlane
) -> None:
    expected = expected_pods(installed.manifest)
    assert expected, "the release has no workload"
    for workload, (selector, count) in expected.items():
        placement = wait_for_bound_pods(control_plane, installed.case.namespace, selector, count)
        assert len(placement.bound) == count, (workload, placement.bound)
        assert set(placement.bound.values()) <= set(control_plane.nodes)


def test_statefulset_spreads_brokers_over_nodes_and_binds_their_claims(
    installed: Installed, control_plane: ControlPlane
) -> None:
    statefulsets = [o for o in installed.manifest if o["kind"] == "StatefulSet"]
    namespace = installed.case.namespace
    if installed.case.name == "attach":
        # Attach mode renders no Kafka: the broker pods' pieces are in <fullname>-attach.
        assert statefulsets == []
        assert control_plane.api.exists(
            f"/api/v1/namespaces/{namespace}/configmaps/{RELEASE}-volume-quota-attach"
        )
        return
    (statefulset,) = statefulsets
    labels = statefulset["spec"]["selector"]["matchLabels"]
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    replicas = int(statefulset["spec"]["replicas"])
    placement = wait_for_bound_pods(control_plane, namespace, selector, replicas)
    ordinals = sorted(
        int(p["metadata"]["labels"]["apps.kubernetes.io/pod-index"]) for p in placement.pods
    )
    assert ordinals == list(range(replicas))
    templates = [t["metadata"]["name"] for t in statefulset["spec"]["volumeClaimTemplates"]]
    claims = {
        c["metadata"]["name"]: c
        for c in control_plane.api.items(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")
    }
    for pod in placement.pods:
        for template in templates:
            claim = claims[f"{template}-{pod['metadata']['name']}"]
            # The scheduler chose the pod's node for the claim (WaitForFirstConsumer).
            node = claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"]
            assert node == pod["spec"]["nodeName"]


def test_every_object_the_pods_reference_exists(
    installed: Installed, control_plane: ControlPlane
) -> None:
    # Stands in for the kubelet, which refuses to start a pod whose Secret, ConfigMap (or key),
    # PersistentVolumeClaim or ServiceAccount is missing, until the pods are run by podman.
    namespace = installed.case.namespace
    for selector, count in expected_pods(installed.manifest).values():
        wait_for_bound_pods(control_plane, namespace, selector, count)
    problems = {
        name: missing_references(control_plane, namespace, spec)
        for name, spec in pod_template_specs(control_plane, namespace).items()
    }
    for pod in control_plane.api.items(f"/api/v1/namespaces/{namespace}/pods"):
        problems[f"Pod/{pod['metadata']['name']}"] = missing_references(
            control_plane, namespace, pod["spec"]
        )
    assert not any(problems.values()), describe_problems(problems)
