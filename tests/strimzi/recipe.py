"""The Strimzi recipe's files (deploy/strimzi/), parsed, for the tests of this folder."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, cast

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.chart.chart_tools import REPO, Manifest

RECIPE = REPO / "deploy" / "strimzi"
AGENT = RECIPE / "agent-deployment.yaml"
KAFKA = RECIPE / "kafka.yaml"
KAFKA_IMAGE_VOLUME = RECIPE / "kafka-image-volume.yaml"
USERS = RECIPE / "user.yaml"
TOPICS = RECIPE / "topics.yaml"
IMAGE_DOCKERFILE = REPO / "deploy" / "container" / "Dockerfile"


def documents(path: Path) -> list[Manifest]:
    loaded = yaml.safe_load_all(path.read_text())
    return [cast(Manifest, document) for document in loaded if document]


def one(manifests: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    matches = [
        manifest
        for manifest in manifests
        if manifest["kind"] == kind and (name is None or manifest["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def agent_container() -> Manifest:
    deployment = one(documents(AGENT), "Deployment")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    # The agent, and ca-bundle, which keeps its CA file in step with the cluster CA Secret.
    assert sorted(c["name"] for c in containers) == ["agent", "ca-bundle"]
    return cast(Manifest, next(c for c in containers if c["name"] == "agent"))


def agent_env() -> dict[str, str]:
    return {entry["name"]: entry["value"] for entry in agent_container()["env"]}


def kafka_spec(path: Path = KAFKA) -> dict[str, Any]:
    return cast(dict[str, Any], one(documents(path), "Kafka")["spec"]["kafka"])


def self_signed_pem(common_name: str) -> bytes:
    """A CA certificate (PEM) like the ones in Strimzi's cluster CA Secret."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "io.strimzi"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)
