"""A one-node release of deploy/helm/volume-quota whose pods really run: `helm install` on the real
control plane (tests/kubernetes), then the broker Pod and the ACL Job's Pod that the controllers
created are taken from the API server and run with `podman kube play` (pod_play.py lists what is
rewritten for podman 4.3), on the sidecar image of deploy/container/build.sh and a Kafka image
from Maven Central's jars (build-kafka-image.sh).

Checked: the init container copied the callback jar, the broker starts with the callback loaded,
the ACL Job grants the sidecar its ACLs, and the sidecar publishes its snapshot and writes a valid
decision (OPEN: one broker, with a fresh snapshot and room on its volumes) while the deciders
require each snapshot to be signed by its own broker's certificate (csi-driver's, stood in for).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from local_cluster.ports import free_loopback_ports
from schemas.decision import QuotaDecision, QuotaState
from tests.kubernetes.cluster_checks import (
    CHART,
    RELEASE,
    apply_objects,
    documented_prerequisites,
    issue_certificate_secrets,
    wait_for_bound_pods,
)
from tests.kubernetes.control_plane import ControlPlane, Json
from tests.pods.kubelet_prober import KubeletProber
from tests.pods.pod_play import (
    PlayedPod,
    fetch_play_file,
    kafka_image,
    remove_pods,
    sidecar_image,
)
from tests.support import HOST_DISK_LIMITS

pytestmark = pytest.mark.kubernetes

NAMESPACE = "kafka"
"""docs/kubernetes.md's namespace: its Certificates' DNS names are the broker's, as written."""
FULLNAME = f"{RELEASE}-volume-quota"
BROKER_POD = f"{FULLNAME}-0"
BROKER_START_TIMEOUT_S = 240.0
DECISION_TIMEOUT_S = 180.0


@dataclass
class Release:
    broker: PlayedPod
    acl_job: PlayedPod
    ports: dict[str, int]
    hosts: list[str]
    work: Path
    played: list[PlayedPod]
    prober: KubeletProber


def install_settings(kafka: str, sidecar: str, ports: dict[str, int]) -> list[str]:
    kafka_repository, kafka_tag = kafka.rsplit(":", 1)
    sidecar_repository, sidecar_tag = sidecar.rsplit(":", 1)
    settings = {
        "replicas": "1",
        "kafka.image.repository": kafka_repository,
        "kafka.image.tag": kafka_tag,
        "sidecar.image.repository": sidecar_repository,
        "sidecar.image.tag": sidecar_tag,
        "kafka.heapOpts": "-Xms256m -Xmx512m",
        "kafka.ports.client": str(ports["client"]),
        "kafka.ports.internal": str(ports["internal"]),
        "kafka.ports.controller": str(ports["controller"]),
        "sidecar.metricsPort": str(ports["metrics"]),
        # The broker's volume is the machine's disk, which may be under the default 15 % free.
        "sidecar.softLimit": HOST_DISK_LIMITS["soft_limit"],
        "sidecar.hardLimit": HOST_DISK_LIMITS["hard_limit"],
    }
    arguments: list[str] = []
    for key, value in settings.items():
        arguments += ["--set-string" if key.endswith(".tag") else "--set", f"{key}={value}"]
    return arguments


def container_env(pod: Json, container: str, name: str) -> str:
    (found,) = [c for c in pod["spec"]["containers"] if c["name"] == container]
    (value,) = [e["value"] for e in found["env"] if e["name"] == name]
    return str(value)


def pod_host_names(plane: ControlPlane) -> list[str]:
    """The names the pods connect to or advertise: the broker's own and its Service's."""
    pod = plane.api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{BROKER_POD}")
    names = [f"{BROKER_POD}.{container_env(pod, 'kafka', 'POD_DOMAIN')}"]
    bootstrap = container_env(pod, "volume-quota", "VOLUME_QUOTA_BOOTSTRAP_SERVERS")
    names += [server.rsplit(":", 1)[0] for server in bootstrap.split(",")]
    names += [f"{FULLNAME}.{NAMESPACE}.svc", f"{FULLNAME}.{NAMESPACE}.svc.cluster.local"]
    return names


