"""The harness itself: the control plane is real, at the pinned version, and enforces what the
other tests rely on (Pod Security "restricted", the Priority admission plugin, healthy nodes)."""

from __future__ import annotations

import json

import pytest

from tests.kubernetes.control_plane import ControlPlane, KubeApiError

pytestmark = pytest.mark.kubernetes

PINNED_VERSION = "v1.36.3"


def _pod(name: str, **spec: object) -> dict[str, object]:
    container = {"name": "main", "image": "registry.example.com/none:1", **spec}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container]},
    }


def test_every_component_reports_the_pinned_version(control_plane: ControlPlane) -> None:
    versions = json.loads(control_plane.kubectl("version", "-o", "json"))
    assert versions["clientVersion"]["gitVersion"] == PINNED_VERSION
    assert versions["serverVersion"]["gitVersion"] == PINNED_VERSION
    for tool in ("kube-controller-manager", "kube-scheduler"):
        printed = control_plane.run(tool, "--version").stdout.strip()
        assert printed == f"Kubernetes {PINNED_VERSION}"


def test_restricted_namespace_refuses_a_privileged_pod(control_plane: ControlPlane) -> None:
    control_plane.create_namespace("harness-psa")
    try:
        with pytest.raises(KubeApiError) as refused:
            control_plane.api.create(
                "/api/v1/namespaces/harness-psa/pods",
                _pod("privileged", securityContext={"privileged": True}),
            )
        assert refused.value.code == 403
        assert 'violates PodSecurity "restricted:latest"' in str(refused.value)
    finally:
        control_plane.delete_namespace("harness-psa")


def test_unknown_priority_class_is_refused(control_plane: ControlPlane) -> None:
    pod = _pod("prioritized")
    pod["spec"] = {**pod["spec"], "priorityClassName": "no-such-class"}  # type: ignore[dict-item]
    with pytest.raises(KubeApiError) as refused:
        control_plane.api.create("/api/v1/namespaces/default/pods", pod)
    assert "no PriorityClass with name no-such-class was found" in str(refused.value)
