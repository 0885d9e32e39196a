"""The image build stops when the JMX exporter agent is not the pinned jar: podman builds the
sidecar target as build.sh does, but with another JMX_EXPORTER_SHA256, and the build fails at
the image's own check (whichever stage brought the jar). The fetch script's check:
tests/supply_chain/test_jmx_exporter_checksum.py."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
CONTAINER = REPOSITORY / "deploy" / "container"
PODMAN = ("podman", "--runtime", "runc")
LIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
BASE_IMAGE = "localhost/volume-quota-base:bookworm-python3"
BUILD_TIMEOUT_S = 900


def build_arguments() -> dict[str, str]:
    text = (CONTAINER / "Dockerfile").read_text()
    return dict(re.findall(r"^ARG (JMX_EXPORTER_\w+|SPARK_VERSION)=(\S+)$", text, re.MULTILINE))


def test_the_build_fails_when_the_agent_is_not_the_pinned_jar() -> None:
    # build.sh first: the base image and the build context's jars (seconds when cached).
    prepared = subprocess.run(
        ["bash", str(CONTAINER / "build.sh")],
        capture_output=True,
        text=True,
        check=False,
        timeout=BUILD_TIMEOUT_S,
    )
    assert prepared.returncode == 0, prepared.stderr[-4000:]
    arguments = build_arguments()
    wrong = hashlib.sha256(b"not the agent").hexdigest()
    assert arguments["JMX_EXPORTER_SHA256"] != wrong
    flags = [
        f"--build-arg={name}={value}"
        for name, value in {
            **arguments,
            "JMX_EXPORTER_SHA256": wrong,
            "PYTHON_IMAGE": BASE_IMAGE,
            "PLUGIN_JAR": "context",
        }.items()
    ]
    build = subprocess.run(
        [
            *PODMAN,
            "build",
            *LIMITS,
            "--network",
            "host",
            "--secret",
            "id=ca,src=/etc/ssl/certs/ca-certificates.crt",
            *flags,
            "--ignorefile",
            str(CONTAINER / "Dockerfile.dockerignore"),
            "-f",
            str(CONTAINER / "Dockerfile"),
            "--target",
            "sidecar",
            str(REPOSITORY),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=BUILD_TIMEOUT_S,
    )
    output = build.stdout + build.stderr
    assert build.returncode != 0, output[-4000:]
    assert "/opt/volume-quota/jmx_prometheus_javaagent.jar: FAILED" in output, output[-4000:]
