"""The image built by deploy/container/build.sh, run the way the Helm chart runs it: one sidecar
container per broker of a real 3-broker mTLS cluster (local_cluster), as uid 10001 on a read-only
root filesystem with nothing writable but the decision directory, the broker's certificates and
log directory mounted, and every broker loading the callback jar taken out of that same image.

podman flags: see build.sh (runc, not crun; ulimits within this machine's hard limits; host
network, as the sidecar shares the broker pod's network namespace on Kubernetes).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import pytest

from local_cluster import LocalKafkaCluster, grant_sidecar_acls

REPOSITORY = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPOSITORY / "deploy" / "container" / "build.sh"
DECISION_SCHEMA = REPOSITORY / "schemas" / "quota-decision.schema.json"
PODMAN = ("podman", "--runtime", "runc")
RUN_FLAGS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "--network", "host")
USER = 10001
IMAGE_JAR = "/opt/volume-quota/volume-quota-broker-plugin.jar"
# The sidecar's paths in the chart (deploy/helm/volume-quota/templates/_helpers.tpl).
TLS_DIR = "/etc/volume-quota/tls"
DECISION_DIR = "/var/run/volume-quota"
DATA_DIR = "/var/lib/kafka/data-0"
BROKERS = 3
# Every broker's volume is far above 1 % used, so the soft limit (99 % free) throttles and the
# hard one (1 byte free) never pauses: THROTTLE can only come from the sidecars' measurements
# (with data missing, the decision would be PAUSE, the on-missing default).
SOFT_LIMIT = "MinFreePercentage:99"
HARD_LIMIT = "MinFreeBytes:1"
BUILD_TIMEOUT_S = 420
READY_TIMEOUT_S = 120
COMMAND_TIMEOUT_S = 60


def podman(*arguments: str, timeout: float = COMMAND_TIMEOUT_S) -> str:
    result = subprocess.run(
        [*PODMAN, *arguments], capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise AssertionError(
            f"podman {' '.join(arguments[:2])} exited {result.returncode}: {result.stderr[-2000:]}"
        )
    return result.stdout


@pytest.fixture(scope="module")
def image() -> str:
    """The image id build.sh prints last (a rebuild without changes takes seconds)."""
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, f"build.sh failed:\n{result.stderr[-4000:]}"
    return result.stdout.strip().splitlines()[-1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def readable_by_sidecar(directory: Path, files: dict[str, Path]) -> Path:
    """Copies of the PEM files owned by the sidecar's uid (the key 0400), as a Secret mounted
    with the pod's fsGroup would be; the originals are root's."""
    directory.mkdir(mode=0o500)
    for name, source in files.items():
        target = directory / name
        shutil.copyfile(source, target)
        target.chmod(0o400 if name.endswith(".key") else 0o444)
        os.chown(target, USER, USER)
    os.chown(directory, USER, USER)
    return directory


def wait_for(description: str, condition: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {description}")
        time.sleep(0.5)


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def test_help_runs_as_the_non_root_user_on_a_read_only_root(image: str) -> None:
    output = podman(
        "run", "--rm", *RUN_FLAGS, "--read-only", "--read-only-tmpfs=false",
        "--user", f"{USER}:{USER}", image, "volume-quota", "--help",
    )  # fmt: skip
    assert output.startswith("usage: volume-quota")
    assert "sidecar" in output
    config = json.loads(podman("image", "inspect", "--format", "{{json .Config}}", image))
    assert config["User"] == f"{USER}:{USER}"
    assert config["Cmd"] == ["volume-quota", "sidecar"]


class Sidecars:
    """One container per broker; removed (by name) when the test ends, pass or fail."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.names: list[str] = []

    def start(self, name: str, mounts: list[str], environment: dict[str, str]) -> None:
        self.names.append(name)
        flags = [flag for mount in mounts for flag in ("--volume", mount)]
        flags += [flag for item in environment.items() for flag in ("--env", "=".join(item))]
        podman(
            "run", "--detach", "--name", name, *RUN_FLAGS,
            "--read-only", "--read-only-tmpfs=false", "--user", f"{USER}:{USER}",
            *flags, self.image,
        )  # fmt: skip

    def check_running(self) -> None:
        for name in self.names:
            state = podman("inspect", "--format", "{{.State.Status}}", name).strip()
            if state != "running":
                raise AssertionError(f"sidecar {name} is {state}:\n{self.logs(name)}")

    def logs(self, name: str) -> str:
        result = subprocess.run(
            [*PODMAN, "logs", "--tail", "40", name],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        return result.stdout + result.stderr

    def remove(self) -> None:
        for name in self.names:
            subprocess.run(
                [*PODMAN, "rm", "--force", "--time", "5", name],
                capture_output=True,
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )


@pytest.fixture
def sidecars(image: str) -> Iterator[Sidecars]:
    running = Sidecars(image)
    try:
        yield running
    finally:
        running.remove()


def callback_properties(decision_file: Path) -> dict[str, str]:
    return {
        "client.quota.callback.class": "io.volumequota.broker.VolumeQuotaCallback",
        "volume.quota.decision.path": str(decision_file),
        "volume.quota.produce.base.bytes.per.second": str(1024 * 1024),
        "volume.quota.pause.bytes.per.second": str(64 * 1024),
        "volume.quota.on.missing": "PAUSE",
        "volume.quota.excluded.principals": "User:publisher",
        "volume.quota.reload.interval.ms": "250",
    }


@pytest.mark.real_broker
@pytest.mark.timeout(600)
def test_the_image_is_the_sidecar_of_every_broker_and_its_jar_the_callback(
    image: str, sidecars: Sidecars, tmp_path: Path
) -> None:
    jar = tmp_path / "volume-quota-broker-plugin.jar"
    container = podman("create", image).strip()
    try:
        podman("cp", f"{container}:{IMAGE_JAR}", str(jar))
    finally:
        podman("rm", container)
    decision_dirs = [tmp_path / f"decision-{index}" for index in range(BROKERS)]
    for directory in decision_dirs:
        directory.mkdir()
        os.chown(directory, USER, USER)
    cluster = LocalKafkaCluster(
        tmp_path / "cluster",
        broker_count=BROKERS,
        extra_classpath=[jar],
        per_broker_properties=[
            callback_properties(directory / "decision.json") for directory in decision_dirs
        ],
        start_timeout_s=240,
    )
    with cluster:
        grant_sidecar_acls(cluster)
        identity = cluster.identity_files("publisher")
        ports = [free_port() for _ in range(BROKERS)]
        run_id = uuid.uuid4().hex[:8]
        for index in range(BROKERS):
            tls = readable_by_sidecar(
                tmp_path / f"tls-{index}",
                {"ca.crt": identity.ca, "tls.crt": identity.cert, "tls.key": identity.key},
            )
            (data_dir,) = cluster.broker_files(index).data_dirs
            sidecars.start(
                f"volume-quota-test-{run_id}-{index}",
                [
                    f"{tls}:{TLS_DIR}:ro",
                    f"{data_dir}:{DATA_DIR}:ro",
                    f"{decision_dirs[index]}:{DECISION_DIR}:rw",
                ],
                {
                    "VOLUME_QUOTA_BROKER_ID": str(index),
                    "VOLUME_QUOTA_LOG_DIRS": DATA_DIR,
                    "VOLUME_QUOTA_BOOTSTRAP_SERVERS": cluster.bootstrap_servers,
                    "VOLUME_QUOTA_TLS_CA_FILE": f"{TLS_DIR}/ca.crt",
                    "VOLUME_QUOTA_TLS_CERT_FILE": f"{TLS_DIR}/tls.crt",
                    "VOLUME_QUOTA_TLS_KEY_FILE": f"{TLS_DIR}/tls.key",
                    # The brokers' certificates name 127.0.0.1, so host names are verified.
                    "VOLUME_QUOTA_TLS_VERIFY_HOSTNAME": "true",
                    "VOLUME_QUOTA_DECISION_FILE": f"{DECISION_DIR}/decision.json",
                    "VOLUME_QUOTA_METRICS_HOST": "127.0.0.1",
                    "VOLUME_QUOTA_METRICS_PORT": str(ports[index]),
                    "VOLUME_QUOTA_SOFT_LIMIT": SOFT_LIMIT,
                    "VOLUME_QUOTA_HARD_LIMIT": HARD_LIMIT,
                    "VOLUME_QUOTA_HEARTBEAT_INTERVAL": "2s",
                    "VOLUME_QUOTA_LIVE_BROKER_REFRESH_INTERVAL": "1s",
                },
            )

        def all_ready() -> bool:
            sidecars.check_running()
            return all(ready(port) for port in ports)

        wait_for("every sidecar's /readyz", all_ready, READY_TIMEOUT_S)

        schema = json.loads(DECISION_SCHEMA.read_text())

        def decisions_throttle_with_every_broker_known() -> bool:
            sidecars.check_running()
            for directory in decision_dirs:
                try:
                    decision = json.loads((directory / "decision.json").read_bytes())
                except (OSError, ValueError):
                    return False
                jsonschema.validate(decision, schema)
                if decision["state"] != "THROTTLE" or decision.get("unknownBrokers"):
                    return False
            return True

        wait_for(
            "THROTTLE decisions naming no unknown broker",
            decisions_throttle_with_every_broker_known,
            READY_TIMEOUT_S,
        )
        for directory in decision_dirs:
            assert (directory / "decision.json").stat().st_uid == USER

        def callbacks_applied_throttle() -> bool:
            return all(
                "decision THROTTLE" in cluster.broker_log(index).read_text(errors="replace")
                for index in range(BROKERS)
            )

        wait_for("every broker's callback to apply THROTTLE", callbacks_applied_throttle, 30)
