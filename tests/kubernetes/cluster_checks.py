"""What the tests in tests/kubernetes check on the real API server, and the objects they create
first (from docs/kubernetes.md), kept out of the test files so that each test reads as a story."""

from __future__ import annotations

import base64
import re
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.kubernetes.control_plane import (
    REPO_ROOT,
    CertificateAuthority,
    ControlPlane,
    Json,
    KubeApiError,
)

CHART = REPO_ROOT / "deploy" / "helm" / "volume-quota"
PRODUCTION_VALUES = REPO_ROOT / "deploy" / "helm" / "values-production.yaml"
KUBERNETES_DOC = REPO_ROOT / "docs" / "kubernetes.md"
STRIMZI_DIR = REPO_ROOT / "deploy" / "strimzi"
RELEASE = "kafka"
"""The release name the docs' examples use, so that their Secret names apply as written."""

WORKLOAD_PATHS = {
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "CronJob": "/apis/batch/v1/namespaces/{ns}/cronjobs",
}


# --- the objects docs/kubernetes.md tells the user to create --------------------------------------


def docs_section(doc: Path, heading: str) -> str:
    """The text of the ``## heading`` section of a Markdown file, up to the next ``## ``."""
    text = doc.read_text()
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## )", text, re.M | re.S)
    if match is None:
        raise AssertionError(f"{doc} has no section '## {heading}'")
    return match.group(1)


def yaml_objects_in(markdown: str) -> list[Json]:
    """Every Kubernetes object (a mapping with apiVersion and kind) in the ```yaml blocks."""
    objects: list[Json] = []
    for block in re.findall(r"^```yaml\n(.*?)^```", markdown, re.M | re.S):
        for document in yaml.safe_load_all(block):
            if isinstance(document, dict) and "apiVersion" in document and "kind" in document:
                objects.append(document)
    return objects


def documented_prerequisites() -> list[Json]:
    """The objects of "Before you install" and "Certificates" in docs/kubernetes.md: what the
    Install section applies (`kubectl apply -f certificates.yaml`) before `helm install`."""
    objects: list[Json] = []
    for heading in ("Before you install", "Certificates"):
        objects += yaml_objects_in(docs_section(KUBERNETES_DOC, heading))
    if not objects:
        raise AssertionError(f"{KUBERNETES_DOC}: no objects to create before installing")
    return objects


def documented_install_settings() -> tuple[str, ...]:
    """The `--set`/`--values` options of the `helm install` command in docs/kubernetes.md's
    Install section, as written (continuation lines joined)."""
    section = docs_section(KUBERNETES_DOC, "Install")
    for block in re.findall(r"^```bash\n(.*?)^```", section, re.M | re.S):
        text = re.sub(r"\\\n", " ", block)
        for line in text.splitlines():
            words = shlex.split(line, comments=True)
            if words[:2] == ["helm", "install"]:
                return tuple(_options(words[2:]))
    raise AssertionError(f"{KUBERNETES_DOC}: no `helm install` command in the Install section")


def _options(words: list[str]) -> list[str]:
    options: list[str] = []
    for index, word in enumerate(words):
        if word in ("--set", "--set-string") and index + 1 < len(words):
            options += [word, words[index + 1]]
    return options


def in_namespace(objects: Iterable[Json], namespace: str) -> list[Json]:
    """The docs' objects (written for namespace kafka) moved to ``namespace``."""
    moved = []
    for obj in objects:
        copy: Json = yaml.safe_load(yaml.safe_dump(obj))
        if "namespace" in copy.get("metadata", {}):
            copy["metadata"]["namespace"] = namespace
        moved.append(copy)
    return moved


def apply_objects(plane: ControlPlane, objects: list[Json]) -> str:
    """`kubectl apply --server-side --validate=strict` of the objects, as one stream."""
    stream = yaml.safe_dump_all(objects)
    return plane.kubectl(
        "apply", "--server-side", "--validate=strict", "-f", "-", input_text=stream
    )


