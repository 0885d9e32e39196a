"""Run a Pod that the real API server made (tests/kubernetes/control_plane.py) with
``podman kube play``: the Pod as the StatefulSet controller created it and the scheduler bound
it, with the ConfigMaps and Secrets it references, in one YAML file.

podman 4.3 (Debian 12) plays Pods, ConfigMaps (in the same file), PersistentVolumeClaims (a
claim becomes a named volume), emptyDir, init containers and downward-API environment
variables (``metadata.name``, ``metadata.labels['apps.kubernetes.io/pod-index']``) as they are.
What it cannot express is rewritten here, and every rewrite is listed in ``PlayFile.rewrites``:

- a pod annotation longer than 63 characters (the chart's ``checksum/config``) is dropped:
  podman 4.3 refuses it ("value length exceeds Kubernetetes max 63");
- init containers are kept after they ran (annotation ``io.podman.annotations.init.container.type:
  always``): podman 4.3 removes a "once" init container when it exits, and ``kube play`` fails
  ("failed to remove once init container ... as it is running") when that races with the exit;
- with init containers, restartPolicy Always becomes OnFailure: podman 4.3 gives the init
  containers the pod's restart policy, and would start them again each time they exit;
- containers' ``ports`` are dropped (the probes get the numbers their names stood for): podman
  4.3 makes each containerPort a port mapping, which it refuses with the host network, where the
  ports are the host's anyway;
- the probes are taken out and run by ``kubelet_prober.py`` with the kubelet's rules (podman 4.3
  has no readiness or startup probes);
- a Secret volume becomes a ConfigMap volume holding the Secret's decoded data: podman 4.3 mounts
  a Secret's ``data`` still base64-encoded (and crashes on a Secret volume without
  ``optional``, podman issue 16636);
- an inline CSI volume of cert-manager's csi-driver (``csi.cert-manager.io``) becomes a
  ConfigMap volume holding what csi-driver would write for THIS pod: a key and a certificate
  with the subject (common-name) and DNS names (``${POD_NAME}``, ``${POD_NAMESPACE}`` expanded)
  the volumeAttributes ask for, issued by the CA of the volume's Issuer (its ``spec.ca``
  Secret, which tests/kubernetes' ``issue_certificate_secrets`` made), and that CA, under the
  attributes' file names: there is no csi-driver (nor kubelet CSI plugin) here;
- a PersistentVolumeClaim's named volume is created before ``kube play``, owned by the pod's
  runAsUser and fsGroup: podman 4.3 ignores fsGroup, and would make it root's;
- an emptyDir one container writes and another reads (the decision) becomes a named volume
  owned by its writer: podman 4.3 gives an emptyDir to the first container's user and ignores
  fsGroup, so the sidecar could not write the decision the broker reads;
- an /etc/hosts file (a hostPath volume mounted in every container) names the pod's DNS names
  127.0.0.1: there is no cluster DNS, podman 4.3 ignores ``hostAliases`` with the host network,
  and there the broker's listeners are on the host's loopback.

podman flags: ``--runtime runc`` and the host network, as deploy/container/build.sh explains;
``kube play`` has no ``--ulimit``, so the same ulimits come from a containers.conf of our own
(``CONTAINERS_CONF``, for these commands only).
"""

from __future__ import annotations

import base64
import copy
import os
import string
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.kubernetes.control_plane import REPO_ROOT, CertificateAuthority, ControlPlane, Json

HERE = Path(__file__).resolve().parent
BUILD_KAFKA_IMAGE = HERE / "build-kafka-image.sh"
BUILD_SIDECAR_IMAGE = REPO_ROOT / "deploy" / "container" / "build.sh"
PODMAN = ("podman", "--runtime", "runc")
CONTAINERS_CONF = """[containers]
# kube play has no --ulimit: the limits every podman run here needs (deploy/container/build.sh).
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
"""
COMMAND_TIMEOUT_S = 300.0
ANNOTATION_VALUE_LIMIT = 63
HOSTS_VOLUME = "etc-hosts"
OWNER_OVERRIDES: dict[str, int] = {}
"""Claims made from shared emptyDirs: the uid that owns each (its writer)."""
INIT_CONTAINER_TYPE = "io.podman.annotations.init.container.type"


