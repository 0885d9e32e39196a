"""`helm upgrade` and `helm uninstall` of the chart on the real control plane, checked against
docs/kubernetes.md ("Rollout and upgrades": a sidecar-only upgrade changes the pod template, so
the StatefulSet rolls its pods, one at a time, each waiting for the previous one to be ready)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.kubernetes.cluster_checks import (
    CHART,
    RELEASE,
    apply_objects,
    describe_events,
    documented_prerequisites,
    in_namespace,
    issue_certificate_secrets,
    release_objects,
    wait_for_bound_pods,
)
from tests.kubernetes.control_plane import ControlPlane, Json

pytestmark = pytest.mark.kubernetes

NAMESPACE = "vq-upgrade"
STATEFULSET = f"{RELEASE}-volume-quota"
SELECTOR = (
    f"app.kubernetes.io/name=volume-quota,app.kubernetes.io/instance={RELEASE},"
    "app.kubernetes.io/component=kafka"
)
REPLICAS = 3


@pytest.fixture(scope="module")
def release(control_plane: ControlPlane) -> Iterator[None]:
    control_plane.create_namespace(NAMESPACE)
    try:
        prerequisites = in_namespace(documented_prerequisites(), NAMESPACE)
        apply_objects(control_plane, prerequisites)
        issue_certificate_secrets(control_plane, NAMESPACE, prerequisites)
        control_plane.helm("install", RELEASE, str(CHART), "--namespace", NAMESPACE)
        yield
    finally:
        control_plane.helm("uninstall", RELEASE, "--namespace", NAMESPACE, check=False)
        control_plane.delete_namespace(NAMESPACE)


def statefulset(plane: ControlPlane) -> Json:
    return plane.api.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets/{STATEFULSET}")


def pod_revisions(plane: ControlPlane) -> dict[int, str]:
    return {
        int(p["metadata"]["labels"]["apps.kubernetes.io/pod-index"]): p["metadata"]["labels"][
            "controller-revision-hash"
        ]
        for p in plane.api.items(f"/api/v1/namespaces/{NAMESPACE}/pods", labelSelector=SELECTOR)
        if not p["metadata"].get("deletionTimestamp") and p["spec"].get("nodeName")
    }


def test_sidecar_image_upgrade_rolls_the_highest_ordinal_first_and_waits(
    release: None, control_plane: ControlPlane
) -> None:
    wait_for_bound_pods(control_plane, NAMESPACE, SELECTOR, REPLICAS)
    control_plane.wait_for(
        lambda: statefulset(control_plane).get("status", {}).get("updateRevision"),
        "the StatefulSet's first revision",
    )
    before = statefulset(control_plane)["status"]["updateRevision"]
    assert set(pod_revisions(control_plane).values()) == {before}

    control_plane.helm(
        "upgrade",
        RELEASE,
        str(CHART),
        "--namespace",
        NAMESPACE,
        "--reuse-values",
        "--set",
        "sidecar.image.tag=0.1.1",
    )

    control_plane.wait_for(
        lambda: statefulset(control_plane)["status"].get("updateRevision") != before,
        "a new update revision after the upgrade",
    )
    after = statefulset(control_plane)["status"]["updateRevision"]
    # The pod with the highest ordinal is replaced first (deleted, re-created at the new
    # revision, scheduled again)...
    control_plane.wait_for(
        lambda: pod_revisions(control_plane).get(REPLICAS - 1) == after,
        f"pod {REPLICAS - 1} re-created at revision {after}\n"
        + describe_events(control_plane, NAMESPACE),
        timeout=90,
    )
    # ...and the rollout waits for it to be ready before the next: no kubelet runs it, so it
    # never is, and the other pods keep the old revision.
    time.sleep(15)
    revisions = pod_revisions(control_plane)
    assert revisions == {**dict.fromkeys(range(REPLICAS - 1), before), REPLICAS - 1: after}
    status = statefulset(control_plane)["status"]
    assert status["currentRevision"] == before
    assert status.get("updatedReplicas") == 1
    # The ACL Job is named after the release revision: the upgrade runs it again.
    jobs = control_plane.api.items(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs")
    assert [j["metadata"]["name"] for j in jobs] == [f"{STATEFULSET}-acls-2"]


def test_uninstall_leaves_only_the_brokers_volume_claims(
    release: None, control_plane: ControlPlane
) -> None:
    templates = [
        t["metadata"]["name"] for t in statefulset(control_plane)["spec"]["volumeClaimTemplates"]
    ]
    wait_for_bound_pods(control_plane, NAMESPACE, SELECTOR, REPLICAS)
    control_plane.helm("uninstall", RELEASE, "--namespace", NAMESPACE)
    claims = {
        f"PersistentVolumeClaim/{t}-{STATEFULSET}-{i}" for t in templates for i in range(REPLICAS)
    }
    deadline = time.monotonic() + 90
    left = release_objects(control_plane, NAMESPACE, RELEASE)
    while set(left) != claims and time.monotonic() < deadline:
        time.sleep(1)
        left = release_objects(control_plane, NAMESPACE, RELEASE)
    # The StatefulSet controller's claims are not the release's: they keep the brokers' data.
    assert set(left) == claims, f"left after helm uninstall: {left}\n" + describe_events(
        control_plane, NAMESPACE
    )
    for claim in control_plane.api.items(f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims"):
        assert claim["status"]["phase"] == "Bound", claim["metadata"]["name"]