def tls_secret(name: str, namespace: str, data: dict[str, bytes]) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls" if "tls.crt" in data else "Opaque",
        "metadata": {"name": name, "namespace": namespace},
        "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
    }


def issue_certificate_secrets(
    plane: ControlPlane, namespace: str, certificates: Iterable[Json]
) -> list[str]:
    """Stand-in for cert-manager (no cert-manager controller runs here): for each Certificate
    and Issuer applied, the Secret cert-manager works with, holding tls.crt, tls.key and ca.crt
    as cert-manager writes them, with the extended key usages the Certificate asks for (the
    broker's serves TLS: tests/pods runs it). Returns the Secret names created."""
    ca = CertificateAuthority.create(f"{namespace}-ca")
    created = []
    for obj in certificates:
        if obj["kind"] == "Issuer" and "ca" in obj.get("spec", {}):
            name = obj["spec"]["ca"]["secretName"]
            key = ca.key_pem
            data = {"tls.crt": ca.certificate_pem, "tls.key": key}
        elif obj["kind"] == "Certificate":
            spec = obj["spec"]
            name = spec["secretName"]
            usages = spec.get("usages", ["client auth"])
            cert, key = ca.issue(
                spec.get("commonName", name),
                dns_names=spec.get("dnsNames", []),
                server="server auth" in usages,
                client="client auth" in usages,
            )
            data = {"tls.crt": cert, "tls.key": key, "ca.crt": ca.certificate_pem}
        else:
            continue
        plane.api.create(
            f"/api/v1/namespaces/{namespace}/secrets", tls_secret(name, namespace, data)
        )
        created.append(name)
    return created


# --- what the controllers and the scheduler did ---------------------------------------------


def events(plane: ControlPlane, namespace: str) -> list[Json]:
    return plane.api.items(f"/api/v1/namespaces/{namespace}/events")


def describe_events(plane: ControlPlane, namespace: str) -> str:
    lines = [
        f"  {e.get('type')} {e.get('reason')} {e['involvedObject'].get('kind')}/"
        f"{e['involvedObject'].get('name')}: {e.get('message')}"
        for e in events(plane, namespace)
    ]
    return "\n".join(lines) or "  (no events)"


@dataclass(frozen=True)
class PodPlacement:
    expected: int
    pods: list[Json]

    @property
    def bound(self) -> dict[str, str]:
        return {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in self.pods
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
        }

    @property
    def complete(self) -> bool:
        return len(self.bound) >= self.expected


def wait_for_bound_pods(
    plane: ControlPlane,
    namespace: str,
    selector: str,
    expected: int,
    *,
    timeout: float = 90,
) -> PodPlacement:
    """Wait until ``expected`` pods matching ``selector`` exist and the scheduler bound each to a
    node; fail with the namespace's events (FailedCreate, FailedScheduling, ...) otherwise."""
    deadline = time.monotonic() + timeout
    placement = PodPlacement(expected, [])
    while time.monotonic() < deadline:
        pods = plane.api.items(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector)
        placement = PodPlacement(expected, pods)
        if placement.complete:
            return placement
        time.sleep(1)
    unbound = [
        f"  {p['metadata']['name']}: {_pod_conditions(p)}"
        for p in placement.pods
        if not p["spec"].get("nodeName")
    ]
    raise AssertionError(
        f"{len(placement.bound)} of {expected} pods ({selector}) in {namespace} were created and "
        f"bound to a node within {timeout} s\n"
        f"bound: {placement.bound}\nunbound:\n"
        + ("\n".join(unbound) or "  (none created)")
        + f"\nevents:\n{describe_events(plane, namespace)}"
    )


def _pod_conditions(pod: Json) -> str:
    conditions = pod.get("status", {}).get("conditions", [])
    return (
        "; ".join(
            f"{c['type']}={c['status']} {c.get('reason', '')}: {c.get('message', '')}"
            for c in conditions
        )
        or "no conditions yet"
    )


