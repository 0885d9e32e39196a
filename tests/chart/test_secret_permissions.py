"""Every container can read the Secret files it mounts, by the kubelet's rules (and the
certificate files cert-manager's csi-driver writes, by its own).

The kubelet writes a Secret volume's files owned by root:root with the volume's `defaultMode`
(0644 when unset). With a pod `fsGroup` it then hands the files to that group and adds group
read (pkg/volume/volume_linux.go, SetVolumeOwnership: the read-only mask 0440). The container's
process runs as `runAsUser`:`runAsGroup` (container first, then pod) with the pod's `fsGroup` and
`supplementalGroups` as supplementary groups. A key file it cannot read keeps the container from
starting its TLS clients: the broker, the sidecar, the ACL Job, the history job and the
`helm test` pod all mount one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.chart.chart_tools import REPO, SHIPPED_VALUES, Manifest, render

DEFAULT_MODE = 0o644
READ_ONLY_GROUP_MASK = 0o440
EVERY_POD = {"history.enabled": "true", "kafka.rack.enabled": "true"}


@dataclass(frozen=True)
class SecretFile:
    workload: str
    container: str
    volume: str
    secret: str
    mode: int
    group: int
    uid: int | None
    groups: frozenset[int]

    def readable(self) -> bool:
        if self.uid == 0:
            return True
        if self.mode & 0o004:
            return True
        return bool(self.mode & 0o040) and self.group in self.groups

    def describe(self) -> str:
        return (
            f"{self.workload} container {self.container}: Secret {self.secret} (volume "
            f"{self.volume}) is mode {self.mode:04o} group {self.group}, the process is uid "
            f"{self.uid} groups {sorted(self.groups)}"
        )


def _pod_templates(manifests: list[Manifest]) -> Iterator[tuple[str, Manifest]]:
    for manifest in manifests:
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        if kind == "Pod":
            yield f"Pod {name}", manifest["spec"]
        elif kind in ("StatefulSet", "Deployment", "DaemonSet", "Job"):
            yield f"{kind} {name}", manifest["spec"]["template"]["spec"]
        elif kind == "CronJob":
            yield f"{kind} {name}", manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def _csi_driver_files(csi: Manifest) -> Manifest:
    """How cert-manager's csi-driver writes a pod's certificate files: with the attribute
    csi.cert-manager.io/fs-group they belong to that group, group-readable (0440); without it,
    to root only (0600). The kubelet's fsGroup is not applied to them: csi-driver's volume has
    no fsType, and its CSIDriver's fsGroupPolicy is the default ReadWriteOnceWithFSType."""
    assert csi["driver"] == "csi.cert-manager.io", csi
    attributes = csi.get("volumeAttributes", {})
    issuer = attributes.get("csi.cert-manager.io/issuer-name")
    fs_group = attributes.get("csi.cert-manager.io/fs-group")
    if fs_group is None:
        return {"secretName": f"csi-driver:{issuer}", "defaultMode": 0o600, "group": 0}
    return {"secretName": f"csi-driver:{issuer}", "defaultMode": 0o440, "group": int(fs_group)}


def secret_files(manifests: list[Manifest]) -> list[SecretFile]:
    """What each container's process sees of each Secret volume it mounts."""
    files = []
    for workload, spec in _pod_templates(manifests):
        pod_context = spec.get("securityContext") or {}
        fs_group = pod_context.get("fsGroup")
        secrets = {v["name"]: v["secret"] for v in spec.get("volumes", []) if "secret" in v}
        secrets |= {
            v["name"]: _csi_driver_files(v["csi"]) for v in spec.get("volumes", []) if "csi" in v
        }
        for entry in [*spec.get("initContainers", []), *spec["containers"]]:
            context = entry.get("securityContext") or {}
            uid = context.get("runAsUser", pod_context.get("runAsUser"))
            gid = context.get("runAsGroup", pod_context.get("runAsGroup", 0))
            groups = {gid, *pod_context.get("supplementalGroups", [])}
            if fs_group is not None:
                groups.add(fs_group)
            for mount in entry.get("volumeMounts", []):
                secret = secrets.get(mount["name"])
                if secret is None:
                    continue
                mode = secret.get("defaultMode", DEFAULT_MODE)
                group = secret.get("group", 0)
                if "group" in secret:
                    pass  # csi-driver sets the files' group itself (fs-group), not the kubelet
                elif fs_group is not None:
                    mode |= READ_ONLY_GROUP_MASK
                    group = fs_group
                files.append(
                    SecretFile(
                        workload=workload,
                        container=entry["name"],
                        volume=mount["name"],
                        secret=secret["secretName"],
                        mode=mode,
                        group=group,
                        uid=uid,
                        groups=frozenset(groups),
                    )
                )
    return files


@pytest.mark.parametrize(
    "values",
    [pytest.param([], id="default")]
    + [pytest.param([path], id=str(path.relative_to(REPO))) for path in SHIPPED_VALUES],
)
def test_every_container_can_read_the_secrets_it_mounts(values: list[Path]) -> None:
    files = secret_files(render(values, EVERY_POD if not values else None))
    assert files, "no Secret volume rendered"
    unreadable = [file.describe() for file in files if not file.readable()]
    assert not unreadable, "\n".join(unreadable)


def test_the_helm_test_pod_reads_the_sidecar_key(default_manifests: list[Manifest]) -> None:
    test_pod = [file for file in secret_files(default_manifests) if file.workload.startswith("Pod")]
    assert [(file.container, file.volume) for file in test_pod] == [
        ("check-sidecars", "sidecar-tls")
    ]
    assert test_pod[0].readable(), test_pod[0].describe()


def test_the_model_refuses_a_root_owned_key_without_fs_group() -> None:
    manifest: Manifest = {
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "securityContext": {"runAsUser": 10001, "runAsGroup": 10001},
                    "volumeMounts": [{"name": "tls", "mountPath": "/tls"}],
                }
            ],
            "volumes": [{"name": "tls", "secret": {"secretName": "s", "defaultMode": 0o400}}],
        },
    }
    assert not secret_files([manifest])[0].readable()
    manifest["spec"]["securityContext"] = {"fsGroup": 10001}
    assert secret_files([manifest])[0].readable()
