"""Security contexts: every container of every pod runs as non-root, on a read-only root
filesystem, without privilege escalation and without any capability."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.chart_tools import CI_VALUES, Manifest, container, find, pod_spec, render


def _pod_specs(manifests: list[Manifest]) -> list[Manifest]:
    specs = []
    for manifest in manifests:
        if manifest["kind"] in {"StatefulSet", "Job"}:
            specs.append(manifest["spec"]["template"]["spec"])
        elif manifest["kind"] == "CronJob":
            specs.append(manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"])
        elif manifest["kind"] == "Pod":
            specs.append(manifest["spec"])
    return specs


def _all_containers(spec: Manifest) -> list[Manifest]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def _effective(spec: Manifest, entry: Manifest, key: str) -> Any:
    """A setting of the container's securityContext, else of the pod's."""
    container_context = entry.get("securityContext", {})
    if key in container_context:
        return container_context[key]
    return spec.get("securityContext", {}).get(key)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            "default",
            {"install-broker-plugin", "kafka", "volume-quota", "grant-acls", "check-sidecars"},
        ),
        (
            "production",
            {
                "install-broker-plugin",
                "install-metrics-agent",
                "kafka",
                "volume-quota",
                "grant-acls",
                "check-sidecars",
            },
        ),
        (
            "own-cluster-values.yaml",
            {
                "install-broker-plugin",
                "install-metrics-agent",
                "discover-rack",
                "kafka",
                "volume-quota",
                "grant-acls",
                "check-sidecars",
                "history",
            },
        ),
        ("attach-values.yaml", {"grant-acls", "check-sidecars"}),
    ],
)
def test_every_container_is_locked_down(
    values: str,
    expected: set[str],
    default_manifests: list[Manifest],
    production_manifests: list[Manifest],
) -> None:
    if values == "default":
        manifests = default_manifests
    elif values == "production":
        manifests = production_manifests
    else:
        manifests = render([next(path for path in CI_VALUES if path.name == values)])
    checked = set()
    for spec in _pod_specs(manifests):
        assert spec["automountServiceAccountToken"] is False
        for entry in _all_containers(spec):
            name = entry["name"]
            assert _effective(spec, entry, "runAsNonRoot") is True, name
            assert _effective(spec, entry, "runAsUser") not in (None, 0), name
            assert _effective(spec, entry, "seccompProfile") == {"type": "RuntimeDefault"}, name
            context = entry["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"] == {"drop": ["ALL"]}, name
            assert "add" not in context["capabilities"], name
            checked.add(name)
    assert checked == expected


def test_the_sidecar_runs_as_its_own_user_and_reads_volumes_through_the_fs_group(
    default_manifests: list[Manifest],
) -> None:
    spec = pod_spec(default_manifests)
    sidecar = container(spec, "volume-quota")
    assert sidecar["securityContext"]["runAsUser"] == 10001
    assert container(spec, "kafka").get("securityContext", {}).get("runAsUser") is None
    assert spec["securityContext"]["runAsUser"] == 1000
    assert spec["securityContext"]["fsGroup"] == 1000
    # Secrets readable by owner and group only; the fsGroup is every container's group.
    for volume in spec["volumes"]:
        if "secret" in volume:
            assert volume["secret"]["defaultMode"] == 0o440, volume["name"]


def test_writable_paths_are_volumes_not_the_image(default_manifests: list[Manifest]) -> None:
    spec = pod_spec(default_manifests)
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    for name in ("kafka", "volume-quota"):
        writable = [
            mount
            for mount in container(spec, name)["volumeMounts"]
            if not mount.get("readOnly", False)
        ]
        for mount in writable:
            volume = volumes.get(mount["name"])
            if volume is not None:  # None: a volumeClaimTemplate
                assert "emptyDir" in volume, (name, mount)


def test_user_overrides_reach_the_security_context() -> None:
    manifests = render(settings={"sidecar.securityContext.runAsUser": "20000"})
    sidecar = container(pod_spec(manifests), "volume-quota")
    assert sidecar["securityContext"]["runAsUser"] == 20000
    assert find(manifests, "StatefulSet")["spec"]["template"]["spec"]["securityContext"][
        "runAsNonRoot"
    ]