def build_image(script: Path) -> str:
    """Run an image build script; the image it prints on its last line."""
    result = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        cwd=REPO_ROOT,
    )
    if result.returncode != 0:
        raise AssertionError(f"{script} exited {result.returncode}:\n{result.stderr[-4000:]}")
    return result.stdout.split()[-1]


def kafka_image() -> str:
    return build_image(BUILD_KAFKA_IMAGE)


def sidecar_image() -> str:
    """deploy/container/build.sh prints the image id; the chart takes the tag it builds."""
    build_image(BUILD_SIDECAR_IMAGE)
    return "localhost/volume-quota:0.1.0"


# --- from the API server's objects to a kube play file --------------------------------------------


def referenced_names(pod_spec: Json) -> tuple[set[str], set[str]]:
    """The ConfigMaps and Secrets the pod's volumes and environment reference."""
    config_maps: set[str] = set()
    secrets: set[str] = set()
    for volume in pod_spec.get("volumes", []):
        if "configMap" in volume:
            config_maps.add(volume["configMap"]["name"])
        if "secret" in volume:
            secrets.add(volume["secret"]["secretName"])
        for source in volume.get("projected", {}).get("sources", []):
            if "configMap" in source:
                config_maps.add(source["configMap"]["name"])
            if "secret" in source:
                secrets.add(source["secret"]["name"])
    for container in pod_spec.get("initContainers", []) + pod_spec.get("containers", []):
        for env in container.get("env", []):
            reference = env.get("valueFrom", {})
            if "configMapKeyRef" in reference:
                config_maps.add(reference["configMapKeyRef"]["name"])
            if "secretKeyRef" in reference:
                secrets.add(reference["secretKeyRef"]["name"])
        for source in container.get("envFrom", []):
            if "configMapRef" in source:
                config_maps.add(source["configMapRef"]["name"])
            if "secretRef" in source:
                secrets.add(source["secretRef"]["name"])
    return config_maps, secrets


def _plain_object(obj: Json) -> Json:
    """The object as a user would write it: no status, no server-set metadata."""
    metadata = obj["metadata"]
    kept = {k: metadata[k] for k in ("name", "namespace", "labels", "annotations") if k in metadata}
    plain = {k: copy.deepcopy(v) for k, v in obj.items() if k not in ("metadata", "status")}
    plain["metadata"] = copy.deepcopy(kept)
    return plain


def _without_port_mappings(container: Json) -> list[str]:
    """Drop the container's ports (podman 4.3 maps every containerPort to the host, which the host
    network refuses), and give its probes the port numbers their names stood for."""
    ports = container.pop("ports", [])
    if not ports:
        return []
    numbers = {p["name"]: p["containerPort"] for p in ports if "name" in p}
    for probe_name in ("startupProbe", "readinessProbe", "livenessProbe"):
        for action in ("tcpSocket", "httpGet"):
            target = container.get(probe_name, {}).get(action)
            if target is not None and target.get("port") in numbers:
                target["port"] = numbers[target["port"]]
    listed = ", ".join(f"{p.get('name', '?')}={p['containerPort']}" for p in ports)
    return [
        f"container {container['name']}: ports ({listed}) dropped, probes given the numbers "
        "(podman 4.3 turns containerPorts into port mappings, refused with the host network)"
    ]