@pytest.fixture(scope="module")
def release(control_plane: ControlPlane) -> Iterator[Release]:
    images = (kafka_image(), sidecar_image())
    ports = dict(
        zip(("client", "internal", "controller", "metrics"), free_loopback_ports(4), strict=True)
    )
    control_plane.create_namespace(NAMESPACE)
    work = Path(tempfile.mkdtemp(prefix="volume-quota-pods-"))
    played: list[PlayedPod] = []
    try:
        prerequisites = documented_prerequisites()
        apply_objects(control_plane, prerequisites)
        issue_certificate_secrets(control_plane, NAMESPACE, prerequisites)
        control_plane.helm(
            "install",
            RELEASE,
            str(CHART),
            "--namespace",
            NAMESPACE,
            *install_settings(*images, ports),
        )
        wait_for_bound_pods(control_plane, NAMESPACE, "app.kubernetes.io/component=kafka", 1)
        # The ACL Job's name carries the release revision; its pod has the job-name label.
        (acl_pod,) = wait_for_bound_pods(
            control_plane, NAMESPACE, "batch.kubernetes.io/job-name", 1
        ).pods
        hosts = pod_host_names(control_plane)
        broker = PlayedPod(
            fetch_play_file(control_plane, NAMESPACE, BROKER_POD, hosts, work / "hosts"), work
        )
        acl = PlayedPod(
            fetch_play_file(
                control_plane, NAMESPACE, acl_pod["metadata"]["name"], hosts, work / "hosts"
            ),
            work,
        )
        played += [broker, acl]
        remove_pods(played)
        prober = KubeletProber(broker.play.probes)
        broker.start()
        prober.start()
        acl.start()
        yield Release(broker, acl, ports, hosts, work, played, prober)
        prober.stop()
    finally:
        if played:
            remove_pods(played)
        control_plane.helm("uninstall", RELEASE, "--namespace", NAMESPACE, check=False)
        control_plane.delete_namespace(NAMESPACE)


def test_play_file_changes_only_what_podman_cannot_run(release: Release) -> None:
    rewritten = {r.split(":")[0] for r in release.broker.play.rewrites}
    assert rewritten == {
        "annotation checksum/config",
        "annotation io.podman.annotations.init.container.type",
        "restartPolicy",
        "container kafka",
        "container volume-quota",
        "container kafka probes",
        "container volume-quota probes",
        "volume broker-tls",
        "volume sidecar-tls",
        "volume data-0",
        "volume metadata",
        "volume decision",
        "volume broker-plugin",
        "volume etc-hosts",
    }, yaml.safe_dump(release.broker.play.rewrites)


def test_the_sidecar_signs_with_a_certificate_issued_for_its_own_pod(release: Release) -> None:
    """csi-driver's stand-in issued broker 0's sidecar its certificate (its pod's DNS name, the
    subject the ACLs name), and the deciders require broker 0's snapshots to be signed by it."""
    play = release.broker.play
    (rewrite,) = [r for r in play.rewrites if r.startswith("volume sidecar-tls:")]
    assert "csi-driver" in rewrite, rewrite
    (volume,) = [v for v in play.pod["spec"]["volumes"] if v["name"] == "sidecar-tls"]
    (config_map,) = [
        d
        for d in play.documents
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == volume["configMap"]["name"]
    ]
    certificate = x509.load_pem_x509_certificate(config_map["data"]["tls.crt"].encode())
    assert certificate.subject.rfc4514_string() == "CN=volume-quota-sidecar"
    san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    pod_name = f"{BROKER_POD}.{FULLNAME}-headless.{NAMESPACE}.svc.cluster.local"
    assert san.get_values_for_type(x509.DNSName) == [pod_name]
    env = {
        e["name"]: e.get("value")
        for c in play.pod["spec"]["containers"]
        if c["name"] == "volume-quota"
        for e in c["env"]
    }
    assert env["VOLUME_QUOTA_SNAPSHOT_SIGNATURES"] == "require"
    assert env["VOLUME_QUOTA_SIGNER_IDENTITIES"] == f"DNS:{pod_name}".replace(
        BROKER_POD, f"{FULLNAME}-{{broker}}"
    )


def test_broker_starts_with_the_callback_the_init_container_installed(release: Release) -> None:
    broker = release.broker
    seconds = broker.wait_for(
        lambda: "volume-quota callback #1 configured" in broker.logs("kafka"),
        "the broker to log `volume-quota callback #1 configured`",
        BROKER_START_TIMEOUT_S,
    )
    print(f"callback configured {seconds:.0f} s after kube play")
    init = "install-broker-plugin"
    broker.wait_for(lambda: broker.exit_code(init) is not None, f"{init} to finish", 60)
    assert broker.exit_code(init) == 0, broker.logs(init)
    jar = broker.exec("kafka", "ls", "/opt/volume-quota/broker-plugin/")
    assert "volume-quota-broker-plugin.jar" in jar


def test_acl_job_grants_the_sidecar_its_acls(release: Release) -> None:
    job = release.acl_job
    (container,) = job.play.pod["spec"]["containers"]
    name = container["name"]
    job.wait_for(
        lambda: job.exit_code(name) is not None, "the ACL Job to finish", BROKER_START_TIMEOUT_S
    )
    assert job.exit_code(name) == 0, job.logs(name)


