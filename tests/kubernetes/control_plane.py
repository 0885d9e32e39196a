"""A real Kubernetes control plane on 127.0.0.1, for installing the chart and the Strimzi recipe.

``tests/kubernetes/install-control-plane.sh`` builds kube-apiserver, kube-controller-manager,
kube-scheduler and kubectl from the Go module proxy (and installs etcd and helm); this module runs
them: etcd on a temporary data directory, the API server with a CA, serving certificate and
service-account signing key made here, the controller manager (every controller, the service
account token controller included) and the scheduler, each authenticated by its own client
certificate. Everything listens on 127.0.0.1 only, on free ports.

There is no kubelet, no container runtime and no kube-proxy. Three things a node agent or a
storage driver would do are done here instead, openly, by ``NodeStandIn``:

- Node objects are registered by the harness (Ready, with allocatable CPU, memory and pods and a
  zone label) and their Leases in kube-node-lease are renewed, as a kubelet's heartbeat would, so
  that the node lifecycle controller keeps them schedulable;
- a pod that is being deleted on one of those nodes is removed (grace period 0) as the kubelet
  does once its containers are gone;
- PersistentVolumeClaims of a StorageClass whose provisioner is ``HARNESS_PROVISIONER`` get a
  PersistentVolume (``local``, pinned to the node the scheduler selected), as a CSI external
  provisioner would create; the PV controller in kube-controller-manager binds them.

Containers are never started: a pod gets as far as being bound to a node (``spec.nodeName``).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from local_cluster.ports import free_loopback_ports

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO_ROOT / "tests" / "kubernetes" / "install-control-plane.sh"

HARNESS_PROVISIONER = "volume-quota.test/harness-provisioner"
"""The provisioner name of StorageClasses whose claims ``NodeStandIn`` provisions."""

ZONES = ("zone-a", "zone-b", "zone-c")
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
RESTRICTED_LABELS = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
ADMISSION_PLUGINS = (
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "DefaultIngressClass",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
)

Json = dict[str, Any]


class KubeApiError(RuntimeError):
    """The API server refused a request; ``status`` is its Status object (the message in it)."""

    def __init__(self, method: str, path: str, code: int, status: Json) -> None:
        self.code = code
        self.status = status
        message = status.get("message", json.dumps(status))
        super().__init__(f"{method} {path}: HTTP {code}: {message}")


def install_control_plane() -> Path:
    """Run the install script (a no-op when the cache is warm); the bin directory it prints."""
    result = subprocess.run(
        ["bash", str(INSTALL_SCRIPT)], check=False, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{INSTALL_SCRIPT} failed ({result.returncode}):\n{result.stderr[-4000:]}"
        )
    bin_dir = Path(result.stdout.strip().splitlines()[-1])
    for tool in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        if not (bin_dir / tool).exists():
            raise RuntimeError(f"{INSTALL_SCRIPT} printed {bin_dir}, which has no {tool}")
    return bin_dir


def now_rfc3339(*, micro: bool = False) -> str:
    stamp = datetime.datetime.now(datetime.UTC)
    if micro:
        return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def storage_class(name: str, *, default: bool = False) -> Json:
    """A StorageClass whose claims ``NodeStandIn`` provisions, on the node the scheduler picks."""
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations},
        "provisioner": HARNESS_PROVISIONER,
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }


# --- certificates --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CertificateAuthority:
    """A self-made CA (ECDSA P-256) that signs serving and client certificates."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @classmethod
    def create(cls, common_name: str) -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .sign(key, hashes.SHA256())
        )
        return cls(key, certificate)

    def issue(
        self,
        common_name: str,
        *,
        organizations: Sequence[str] = (),
        dns_names: Sequence[str] = (),
        ip_addresses: Sequence[str] = (),
        server: bool = False,
        client: bool = False,
    ) -> tuple[bytes, bytes]:
        """A leaf certificate and its PKCS#8 key, both PEM."""
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        attributes += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else []
        usages += [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attributes))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
        )
        alternative_names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
        alternative_names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
        if alternative_names:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(alternative_names), critical=False
            )
        certificate = builder.sign(self.key, hashes.SHA256())
        return (
            certificate.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
        )

    @property
    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