def _shared_empty_dirs_as_claims(pod: Json) -> list[str]:
    """An emptyDir that one container writes and another reads becomes a claim (a named volume
    created beforehand, see PlayFile.volume_owners) owned by the writer's runAsUser."""
    spec = pod["spec"]
    containers = spec.get("initContainers", []) + spec.get("containers", [])
    rewrites = []
    for volume in spec.get("volumes", []):
        if "emptyDir" not in volume:
            continue
        mounts = [
            (c, m)
            for c in containers
            for m in c.get("volumeMounts", [])
            if m["name"] == volume["name"]
        ]
        writers = [c for c, m in mounts if not m.get("readOnly")]
        if len(mounts) < 2 or len(writers) != 1:
            continue
        uid = int(writers[0].get("securityContext", {}).get("runAsUser", 0))
        claim = f"{pod['metadata']['name']}-{volume['name']}"
        del volume["emptyDir"]
        volume["persistentVolumeClaim"] = {"claimName": claim}
        OWNER_OVERRIDES[claim] = uid
        rewrites.append(
            f"volume {volume['name']}: emptyDir -> named volume {claim} owned by its writer "
            f"{writers[0]['name']} (uid {uid}; podman 4.3 ignores fsGroup and gives an emptyDir "
            "to the first container's user)"
        )
    return rewrites


def secret_config_map_name(secret: str) -> str:
    return f"secret-{secret}"


CSI_DRIVER = "csi.cert-manager.io"
CSI_ATTRIBUTE = "csi.cert-manager.io/"


def csi_config_map_name(pod: str, volume: str) -> str:
    return f"csi-{pod}-{volume}"


def csi_driver_files(plane: ControlPlane, namespace: str, pod: Json, csi: Json) -> dict[str, str]:
    """What cert-manager's csi-driver writes into ``pod``'s volume ``csi``: a new key, its
    certificate as the volumeAttributes ask (common-name, dns-names with the pod's name and
    namespace; client auth), signed by the CA of the named Issuer (a CA Issuer's Secret), and
    that CA; under the attributes' file names (csi-driver's defaults otherwise)."""
    attributes = {
        key.removeprefix(CSI_ATTRIBUTE): value
        for key, value in csi.get("volumeAttributes", {}).items()
    }
    if attributes.get("issuer-kind", "Issuer") != "Issuer":
        raise AssertionError(f"only a namespaced CA Issuer is stood in for: {attributes}")
    issuer = plane.api.get(
        f"/apis/cert-manager.io/v1/namespaces/{namespace}/issuers/{attributes['issuer-name']}"
    )
    ca_secret = plane.api.get(
        f"/api/v1/namespaces/{namespace}/secrets/{issuer['spec']['ca']['secretName']}"
    )
    ca_data = {k: base64.b64decode(v) for k, v in ca_secret["data"].items()}
    key = serialization.load_pem_private_key(ca_data["tls.key"], None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise AssertionError(f"the test CA's key is {type(key).__name__}, not ECDSA")
    authority = CertificateAuthority(key, x509.load_pem_x509_certificate(ca_data["tls.crt"]))
    variables = {"POD_NAME": pod["metadata"]["name"], "POD_NAMESPACE": namespace}
    dns_names = [
        string.Template(name.strip()).substitute(variables)
        for name in attributes.get("dns-names", "").split(",")
        if name.strip()
    ]
    usages = [u.strip() for u in attributes.get("key-usages", "").split(",")]
    certificate, private_key = authority.issue(
        attributes["common-name"],
        dns_names=dns_names,
        server="server auth" in usages,
        client="client auth" in usages,
    )
    return {
        attributes.get("ca-file", "ca.crt"): ca_data["tls.crt"].decode(),
        attributes.get("certificate-file", "tls.crt"): certificate.decode(),
        attributes.get("privatekey-file", "tls.key"): private_key.decode(),
    }


def _csi_volumes_as_config_maps(
    pod: Json, issued: dict[str, dict[str, str]]
) -> tuple[list[Json], list[str]]:
    """Each csi-driver volume -> a ConfigMap volume with the files issued for it."""
    documents: list[Json] = []
    rewrites: list[str] = []
    name = pod["metadata"]["name"]
    for volume in pod["spec"].get("volumes", []):
        if volume.get("csi", {}).get("driver") != CSI_DRIVER:
            continue
        files = issued[volume["name"]]
        config_map = csi_config_map_name(name, volume["name"])
        documents.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": config_map, "namespace": pod["metadata"]["namespace"]},
                "data": files,
            }
        )
        attributes = volume.pop("csi")["volumeAttributes"]
        volume["configMap"] = {"name": config_map}
        rewrites.append(
            f"volume {volume['name']}: csi-driver ({CSI_DRIVER}) -> ConfigMap {config_map} with "
            f"{', '.join(sorted(files))} issued for pod {name} (CN "
            f"{attributes.get(CSI_ATTRIBUTE + 'common-name')}, DNS "
            f"{attributes.get(CSI_ATTRIBUTE + 'dns-names')}) by the Issuer's CA (no csi-driver "
            "here)"
        )
    return documents, rewrites


