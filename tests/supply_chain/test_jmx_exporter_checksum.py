"""The Prometheus JMX exporter agent is used only with its pinned SHA-256: the fetch script
(deploy/container/fetch-jmx-exporter.sh, which build.sh runs) refuses a jar with another
checksum and writes nothing, and the Dockerfile checks the same pin wherever the jar comes
from."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
CONTAINER = REPOSITORY / "deploy" / "container"
FETCH = CONTAINER / "fetch-jmx-exporter.sh"
DOCKERFILE = CONTAINER / "Dockerfile"
FETCH_TIMEOUT_S = 300


def dockerfile_argument(name: str) -> str:
    values: list[str] = re.findall(rf"^ARG {name}=(\S+)$", DOCKERFILE.read_text(), re.MULTILINE)
    [value] = values
    return value


VERSION = dockerfile_argument("JMX_EXPORTER_VERSION")
SHA256 = dockerfile_argument("JMX_EXPORTER_SHA256")


def fetch(sha256: str, destination: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(FETCH), VERSION, sha256, str(destination)],
        capture_output=True,
        text=True,
        check=False,
        timeout=FETCH_TIMEOUT_S,
    )


def test_the_pinned_jar_is_fetched(tmp_path: Path) -> None:
    destination = tmp_path / "agent" / "jmx_prometheus_javaagent.jar"
    completed = fetch(SHA256, destination)
    assert completed.returncode == 0, completed.stderr
    assert hashlib.sha256(destination.read_bytes()).hexdigest() == SHA256
    assert (destination.parent / "jmx_prometheus_javaagent.version").read_text().strip() == VERSION


def test_a_wrong_checksum_fails_the_fetch_and_leaves_no_jar(tmp_path: Path) -> None:
    destination = tmp_path / "agent" / "jmx_prometheus_javaagent.jar"
    wrong = hashlib.sha256(b"not the agent").hexdigest()
    completed = fetch(wrong, destination)
    assert completed.returncode == 1
    assert f"SHA-256 mismatch for jmx_prometheus_javaagent-{VERSION}.jar" in completed.stderr
    assert f"expected {wrong}, got {SHA256}" in completed.stderr
    assert list(destination.parent.iterdir()) == []


def test_a_tampered_jar_already_in_place_is_replaced(tmp_path: Path) -> None:
    destination = tmp_path / "jmx_prometheus_javaagent.jar"
    destination.write_bytes(b"tampered")
    (tmp_path / "jmx_prometheus_javaagent.version").write_text(f"{VERSION}\n")
    completed = fetch(SHA256, destination)
    assert completed.returncode == 0, completed.stderr
    assert hashlib.sha256(destination.read_bytes()).hexdigest() == SHA256


@pytest.mark.parametrize("checksum", ["", "abc", SHA256.upper()])
def test_a_malformed_checksum_is_refused_before_any_download(tmp_path: Path, checksum: str) -> None:
    completed = fetch(checksum, tmp_path / "jmx_prometheus_javaagent.jar")
    assert completed.returncode == 2
    assert "is not a SHA-256" in completed.stderr


def test_build_sh_fetches_with_the_dockerfiles_pin() -> None:
    build = (CONTAINER / "build.sh").read_text()
    assert "sed -n 's/^ARG JMX_EXPORTER_SHA256=//p' deploy/container/Dockerfile" in build
    assert (
        'bash deploy/container/fetch-jmx-exporter.sh "$JMX_EXPORTER_VERSION" '
        '"$JMX_EXPORTER_SHA256" "$AGENT"' in build
    )
    assert '--build-arg "JMX_EXPORTER_SHA256=$JMX_EXPORTER_SHA256"' in build
    commands = [line for line in build.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in commands if "jmx_prometheus_javaagent:" in line]


def test_the_dockerfile_checks_the_agent_in_the_maven_stage_and_in_the_image() -> None:
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    checks = [
        line
        for line in text.splitlines()
        if line.startswith("RUN") and "sha256sum --check --strict" in line
    ]
    assert len(checks) == 2
    maven, image = checks
    assert "jmx_prometheus_javaagent:${JMX_EXPORTER_VERSION}" in maven
    assert '"${JMX_EXPORTER_SHA256}  /opt/volume-quota/jmx_prometheus_javaagent.jar"' in image