def write_private(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


# --- the API -------------------------------------------------------------------------------------


class KubeApi:
    """A small REST client for the API server, authenticated by a client certificate."""

    def __init__(self, server: str, ca_file: Path, cert_file: Path, key_file: Path) -> None:
        self.server = server
        self._context = ssl.create_default_context(cafile=str(ca_file))
        self._context.load_cert_chain(str(cert_file), str(key_file))

    def request(
        self,
        method: str,
        path: str,
        body: Json | None = None,
        *,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> Json:
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=timeout) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as error:
            raw = error.read().decode(errors="replace")
            try:
                status = cast(Json, json.loads(raw))
            except json.JSONDecodeError:
                status = {"message": raw}
            raise KubeApiError(method, path, error.code, status) from None
        return cast(Json, json.loads(text)) if text else {}

    def get(self, path: str, **query: str) -> Json:
        return self.request("GET", path, query=query or None)

    def items(self, path: str, **query: str) -> list[Json]:
        return cast(list[Json], self.get(path, **query).get("items", []))

    def create(self, path: str, body: Json, **query: str) -> Json:
        return self.request("POST", path, body, query=query or None)

    def delete(self, path: str, **query: str) -> Json:
        return self.request("DELETE", path, query=query or None)

    def merge_patch(self, path: str, body: Json) -> Json:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
        except KubeApiError as error:
            if error.code == 404:
                return False
            raise
        return True


# --- processes -----------------------------------------------------------------------------------


@dataclass
class Component:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@dataclass
class NodeSpec:
    name: str
    zone: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[Json] = field(default_factory=list)
    cpu: str = "16"
    memory: str = "64Gi"
    pods: str = "110"


class NodeStandIn:
    """What a kubelet and a CSI provisioner would do, and nothing more (see the module doc)."""

    def __init__(self, api: KubeApi, interval: float = 1.0) -> None:
        self._api = api
        self._interval = interval
        self._nodes: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="node-stand-in", daemon=True)
        self._last_lease_renewal = 0.0
        self.errors: list[str] = []

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def add_node(self, name: str) -> None:
        with self._lock:
            self._nodes.add(name)

    def remove_node(self, name: str) -> None:
        with self._lock:
            self._nodes.discard(name)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            for step in (self._renew_leases, self._finish_pod_deletions, self._provision):
                try:
                    step()
                except (KubeApiError, OSError) as error:
                    self.errors.append(f"{step.__name__}: {error}")
                    del self.errors[:-50]

    def _renew_leases(self) -> None:
        if time.monotonic() - self._last_lease_renewal < 10:
            return
        with self._lock:
            nodes = sorted(self._nodes)
        for node in nodes:
            self._api.merge_patch(
                f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}",
                {"spec": {"renewTime": now_rfc3339(micro=True)}},
            )
        self._last_lease_renewal = time.monotonic()

    def _finish_pod_deletions(self) -> None:
        with self._lock:
            nodes = set(self._nodes)
        for pod in self._api.items("/api/v1/pods"):
            metadata, spec = pod["metadata"], pod["spec"]
            if metadata.get("deletionTimestamp") and spec.get("nodeName") in nodes:
                # The kubelet deletes the pod for good once its containers are stopped.
                with contextlib.suppress(KubeApiError):
                    self._api.request(
                        "DELETE",
                        f"/api/v1/namespaces/{metadata['namespace']}/pods/{metadata['name']}",
                        {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
                    )

    def _provision(self) -> None:
        classes = {
            sc["metadata"]["name"]: sc
            for sc in self._api.items("/apis/storage.k8s.io/v1/storageclasses")
        }
        volumes = self._api.items("/api/v1/persistentvolumes")
        claimed = {
            (pv["spec"].get("claimRef") or {}).get("uid")
            for pv in volumes
            if pv["metadata"].get("annotations", {}).get("pv.kubernetes.io/provisioned-by")
            == HARNESS_PROVISIONER
        }
        for pv in volumes:
            # Reclaim policy Delete: an external provisioner deletes a released volume.
            annotations = pv["metadata"].get("annotations", {})
            if (
                annotations.get("pv.kubernetes.io/provisioned-by") == HARNESS_PROVISIONER
                and pv.get("status", {}).get("phase") == "Released"
                and pv["spec"].get("persistentVolumeReclaimPolicy") == "Delete"
            ):
                with contextlib.suppress(KubeApiError):
                    self._api.delete(f"/api/v1/persistentvolumes/{pv['metadata']['name']}")
        for claim in self._api.items("/api/v1/persistentvolumeclaims"):
            metadata, spec = claim["metadata"], claim["spec"]
            claim_class = classes.get(spec.get("storageClassName") or "")
            if (
                spec.get("volumeName")
                or metadata["uid"] in claimed
                or metadata.get("deletionTimestamp")
                or claim_class is None
                or claim_class.get("provisioner") != HARNESS_PROVISIONER
            ):
                continue
            node = metadata.get("annotations", {}).get("volume.kubernetes.io/selected-node")
            if claim_class.get("volumeBindingMode") == "WaitForFirstConsumer" and not node:
                continue  # the scheduler has not chosen the node yet
            self._api.create("/api/v1/persistentvolumes", self._volume_for(claim, node))

    @staticmethod
    def _volume_for(claim: Json, node: str | None) -> Json:
        metadata, spec = claim["metadata"], claim["spec"]
        source: Json
        if node:
            source = {
                "local": {"path": f"/mnt/harness/{metadata['uid']}"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": [node],
                                    }
                                ]
                            }
                        ]
                    }
                },
            }
        else:
            source = {"hostPath": {"path": f"/mnt/harness/{metadata['uid']}"}}
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": f"pvc-{metadata['uid']}",
                "annotations": {"pv.kubernetes.io/provisioned-by": HARNESS_PROVISIONER},
            },
            "spec": {
                "capacity": {"storage": spec["resources"]["requests"]["storage"]},
                "accessModes": spec.get("accessModes", ["ReadWriteOnce"]),
                "storageClassName": spec.get("storageClassName"),
                "persistentVolumeReclaimPolicy": "Delete",
                "volumeMode": spec.get("volumeMode", "Filesystem"),
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": metadata["namespace"],
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                },
                **source,
            },
        }