# --- what a kubelet would refuse ------------------------------------------------------------------


def pod_template_specs(plane: ControlPlane, namespace: str) -> dict[str, Json]:
    """The pod specs of every workload in the namespace, by "Kind/name"."""
    specs: dict[str, Json] = {}
    for kind, path in WORKLOAD_PATHS.items():
        for workload in plane.api.items(path.format(ns=namespace)):
            spec = workload["spec"]
            template = (
                spec["jobTemplate"]["spec"]["template"] if kind == "CronJob" else spec["template"]
            )
            specs[f"{kind}/{workload['metadata']['name']}"] = template["spec"]
    return specs


def missing_references(plane: ControlPlane, namespace: str, pod_spec: Json) -> list[str]:
    """Each Secret, ConfigMap (and key), PersistentVolumeClaim, ServiceAccount, CSI driver and
    csi-driver issuer the pod spec references that does not exist and is not marked optional.

    This stands in for the kubelet, which refuses to start a pod (CreateContainerConfigError,
    FailedMount) on exactly these, until the pods are run by podman.
    """
    problems: list[str] = []

    def check(kind: str, name: str, keys: Iterable[str], where: str, optional: Any) -> None:
        if optional:
            return
        plural = {"Secret": "secrets", "ConfigMap": "configmaps"}[kind]
        try:
            obj = plane.api.get(f"/api/v1/namespaces/{namespace}/{plural}/{name}")
        except KubeApiError as error:
            if error.code == 404:
                problems.append(f"{where}: {kind} {namespace}/{name} does not exist")
                return
            raise
        present = set(obj.get("data", {})) | set(obj.get("binaryData", {}))
        problems.extend(
            f"{where}: {kind} {namespace}/{name} has no key {key!r} (it has {sorted(present)})"
            for key in keys
            if key not in present
        )

    account = pod_spec.get("serviceAccountName") or "default"
    if not plane.api.exists(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}"):
        problems.append(f"serviceAccountName: ServiceAccount {namespace}/{account} does not exist")
    for secret in pod_spec.get("imagePullSecrets", []):
        check("Secret", secret["name"], [], "imagePullSecrets", False)

    for volume in pod_spec.get("volumes", []):
        where = f"volume {volume['name']}"
        if "secret" in volume:
            source = volume["secret"]
            keys = [item["key"] for item in source.get("items", [])]
            check("Secret", source["secretName"], keys, where, source.get("optional"))
        if "configMap" in volume:
            source = volume["configMap"]
            keys = [item["key"] for item in source.get("items", [])]
            check("ConfigMap", source["name"], keys, where, source.get("optional"))
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            if not plane.api.exists(
                f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}"
            ):
                problems.append(
                    f"{where}: PersistentVolumeClaim {namespace}/{claim} does not exist"
                )
        if "csi" in volume:
            problems.extend(f"{where}: {p}" for p in _csi_problems(plane, namespace, volume["csi"]))
        for source in volume.get("projected", {}).get("sources", []):
            for kind, field in (("Secret", "secret"), ("ConfigMap", "configMap")):
                if field in source:
                    keys = [item["key"] for item in source[field].get("items", [])]
                    check(kind, source[field]["name"], keys, where, source[field].get("optional"))

    containers = pod_spec.get("initContainers", []) + pod_spec.get("containers", [])
    for container in containers:
        where = f"container {container['name']}"
        for env in container.get("env", []):
            reference = env.get("valueFrom", {})
            if "secretKeyRef" in reference:
                ref = reference["secretKeyRef"]
                check(
                    "Secret",
                    ref["name"],
                    [ref["key"]],
                    f"{where} env {env['name']}",
                    ref.get("optional"),
                )
            if "configMapKeyRef" in reference:
                ref = reference["configMapKeyRef"]
                check(
                    "ConfigMap",
                    ref["name"],
                    [ref["key"]],
                    f"{where} env {env['name']}",
                    ref.get("optional"),
                )
        for source in container.get("envFrom", []):
            if "secretRef" in source:
                ref = source["secretRef"]
                check("Secret", ref["name"], [], f"{where} envFrom", ref.get("optional"))
            if "configMapRef" in source:
                ref = source["configMapRef"]
                check("ConfigMap", ref["name"], [], f"{where} envFrom", ref.get("optional"))
    return problems