@dataclass
class PlayFile:
    """The documents for ``podman kube play`` and what was changed to make podman run them."""

    documents: list[Json]
    rewrites: list[str] = field(default_factory=list)
    host_names: list[str] = field(default_factory=list)
    hosts_file: Path | None = None
    probes: dict[str, dict[str, Json]] = field(default_factory=dict)
    """container -> probe kind -> probe, ports as numbers: taken out of the pod, run by
    tests/pods/kubelet_prober.py."""

    @property
    def pod(self) -> Json:
        return next(d for d in self.documents if d["kind"] == "Pod")

    @property
    def config_map_names(self) -> list[str]:
        return [d["metadata"]["name"] for d in self.documents if d["kind"] == "ConfigMap"]

    @property
    def claim_names(self) -> list[str]:
        volumes = self.pod["spec"].get("volumes", [])
        return [
            v["persistentVolumeClaim"]["claimName"] for v in volumes if "persistentVolumeClaim" in v
        ]

    @property
    def empty_dir_names(self) -> list[str]:
        """podman 4.3 makes each emptyDir a named volume of its name; kube down keeps it."""
        return [v["name"] for v in self.pod["spec"].get("volumes", []) if "emptyDir" in v]

    @property
    def owner(self) -> tuple[int, int]:
        """Who owns the claims' volumes: the pod's runAsUser and fsGroup (as a kubelet applies
        fsGroup to a volume; podman 4.3 ignores fsGroup)."""
        context = self.pod["spec"].get("securityContext", {})
        return int(context.get("runAsUser", 0)), int(context.get("fsGroup", 0))

    def dump(self) -> str:
        return yaml.safe_dump_all(self.documents, sort_keys=False)


