"""deploy/helm/broker-image/Dockerfile, built for real: the broker image that holds the
volume-quota files, so that the chart (``kafka.image.includesVolumeQuota: true``) runs no init
container from the volume-quota image.

``apache/kafka`` cannot be pulled here (no image registry), so ``KAFKA_IMAGE`` is the Kafka
image tests/pods runs (Debian, Maven Central's jars, the same ``/opt/kafka`` layout), and
``VOLUME_QUOTA_IMAGE`` the volume-quota image built by deploy/container/build.sh: the
Dockerfile itself is built unchanged, with podman (buildah), as a user would with docker.
Checked: every file the chart's broker container loads in that mode is at the path the chart's
values name, identical to the volume-quota image's copy, and readable by the broker's user.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml

from tests.chart.chart_tools import CHART, REPO
from tests.pods.pod_play import PODMAN, kafka_image, sidecar_image

pytestmark = pytest.mark.kubernetes

DOCKERFILE = REPO / "deploy" / "helm" / "broker-image" / "Dockerfile"
BUILT = "localhost/volume-quota-test-broker-with-plugin:latest"
LIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")


def podman(*args: str, timeout: float = 600) -> str:
    result = subprocess.run(
        [*PODMAN, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"podman {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def checksums(image: str, user: str, paths: list[str]) -> dict[str, str]:
    """sha256 of every file under ``paths``, read inside ``image`` as ``user``."""
    script = 'find "$@" -type f -print0 | sort -z | xargs -0 sha256sum'
    output = podman(
        "run", "--rm", *LIMITS, "--network", "none", "--user", user, "--entrypoint", "sh", image,
        "-c", script, "sh", *paths,
    )  # fmt: skip
    return {path: digest for digest, path in (line.split() for line in output.splitlines())}


def test_the_broker_image_holds_the_volume_quota_files_where_the_chart_loads_them() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    image = values["sidecar"]["image"]
    paths = [image["pluginJarPath"], image["metricsAgentPath"], image["metricsConfigDir"]]
    broker_user = str(values["kafka"]["podSecurityContext"]["runAsUser"])
    kafka, volume_quota = kafka_image(), sidecar_image()
    podman(
        "build", "--network", "host", *LIMITS,
        "--build-arg", f"KAFKA_IMAGE={kafka}", "--build-arg", f"VOLUME_QUOTA_IMAGE={volume_quota}",
        "-f", str(DOCKERFILE), "-t", BUILT, str(DOCKERFILE.parent),
    )  # fmt: skip
    in_broker_image = checksums(BUILT, broker_user, paths)
    in_volume_quota_image = checksums(volume_quota, "0", paths)
    assert in_broker_image == in_volume_quota_image
    assert image["pluginJarPath"] in in_broker_image
    assert image["metricsAgentPath"] in in_broker_image
    assert any(path.startswith(image["metricsConfigDir"] + "/") for path in in_broker_image)
    # The Kafka image itself is unchanged underneath: its broker start script is still there.
    podman("run", "--rm", *LIMITS, "--network", "none", "--entrypoint", "test", BUILT,
           "-x", "/opt/kafka/bin/kafka-server-start.sh")  # fmt: skip