class ControlPlane:
    """etcd, kube-apiserver, kube-controller-manager and kube-scheduler on 127.0.0.1.

    ``start()`` returns once every component is healthy, the nodes are registered and the CRDs
    are established; ``stop()`` (also on a failed start) ends every process and removes the
    temporary directory.
    """

    def __init__(self, bin_dir: Path, *, nodes: int = 3) -> None:
        self.bin_dir = bin_dir
        self.crd_dir = bin_dir.parent / "crds"
        self.node_count = nodes
        self.work = Path(tempfile.mkdtemp(prefix="volume-quota-k8s-"))
        self.components: list[Component] = []
        (
            self.etcd_client_port,
            self.etcd_peer_port,
            self.apiserver_port,
            self.controller_manager_port,
            self.scheduler_port,
        ) = free_loopback_ports(5)
        self.server = f"https://127.0.0.1:{self.apiserver_port}"
        self.kubeconfig = self.work / "admin.kubeconfig"
        self._api: KubeApi | None = None
        self._stand_in: NodeStandIn | None = None
        self.nodes: list[str] = []
        self.started_at = time.monotonic()

    # -- lifecycle

    def start(self) -> None:
        try:
            self._write_certificates()
            self._start_etcd()
            self._start_apiserver()
            self._start_controller_manager()
            self._start_scheduler()
            self.started_at = time.monotonic()
            self._stand_in = NodeStandIn(self.api)
            self._stand_in.start()
            self._wait_for_default_objects()
            for index in range(self.node_count):
                self.register_node(NodeSpec(f"node-{index}", ZONES[index % len(ZONES)]))
            # Like most clusters (kind's "standard"), a default StorageClass: the chart's claims
            # without a storageClassName get it.
            self.api.create(
                "/apis/storage.k8s.io/v1/storageclasses", storage_class("standard", default=True)
            )
            self.apply_crds()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self._stand_in is not None:
            self._stand_in.stop()
        for component in reversed(self.components):
            component.stop()
        self.components.clear()
        shutil.rmtree(self.work, ignore_errors=True)

    @property
    def api(self) -> KubeApi:
        if self._api is None:
            raise RuntimeError("the API server has not been started")
        return self._api

    @property
    def stand_in_errors(self) -> list[str]:
        return [] if self._stand_in is None else list(self._stand_in.errors)

    def logs(self) -> str:
        return "\n".join(f"--- {c.name} ({c.log})\n{c.tail()}" for c in self.components)

    # -- certificates and kubeconfigs

    def _write_certificates(self) -> None:
        pki = self.work / "pki"
        pki.mkdir()
        self.ca = CertificateAuthority.create("volume-quota-test-kubernetes-ca")
        self.ca_file = pki / "ca.crt"
        self.ca_file.write_bytes(self.ca.certificate_pem)
        self.ca_key_file = write_private(pki / "ca.key", self.ca.key_pem)
        service_ip = str(next(ipaddress.ip_network(SERVICE_CLUSTER_IP_RANGE).hosts()))
        cert, key = self.ca.issue(
            "kube-apiserver",
            dns_names=[
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ],
            ip_addresses=["127.0.0.1", service_ip],
            server=True,
        )
        self.apiserver_cert = pki / "apiserver.crt"
        self.apiserver_cert.write_bytes(cert)
        self.apiserver_key = write_private(pki / "apiserver.key", key)
        account_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.service_account_key = write_private(
            pki / "service-account.key",
            account_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
        )
        self.service_account_pub = pki / "service-account.pub"
        self.service_account_pub.write_bytes(
            account_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        identities = {
            "admin": ("volume-quota-test-admin", ["system:masters"]),
            "controller-manager": ("system:kube-controller-manager", []),
            "scheduler": ("system:kube-scheduler", []),
        }
        for name, (common_name, organizations) in identities.items():
            cert, key = self.ca.issue(common_name, organizations=organizations, client=True)
            (pki / f"{name}.crt").write_bytes(cert)
            write_private(pki / f"{name}.key", key)
            self._write_kubeconfig(
                self.work / f"{name}.kubeconfig", pki / f"{name}.crt", pki / f"{name}.key"
            )
        self._api = KubeApi(self.server, self.ca_file, pki / "admin.crt", pki / "admin.key")

    def _write_kubeconfig(self, path: Path, cert: Path, key: Path) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "test",
                    "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [
                {
                    "name": "user",
                    "user": {"client-certificate": str(cert), "client-key": str(key)},
                }
            ],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "user"}}],
            "current-context": "test",
        }
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)

    # -- components

    def _spawn(self, name: str, argv: Sequence[str]) -> Component:
        log = self.work / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                list(argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.work,
                start_new_session=True,
            )
        component = Component(name, process, log)
        self.components.append(component)
        return component

    def _wait_healthy(
        self, component: Component, url: str, context: ssl.SSLContext | None, timeout: float
    ) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if component.process.poll() is not None:
                raise RuntimeError(
                    f"{component.name} exited with {component.process.returncode}:\n"
                    f"{component.tail()}"
                )
            try:
                with urllib.request.urlopen(url, context=context, timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError) as error:
                last = str(error)
            time.sleep(0.5)
        raise RuntimeError(
            f"{component.name} not healthy at {url} within {timeout} s ({last}):\n"
            f"{component.tail()}"
        )

    def _start_etcd(self) -> None:
        client = f"http://127.0.0.1:{self.etcd_client_port}"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        etcd = self._spawn(
            "etcd",
            [
                str(self.bin_dir / "etcd"),
                "--name=test",
                f"--data-dir={self.work / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=test={peer}",
                "--initial-cluster-state=new",
                "--log-level=warn",
                "--logger=zap",
            ],
        )
        self._wait_healthy(etcd, f"{client}/health", None, 60)

    def _start_apiserver(self) -> None:
        apiserver = self._spawn(
            "kube-apiserver",
            [
                str(self.bin_dir / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_client_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.apiserver_port}",
                # The "kubernetes" Service's endpoints would be 127.0.0.1, which the API refuses
                # for an endpoint; no pod runs here to use them anyway.
                "--endpoint-reconciler-type=none",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                f"--tls-cert-file={self.apiserver_cert}",
                f"--tls-private-key-file={self.apiserver_key}",
                f"--client-ca-file={self.ca_file}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={self.service_account_pub}",
                f"--service-account-signing-key-file={self.service_account_key}",
                "--authorization-mode=Node,RBAC",
                f"--enable-admission-plugins={','.join(ADMISSION_PLUGINS)}",
                "--allow-privileged=true",  # as kubeadm sets it: Pod Security decides
                "--profiling=false",
                f"--cert-dir={self.work / 'apiserver-certs'}",
            ],
        )
        self._wait_healthy(apiserver, f"{self.server}/readyz", self._admin_context(), 180)

    def _admin_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(str(self.work / "pki/admin.crt"), str(self.work / "pki/admin.key"))
        return context

    @staticmethod
    def _insecure_context() -> ssl.SSLContext:
        # The controller manager's and scheduler's serving certificates are self-signed in memory.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    def _start_controller_manager(self) -> None:
        kubeconfig = self.work / "controller-manager.kubeconfig"
        component = self._spawn(
            "kube-controller-manager",
            [
                str(self.bin_dir / "kube-controller-manager"),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.controller_manager_port}",
                "--controllers=*",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={self.service_account_key}",
                f"--root-ca-file={self.ca_file}",
                f"--cluster-signing-cert-file={self.ca_file}",
                f"--cluster-signing-key-file={self.ca_key_file}",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                "--leader-elect=false",
                "--profiling=false",
                f"--cert-dir={self.work / 'controller-manager-certs'}",
            ],
        )
        self._wait_healthy(
            component,
            f"https://127.0.0.1:{self.controller_manager_port}/healthz",
            self._insecure_context(),
            120,
        )

    def _start_scheduler(self) -> None:
        kubeconfig = self.work / "scheduler.kubeconfig"
        component = self._spawn(
            "kube-scheduler",
            [
                str(self.bin_dir / "kube-scheduler"),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.scheduler_port}",
                "--leader-elect=false",
                "--profiling=false",
                f"--cert-dir={self.work / 'scheduler-certs'}",
            ],
        )
        self._wait_healthy(
            component,
            f"https://127.0.0.1:{self.scheduler_port}/healthz",
            self._insecure_context(),
            120,
        )

    def _wait_for_default_objects(self) -> None:
        """The namespaces the API server creates itself, and the default ServiceAccount."""
        self.wait_for(
            lambda: (
                self.api.exists("/api/v1/namespaces/kube-node-lease")
                and self.api.exists("/api/v1/namespaces/default/serviceaccounts/default")
            ),
            "kube-node-lease and the default ServiceAccount",
            timeout=120,
        )

    # -- objects

    def wait_for(self, condition: Any, what: str, *, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.5)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{self.logs()}")

    def register_node(self, spec: NodeSpec) -> None:
        """A Node object as a kubelet would register it, Ready, with its Lease."""
        labels = {
            "kubernetes.io/hostname": spec.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/zone": spec.zone,
            **spec.labels,
        }
        resources = {"cpu": spec.cpu, "memory": spec.memory, "pods": spec.pods}
        self.api.create(
            "/api/v1/nodes",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": spec.name, "labels": labels},
                "spec": {"taints": spec.taints} if spec.taints else {},
            },
        )
        now = now_rfc3339()
        conditions = [
            {
                "type": kind,
                "status": "False",
                "reason": f"KubeletHas{reason}",
                "message": "registered by the test harness",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
            for kind, reason in (
                ("MemoryPressure", "SufficientMemory"),
                ("DiskPressure", "NoDiskPressure"),
                ("PIDPressure", "SufficientPID"),
            )
        ]
        conditions.append(
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "registered by the test harness (no kubelet runs)",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        )
        self.api.merge_patch(
            f"/api/v1/nodes/{spec.name}/status",
            {
                "status": {
                    "capacity": resources,
                    "allocatable": resources,
                    "conditions": conditions,
                    "addresses": [
                        {"type": "InternalIP", "address": "127.0.0.1"},
                        {"type": "Hostname", "address": spec.name},
                    ],
                    "nodeInfo": {
                        "architecture": "amd64",
                        "operatingSystem": "linux",
                        "kubeletVersion": self.server_version(),
                        "containerRuntimeVersion": "none://",
                        "kernelVersion": "",
                        "osImage": "",
                        "bootID": "",
                        "machineID": "",
                        "systemUUID": "",
                        "kubeProxyVersion": "",
                    },
                }
            },
        )
        self.api.create(
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": spec.name, "namespace": "kube-node-lease"},
                "spec": {
                    "holderIdentity": spec.name,
                    "leaseDurationSeconds": 40,
                    "renewTime": now_rfc3339(micro=True),
                },
            },
        )
        if self._stand_in is not None:
            self._stand_in.add_node(spec.name)
        self.nodes.append(spec.name)

    def remove_node(self, name: str) -> None:
        if self._stand_in is not None:
            self._stand_in.remove_node(name)
        with contextlib.suppress(KubeApiError):
            self.api.delete(f"/api/v1/nodes/{name}")
        with contextlib.suppress(KubeApiError):
            self.api.delete(
                f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
            )
        if name in self.nodes:
            self.nodes.remove(name)

    def server_version(self) -> str:
        return str(self.api.get("/version")["gitVersion"])

    def create_namespace(self, name: str, *, restricted: bool = True) -> None:
        labels = dict(RESTRICTED_LABELS) if restricted else {}
        self.api.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}},
        )
        self.wait_for(
            lambda: self.api.exists(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
            f"the default ServiceAccount in {name}",
        )

    def delete_namespace(self, name: str, *, timeout: float = 120) -> None:
        with contextlib.suppress(KubeApiError):
            self.api.delete(f"/api/v1/namespaces/{name}")
        self.wait_for(
            lambda: not self.api.exists(f"/api/v1/namespaces/{name}"),
            f"namespace {name} to be deleted",
            timeout=timeout,
        )

    def crd_files(self) -> list[Path]:
        return sorted(self.crd_dir.glob("*/*.yaml"))

    def apply_crds(self) -> None:
        files = self.crd_files()
        if not files:
            raise RuntimeError(f"no CRDs in {self.crd_dir}")
        names: list[str] = []
        for path in files:
            for document in yaml.safe_load_all(path.read_text()):
                if document and document.get("kind") == "CustomResourceDefinition":
                    names.append(document["metadata"]["name"])
        self.kubectl("apply", "--server-side", "--validate=strict", *(f"-f={p}" for p in files))
        for name in names:
            self.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{name}")

    # -- command-line tools

    def tool_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["PATH"] = f"{self.bin_dir}:{env.get('PATH', '')}"
        env["HELM_CACHE_HOME"] = str(self.work / "helm-cache")
        env["HELM_CONFIG_HOME"] = str(self.work / "helm-config")
        env["HELM_DATA_HOME"] = str(self.work / "helm-data")
        return env

    def run(
        self, tool: str, *args: str, check: bool = True, input_text: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(self.bin_dir / tool), *args],
            check=False,
            capture_output=True,
            text=True,
            input=input_text,
            env=self.tool_env(),
            timeout=300,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"{tool} {' '.join(args)} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result

    def kubectl(self, *args: str, check: bool = True, input_text: str | None = None) -> str:
        return self.run("kubectl", *args, check=check, input_text=input_text).stdout

    def helm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("helm", *args, check=check)


@contextlib.contextmanager
def running_control_plane(bin_dir: Path) -> Iterator[ControlPlane]:
    plane = ControlPlane(bin_dir)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()