def play_file(
    pod: Json,
    config_maps: Iterable[Json],
    secrets: Iterable[Json],
    hosts: Iterable[str],
    hosts_file: Path,
    *,
    csi_files: dict[str, dict[str, str]] | None = None,
) -> PlayFile:
    """The kube play file for ``pod``, its ConfigMaps and Secrets; ``hosts`` resolve to
    127.0.0.1 in the pod (the names its processes connect to or advertise); ``csi_files``: by
    volume name, the files csi-driver would write into each of its volumes."""
    plain_pod = _plain_object(pod)
    spec = plain_pod["spec"]
    rewrites: list[str] = []
    annotations = plain_pod["metadata"].get("annotations", {})
    for key, value in sorted(annotations.items()):
        if len(value) > ANNOTATION_VALUE_LIMIT:
            del annotations[key]
            rewrites.append(
                f"annotation {key}: dropped (podman 4.3 refuses values over "
                f"{ANNOTATION_VALUE_LIMIT} characters, Kubernetes allows 256 KiB in all)"
            )
    if spec.get("initContainers"):
        annotations[INIT_CONTAINER_TYPE] = "always"
        plain_pod["metadata"]["annotations"] = annotations
        rewrites.append(
            f"annotation {INIT_CONTAINER_TYPE}: always (podman 4.3 removes a 'once' init "
            "container after it ran, and kube play fails when that races with its exit)"
        )
        if spec.get("restartPolicy", "Always") == "Always":
            spec["restartPolicy"] = "OnFailure"
            rewrites.append(
                "restartPolicy: Always -> OnFailure (podman 4.3 applies it to the init containers "
                "too, and would run them again each time they finish)"
            )
    probes: dict[str, dict[str, Json]] = {}
    for container in spec.get("initContainers", []) + spec.get("containers", []):
        rewrites += _without_port_mappings(container)
        kinds = [p for p in ("startupProbe", "readinessProbe", "livenessProbe") if p in container]
        if kinds:
            probes[container["name"]] = {kind: container.pop(kind) for kind in kinds}
            rewrites.append(
                f"container {container['name']} probes: {', '.join(kinds)} run by "
                "tests/pods/kubelet_prober.py instead (podman 4.3 has no readiness or startup "
                "probes)"
            )
    documents: list[Json] = [_plain_object(c) for c in config_maps]
    by_name = {s["metadata"]["name"]: s for s in secrets}
    for volume in spec.get("volumes", []):
        if "secret" not in volume:
            continue
        source = volume.pop("secret")
        secret = by_name[source["secretName"]]
        name = secret_config_map_name(source["secretName"])
        data = {k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()}
        documents.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": secret["metadata"]["namespace"]},
                "data": data,
            }
        )
        volume["configMap"] = {
            k: v for k, v in {"name": name, "items": source.get("items")}.items() if v
        }
        rewrites.append(
            f"volume {volume['name']}: Secret {source['secretName']} -> ConfigMap {name} with its "
            "decoded data (podman 4.3 mounts Secret data still base64-encoded)"
        )
    csi_documents, csi_rewrites = _csi_volumes_as_config_maps(plain_pod, csi_files or {})
    documents += csi_documents
    rewrites += csi_rewrites
    rewrites += _shared_empty_dirs_as_claims(plain_pod)
    for volume in spec.get("volumes", []):
        if "persistentVolumeClaim" in volume:
            rewrites.append(
                f"volume {volume['name']}: claim {volume['persistentVolumeClaim']['claimName']} "
                "-> a named volume created beforehand, owned by runAsUser:fsGroup (podman 4.3 "
                "ignores fsGroup)"
            )
    names = sorted(set(hosts))
    if names:
        spec["volumes"] = [
            *spec.get("volumes", []),
            {"name": HOSTS_VOLUME, "hostPath": {"path": str(hosts_file), "type": "File"}},
        ]
        for container in spec.get("initContainers", []) + spec.get("containers", []):
            mount = {"name": HOSTS_VOLUME, "mountPath": "/etc/hosts", "readOnly": True}
            container["volumeMounts"] = [*container.get("volumeMounts", []), mount]
        rewrites.append(
            f"volume {HOSTS_VOLUME}: /etc/hosts naming {', '.join(names)} 127.0.0.1, mounted in "
            "every container (no cluster DNS; podman 4.3 ignores hostAliases with the host "
            "network)"
        )
    documents.append(plain_pod)
    return PlayFile(documents, rewrites, names, hosts_file, probes)


def fetch_play_file(
    plane: ControlPlane, namespace: str, pod_name: str, hosts: Iterable[str], hosts_file: Path
) -> PlayFile:
    """The pod as the API server has it, with every ConfigMap and Secret it references."""
    pod = plane.api.get(f"/api/v1/namespaces/{namespace}/pods/{pod_name}")
    config_map_names, secret_names = referenced_names(pod["spec"])
    config_maps = [
        plane.api.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        for name in sorted(config_map_names)
    ]
    secrets = [
        plane.api.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
        for name in sorted(secret_names)
    ]
    csi_files = {
        volume["name"]: csi_driver_files(plane, namespace, pod, volume["csi"])
        for volume in pod["spec"].get("volumes", [])
        if volume.get("csi", {}).get("driver") == CSI_DRIVER
    }
    return play_file(pod, config_maps, secrets, hosts, hosts_file, csi_files=csi_files)


# --- running it -----------------------------------------------------------------------------------