CSI_DRIVER_ISSUER_KINDS = {"Issuer": "issuers", "ClusterIssuer": "clusterissuers"}


def _csi_problems(plane: ControlPlane, namespace: str, csi: Json) -> list[str]:
    """An inline CSI volume: the kubelet mounts it only when its driver is registered (a
    CSIDriver object that allows Ephemeral volumes); cert-manager's csi-driver then asks the
    issuer the volume names, which must exist."""
    driver = csi["driver"]
    try:
        registered = plane.api.get(f"/apis/storage.k8s.io/v1/csidrivers/{driver}")
    except KubeApiError as error:
        if error.code == 404:
            return [f"CSIDriver {driver} does not exist (the driver is not installed)"]
        raise
    problems = []
    modes = registered["spec"].get("volumeLifecycleModes", ["Persistent"])
    if "Ephemeral" not in modes:
        problems.append(f"CSIDriver {driver} allows {modes}, not inline (Ephemeral) volumes")
    attributes = csi.get("volumeAttributes", {})
    issuer = attributes.get("csi.cert-manager.io/issuer-name")
    if driver == "csi.cert-manager.io" and issuer:
        kind = attributes.get("csi.cert-manager.io/issuer-kind", "Issuer")
        plural = CSI_DRIVER_ISSUER_KINDS[kind]
        where = f"namespaces/{namespace}/{plural}" if kind == "Issuer" else plural
        if not plane.api.exists(f"/apis/cert-manager.io/v1/{where}/{issuer}"):
            problems.append(f"{kind} {issuer} (csi.cert-manager.io/issuer-name) does not exist")
    return problems


def describe_problems(problems: dict[str, list[str]]) -> str:
    """One line per missing object, under the workload or pod that references it."""
    lines = ["objects the pods reference that a kubelet would not find:"]
    for name, found in sorted(problems.items()):
        lines += [f"  {name}: {problem}" for problem in found]
    return "\n".join(lines)


def release_objects(plane: ControlPlane, namespace: str, release: str) -> list[str]:
    """Every object in the namespace (and cluster-wide RBAC) labelled as this release's, plus
    every PVC, pod and workload in the namespace, as "Kind/name"."""
    selector = f"app.kubernetes.io/instance={release}"
    found: set[str] = set()
    namespaced = {
        "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
        "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
        "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
        "CronJob": "/apis/batch/v1/namespaces/{ns}/cronjobs",
        "Pod": "/api/v1/namespaces/{ns}/pods",
        "Service": "/api/v1/namespaces/{ns}/services",
        "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
        "Secret": "/api/v1/namespaces/{ns}/secrets",
        "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
        "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
        "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
        "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
        "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
        "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
        "ServiceMonitor": "/apis/monitoring.coreos.com/v1/namespaces/{ns}/servicemonitors",
        "PrometheusRule": "/apis/monitoring.coreos.com/v1/namespaces/{ns}/prometheusrules",
    }
    always = {"Pod", "PersistentVolumeClaim", "StatefulSet", "Job", "CronJob"}
    for kind, path in namespaced.items():
        query = {} if kind in always else {"labelSelector": selector}
        for obj in plane.api.items(path.format(ns=namespace), **query):
            found.add(f"{kind}/{obj['metadata']['name']}")
    for kind, path in {
        "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    }.items():
        for obj in plane.api.items(path, labelSelector=selector):
            if obj["metadata"]["name"].startswith(f"{namespace}-"):
                found.add(f"{kind}/{obj['metadata']['name']}")
    return sorted(found)
