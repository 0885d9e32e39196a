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
import json
import os
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.chart.chart_tools import REPO, Manifest, container, find, render
from tests.spark_history_pure.usage_factory import GB, snapshot_document

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


def _run_in_pod(history_image: str, tmp_path: Path, script: str) -> tuple[int, str, Path]:
    """``script`` run as the CronJob's container runs (its environment, user, read-only root,
    mounts), with no network: (exit status, output, the data volume's directory)."""
    spec = _cronjob_pod(render(settings={"history.enabled": "true"}))
    history = container(spec, "history")
    shell, flag, _ = history["command"]
    env = {entry["name"]: entry["value"] for entry in history["env"]}
    env["BOOTSTRAP_SERVERS"] = UNREACHABLE
    mounts = {mount["name"]: mount["mountPath"] for mount in history["volumeMounts"]}
    tls, data = tmp_path / "tls", tmp_path / "data"
    tls.mkdir(exist_ok=True)
    data.mkdir(exist_ok=True)
    _certificate(tls)
    os.chmod(tmp_path, 0o755)
    for path in tls.iterdir():
        path.chmod(0o644)
    for path in [data, *data.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
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
    return run.returncode, run.stdout + run.stderr, data


def _cronjob_script() -> str:
    spec = _cronjob_pod(render(settings={"history.enabled": "true"}))
    script: str = container(spec, "history")["command"][2]
    return script


def test_the_cronjob_command_loads_the_kafka_source_from_the_image(
    history_image: str, tmp_path: Path
) -> None:
    script = _cronjob_script()
    assert "--source kafka" in script
    script = script.replace("--source kafka", SHORT_TIMEOUTS, 1)
    status, output, _ = _run_in_pod(history_image, tmp_path, script)
    assert status != 0, output[-3000:]
    assert "Failed to find data source: kafka" not in output, output[-3000:]
    assert "cannot fetch Spark's Kafka connector" not in output, output[-3000:]
    assert KAFKA_CONNECTION_FAILURE in output, output[-3000:]


def test_the_cronjobs_forecast_and_report_run_in_the_image(
    history_image: str, tmp_path: Path
) -> None:
    # The script after its ingest, on a history already in the data volume (two days of two
    # brokers' snapshots, JSONL, which --input reads as it reads the ingested dataset): every
    # module the forecast and the report import is in the image, and they write their files.
    script = _cronjob_script()
    start = script.index("volume-quota history forecast")
    analyses = "set -e\n" + script[start:]
    dataset = tmp_path / "data" / "dataset"
    dataset.mkdir(parents=True)
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    lines = [
        json.dumps(snapshot_document(broker, now - datetime.timedelta(minutes=15 * step),
                                     (300 + broker * 200) * GB + step * 10**8))
        for broker in (0, 1)
        for step in range(192)
    ]  # fmt: skip
    (dataset / "snapshots.jsonl").write_text("\n".join(lines) + "\n")
    status, output, data = _run_in_pod(history_image, tmp_path, analyses)
    assert status == 0, output[-3000:]
    forecast = (data / "forecast.csv").read_text().splitlines()
    assert forecast[0].startswith("brokerId,volumeName,"), forecast[0]
    assert len(forecast) == 3, forecast
    page = (data / "report" / "report.html").read_text()
    assert "Days until full" in page
    assert "Fleet and broker totals" in page