class PlayedPod:
    """A pod played by podman from ``PlayFile``; :func:`remove_pods` takes it and its volumes
    away."""

    def __init__(self, play: PlayFile, work: Path) -> None:
        self.play = play
        self.name: str = play.pod["metadata"]["name"]
        self.work = work
        self.file = work / f"{self.name}.yaml"
        self.conf = work / "containers.conf"
        self.started = 0.0
        self.play_output = ""

    def _env(self) -> dict[str, str]:
        return {**os.environ, "CONTAINERS_CONF": str(self.conf)}

    def podman(
        self, *args: str, check: bool = True, timeout: float = COMMAND_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*PODMAN, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=self._env(),
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"podman {' '.join(args)} exited {result.returncode}:\n"
                f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
            )
        return result

    def start(self) -> str:
        self.file.write_text(self.play.dump())
        self.conf.write_text(CONTAINERS_CONF)
        if self.play.hosts_file is not None:
            names = " ".join(["localhost", *self.play.host_names])
            self.play.hosts_file.write_text(f"127.0.0.1 {names}\n")
        for claim in self.play.claim_names:
            uid = OWNER_OVERRIDES.get(claim, self.play.owner[0])
            self.podman("volume", "create", "--opt", f"o=uid={uid},gid={self.play.owner[1]}", claim)
        self.started = time.monotonic()
        played = self.podman("kube", "play", "--network", "host", str(self.file))
        self.play_output = played.stdout + played.stderr
        return played.stdout

    def container(self, name: str) -> str:
        return f"{self.name}-{name}"

    def logs(self, container: str) -> str:
        result = self.podman("logs", self.container(container), check=False)
        return result.stdout + result.stderr

    def state(self, container: str) -> str:
        result = self.podman(
            "inspect",
            "--format",
            "{{.State.Status}} {{.State.ExitCode}}",
            self.container(container),
            check=False,
        )
        return result.stdout.strip() or result.stderr.strip()

    def exit_code(self, container: str) -> int | None:
        """The container's exit code once it ran to its end (podman says "exited" or, for an init
        container, "stopped"); None while it runs or before it started."""
        status, _, code = self.state(container).partition(" ")
        return int(code) if status in ("exited", "stopped") else None

    def exec(self, container: str, *command: str) -> str:
        return self.podman("exec", self.container(container), *command).stdout

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float) -> float:
        """Seconds since the pod was played when ``condition`` held; fails with the logs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return time.monotonic() - self.started
            time.sleep(1)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{self.describe()}")

    def describe(self) -> str:
        listing = self.podman("ps", "--all", "--pod", "--filter", f"pod={self.name}", check=False)
        parts = [f"kube play said:\n{self.play_output}", listing.stdout]
        spec = self.play.pod["spec"]
        for container in spec.get("initContainers", []) + spec.get("containers", []):
            parts.append(f"--- {container['name']} ({self.state(container['name'])}):")
            parts.append(self.logs(container["name"])[-6000:])
        return "\n".join(parts)

    def stop(self) -> None:
        """kube down (when it was played), and the pod by name (left by a run that was killed)."""
        if self.file.exists():
            self.podman("kube", "down", str(self.file), check=False)
        self.podman("pod", "rm", "--force", "--ignore", self.name, check=False)

    def volumes(self) -> list[str]:
        """The named volumes ``kube play`` makes for it (ConfigMaps', emptyDirs') and that we make
        (claims')."""
        return [*self.play.config_map_names, *self.play.claim_names, *self.play.empty_dir_names]


def remove_pods(pods: Iterable[PlayedPod]) -> None:
    """Every pod first, then their volumes: pods share volumes (a Secret's), and removing a volume
    by force removes every container still using it, another pod's too. Also takes away what a
    killed run left under the same names ("volume already exists" otherwise)."""
    pods = list(pods)
    for pod in pods:
        pod.stop()
    for volume in sorted({volume for pod in pods for volume in pod.volumes()}):
        pods[0].podman("volume", "rm", "--force", volume, check=False)