def test_sidecar_publishes_and_writes_a_valid_open_decision(release: Release) -> None:
    broker = release.broker
    decision_text = ""

    def open_decision() -> bool:
        nonlocal decision_text
        result = broker.podman(
            "exec",
            broker.container("volume-quota"),
            "cat",
            "/var/run/volume-quota/decision.json",
            check=False,
        )
        decision_text = result.stdout
        if result.returncode != 0:
            return False
        decision = QuotaDecision.model_validate_json(decision_text)
        return decision.state == QuotaState.OPEN and not decision.caused_by_missing_data

    seconds = broker.wait_for(open_decision, "an OPEN decision file", DECISION_TIMEOUT_S)
    print(f"OPEN decision {seconds:.0f} s after kube play: {decision_text}")
    decision = QuotaDecision.model_validate_json(decision_text)
    assert decision.unknown_brokers == []


def finish_pod(plane: ControlPlane, pod: PlayedPod, container: str, exit_code: int) -> None:
    """What a kubelet reports when a pod's only container ended: its phase, and how it ended."""
    plane.api.merge_patch(
        f"/api/v1/namespaces/{NAMESPACE}/pods/{pod.name}/status",
        {
            "status": {
                "phase": "Succeeded" if exit_code == 0 else "Failed",
                "containerStatuses": [
                    {
                        "name": container,
                        "image": pod.play.pod["spec"]["containers"][0]["image"],
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {"terminated": {"exitCode": exit_code}},
                    }
                ],
            }
        },
    )


def test_helm_test_passes_once_the_sidecar_is_ready(
    release: Release, control_plane: ControlPlane
) -> None:
    """`helm test` as a user runs it: helm creates the hook pod on the API server, the pod runs
    (podman stands in for the kubelet, and reports its end to the API server as a kubelet
    would), and helm's exit status is the pod's."""
    test_sidecar_publishes_and_writes_a_valid_open_decision(release)
    helm = subprocess.Popen(
        [str(control_plane.bin_dir / "helm"), "test", RELEASE, "--namespace", NAMESPACE],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=control_plane.tool_env(),
    )
    try:
        (test_pod,) = wait_for_bound_pods(
            control_plane, NAMESPACE, "app.kubernetes.io/component=test", 1
        ).pods
        pod = PlayedPod(
            fetch_play_file(
                control_plane,
                NAMESPACE,
                test_pod["metadata"]["name"],
                release.hosts,
                release.work / "hosts",
            ),
            release.work,
        )
        release.played.append(pod)
        pod.start()
        (container,) = [c["name"] for c in pod.play.pod["spec"]["containers"]]
        pod.wait_for(lambda: pod.exit_code(container) is not None, "the test pod to end", 120)
        exit_code = pod.exit_code(container)
        assert exit_code is not None
        logs = pod.logs(container)
        finish_pod(control_plane, pod, container, exit_code)
        output, _ = helm.communicate(timeout=120)
    finally:
        if helm.poll() is None:
            helm.kill()
            helm.wait()
    print(logs)
    assert exit_code == 0, logs
    assert helm.returncode == 0, output
    assert "Phase:          Succeeded" in output, output
    readyz = f"http://{BROKER_POD}."
    assert f"ready     {readyz}" in logs, logs
    assert '"state": "OPEN"' in logs.split("decision:", 1)[1], logs


def test_the_charts_probes_pass_as_a_kubelet_would_run_them(release: Release) -> None:
    """The broker's and the sidecar's startup, readiness and liveness probes, run from the
    pod's start with the kubelet's rules (kubelet_prober.py): both containers become ready, and
    no probe fails often enough that a kubelet would have restarted a container, through the
    broker's start and every test above."""
    prober = release.prober
    probes = release.broker.play.probes
    assert set(probes["kafka"]) == {"startupProbe", "readinessProbe", "livenessProbe"}
    # The sidecar has a liveness probe only: the pod's readiness is its broker's (see
    # docs/kubernetes.md, "The sidecar has no readiness probe").
    assert set(probes["volume-quota"]) == {"livenessProbe"}
    (sidecar_liveness,) = [t for t in prober.tracks if t.container == "volume-quota"]
    release.broker.wait_for(
        lambda: prober.ready_at("kafka") is not None and sidecar_liveness.succeeded_at is not None,
        "the broker ready by its readiness probe and the sidecar's liveness probe answering",
        BROKER_START_TIMEOUT_S,
    )
    for track in prober.tracks:
        print(
            f"{track.container} {track.kind}: {len(track.results)} probes, first success "
            f"{track.succeeded_at:.0f} s after kube play, "
            f"failures {sum(not ok for _, ok, _ in track.results)}"
        )
    assert prober.restarts_due() == []
    probed = {(t.container, t.kind) for t in prober.tracks if t.results}
    assert ("volume-quota", "livenessProbe") in probed
    assert ("kafka", "livenessProbe") in probed
