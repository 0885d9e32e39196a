"""The history CronJob's command, run in the history image as the CronJob runs it.

The image is built by `deploy/container/build.sh history` (idempotent: seconds when nothing
changed, minutes cold). The container gets what the CronJob's pod gets: the rendered script and
environment, uid 10001 on a read-only root with /tmp writable, the client certificate at the
chart's path and the data volume; and no network at all, so nothing can be downloaded at run
time. The bootstrap address is one nobody listens on, and the Kafka source's timeouts are cut
short (`--kafka-option`s added to the ingest) so that the run ends in seconds instead of the
minutes of the default retries. It must end in the Kafka client's connection timeout: Spark found
and loaded the Kafka source baked into the image, and no Maven was needed.
"""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.chart.chart_tools import REPO, Manifest, container, find, render

BUILD = REPO / "deploy" / "container" / "build.sh"
IMAGE = "localhost/volume-quota-history:0.1.0"
PODMAN = ["podman", "--runtime", "runc"]
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
UNREACHABLE = "127.0.0.1:1"
SHORT_TIMEOUTS = (
    "--source kafka --kafka-option kafka.default.api.timeout.ms=5000"
    " --kafka-option kafka.request.timeout.ms=3000 --kafka-option fetchOffset.numRetries=1"
)
KAFKA_CONNECTION_FAILURE = "org.apache.kafka.common.errors.TimeoutException"


@pytest.fixture(scope="module")
def history_image() -> str:
    built = subprocess.run(
        ["bash", str(BUILD), "history"], capture_output=True, text=True, check=False, timeout=3600
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return IMAGE


def _certificate(directory: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "volume-quota-sidecar")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    (directory / "ca.crt").write_bytes(pem)
    (directory / "tls.crt").write_bytes(pem)
    (directory / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _cronjob_pod(manifests: list[Manifest]) -> Manifest:
    spec: Manifest = find(manifests, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return spec


def test_the_cronjob_command_loads_the_kafka_source_from_the_image(
    history_image: str, tmp_path: Path
) -> None:
    spec = _cronjob_pod(render(settings={"history.enabled": "true"}))
    history = container(spec, "history")
    shell, flag, script = history["command"]
    assert "--source kafka" in script
    script = script.replace("--source kafka", SHORT_TIMEOUTS, 1)
    env = {entry["name"]: entry["value"] for entry in history["env"]}
    env["BOOTSTRAP_SERVERS"] = UNREACHABLE
    mounts = {mount["name"]: mount["mountPath"] for mount in history["volumeMounts"]}
    tls, data = tmp_path / "tls", tmp_path / "data"
    tls.mkdir()
    data.mkdir()
    _certificate(tls)
    os.chmod(tmp_path, 0o755)
    for path in tls.iterdir():
        path.chmod(0o644)
    data.chmod(0o777)
    context = history["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    arguments = [
        *PODMAN,
        "run",
        "--rm",
        "--network",
        "none",
        *LIMITS,
        "--read-only",
        "--user",
        f"{context['runAsUser']}:{context['runAsGroup']}",
        "--tmpfs",
        f"{mounts['tmp']}:rw,size=2g,mode=1777",
        "--volume",
        f"{tls}:{mounts['tls']}:ro",
        "--volume",
        f"{data}:{mounts['data']}",
        *[f"--env={name}={value}" for name, value in env.items()],
        "--entrypoint",
        shell,
        history_image,
        flag,
        script,
    ]
    run = subprocess.run(arguments, capture_output=True, text=True, check=False, timeout=900)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output[-3000:]
    assert "Failed to find data source: kafka" not in output, output[-3000:]
    assert "cannot fetch Spark's Kafka connector" not in output, output[-3000:]
    assert KAFKA_CONNECTION_FAILURE in output, output[-3000:]
