"""The agent trusts what Strimzi's own clients trust, and its limits name no node id.

During a cluster CA key replacement Strimzi keeps the previous CA certificate in the cluster CA
Secret as `ca-<date>.crt` next to the new `ca.crt`, and brokers present certificates of either
until every broker has rolled; Strimzi's own clients trust every `*.crt` of the Secret. The
agent's CA file (librdkafka's `ssl.ca.location`, one PEM file) is built here the way the
Deployment builds it: its containers' scripts run against a directory shaped like the mounted
Secret, and the file must hold every `*.crt`, then follow a change of the Secret. The same
holds for the clients CA Secret and the agent's signature CA file (the agent's and the
operators' certificates): a clients CA renewal must not make the agent refuse its own snapshots.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from tests.strimzi.recipe import (
    AGENT,
    KAFKA,
    KAFKA_IMAGE_VOLUME,
    agent_env,
    documents,
    one,
    self_signed_pem,
)

CLUSTER_CA_SECRET = "my-cluster-cluster-ca-cert"
CLIENTS_CA_SECRET = "my-cluster-clients-ca-cert"


def _pod() -> dict[str, Any]:
    spec: dict[str, Any] = one(documents(AGENT), "Deployment")["spec"]["template"]["spec"]
    return spec


def _certificates(pem: bytes) -> set[bytes]:
    return {cert.public_bytes(Encoding.DER) for cert in x509.load_pem_x509_certificates(pem)}


def _cluster_ca_secret(directory: Path, names: list[str]) -> dict[str, bytes]:
    """The Secret's files as the kubelet writes them; returns each certificate file's PEM."""
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for name in names:
        pem = self_signed_pem(f"cluster-ca {name}")
        (directory / name).write_bytes(pem)
        written[name] = pem
    (directory / "ca.p12").write_bytes(b"\x30\x82 not pem")
    (directory / "ca.password").write_text("secret")
    return written


def _mount_paths(container: dict[str, Any]) -> dict[str, str]:
    return {mount["name"]: mount["mountPath"] for mount in container.get("volumeMounts", [])}


def _localized(container: dict[str, Any], paths: dict[str, Path]) -> list[str]:
    """The container's command with its mount paths moved to local directories."""
    mounts = _mount_paths(container)
    command = []
    for word in container["command"] + container.get("args", []):
        moved = word
        for volume, local in paths.items():
            if volume in mounts:
                moved = moved.replace(mounts[volume], str(local))
        command.append(moved)
    return command


BUNDLES = pytest.mark.parametrize(
    ("setting", "ca_secret"),
    [
        # The brokers' CA: verifies their TLS certificates.
        ("VOLUME_QUOTA_TLS_CA_FILE", CLUSTER_CA_SECRET),
        # The clients CA: the agent's and the operators' certificates, for signatures only.
        ("VOLUME_QUOTA_SIGNATURE_CA_FILE", CLIENTS_CA_SECRET),
    ],
)


def _agent_ca_file_volume(setting: str) -> tuple[str, str]:
    agent = next(c for c in _pod()["containers"] if c["name"] == "agent")
    ca_file = agent_env()[setting]
    for name, path in _mount_paths(agent).items():
        if ca_file.startswith(path + "/"):
            return name, ca_file.removeprefix(path + "/")
    raise AssertionError(f"{ca_file} is on no volume of the agent")


def _ca_secret_volume(ca_secret: str) -> str:
    volumes = {volume["name"]: volume for volume in _pod()["volumes"]}
    names = [
        str(name)
        for name, v in volumes.items()
        if v.get("secret", {}).get("secretName") == ca_secret
    ]
    assert len(names) == 1, f"{ca_secret} is mounted {len(names)} times"
    return names[0]


def _local_secrets(container: dict[str, Any], directory: Path) -> dict[str, Path]:
    """A local directory, with a CA certificate, for each CA Secret ``container`` mounts."""
    volumes = {volume["name"]: volume for volume in _pod()["volumes"]}
    local = {}
    for name in _mount_paths(container):
        secret_name = volumes[name].get("secret", {}).get("secretName", "")
        if secret_name.endswith("-ca-cert"):
            local[name] = directory / name
            _cluster_ca_secret(local[name], ["ca.crt"])
    return local


@BUNDLES
def test_the_agent_trusts_every_ca_certificate_of_the_ca_secret(
    tmp_path: Path, setting: str, ca_secret: str
) -> None:
    volume_name, file_name = _agent_ca_file_volume(setting)
    volumes = {volume["name"]: volume for volume in _pod()["volumes"]}
    assert "emptyDir" in volumes[volume_name], "a Secret item holds one certificate only"
    # Written by the pod's own containers from the mounted CA Secret.
    secret_volume = _ca_secret_volume(ca_secret)
    assert "items" not in volumes[secret_volume]["secret"], "every *.crt must be mounted"
    writers = [
        c
        for c in _pod().get("initContainers", [])
        if volume_name in _mount_paths(c) and secret_volume in _mount_paths(c)
    ]
    assert writers, f"nothing writes volume {volume_name} before the agent starts"
    bundle_dir = tmp_path / "bundle"
    bundle_dir.mkdir()
    for writer in writers:
        local = _local_secrets(writer, tmp_path / "secrets")
        written = _cluster_ca_secret(
            local[secret_volume], ["ca.crt", "ca-2026-11-26T10-00-00Z.crt"]
        )
        subprocess.run(
            _localized(writer, {**local, volume_name: bundle_dir}), check=True, timeout=30
        )
    trusted = _certificates((bundle_dir / file_name).read_bytes())
    # Exactly that Secret's: nothing of the other CA Secret (the clients CA in the TLS bundle
    # would let any KafkaUser pass as a broker).
    assert trusted == _certificates(b"".join(written.values()))


@BUNDLES
def test_the_agents_ca_file_follows_a_change_of_the_secret(
    tmp_path: Path, setting: str, ca_secret: str
) -> None:
    volume_name, file_name = _agent_ca_file_volume(setting)
    volumes = {volume["name"]: volume for volume in _pod()["volumes"]}
    assert "emptyDir" in volumes[volume_name], "a Secret item holds one certificate only"
    secret_volume = _ca_secret_volume(ca_secret)
    refresher = next(
        c
        for c in _pod()["containers"]
        if volume_name in _mount_paths(c) and secret_volume in _mount_paths(c)
    )
    env = {entry["name"]: entry["value"] for entry in refresher.get("env", [])}
    assert 0 < int(env["BUNDLE_INTERVAL_SECONDS"]) <= 60
    bundle_dir = tmp_path / "bundle"
    bundle_dir.mkdir()
    local = _local_secrets(refresher, tmp_path / "secrets")
    secret_dir = local[secret_volume]
    first = (secret_dir / "ca.crt").read_bytes()
    process = subprocess.Popen(
        _localized(refresher, {**local, volume_name: bundle_dir}),
        env={**os.environ, **env, "BUNDLE_INTERVAL_SECONDS": "1"},
    )
    try:
        bundle = bundle_dir / file_name
        deadline = time.monotonic() + 20
        while not bundle.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _certificates(bundle.read_bytes()) == _certificates(first)
        # A CA key replacement: the old certificate stays as ca-<date>.crt, ca.crt is new.
        os.replace(secret_dir / "ca.crt", secret_dir / "ca-2026-11-26T10-00-00Z.crt")
        second = _cluster_ca_secret(secret_dir, ["ca.crt"])
        both = _certificates(first + second["ca.crt"])
        while _certificates(bundle.read_bytes()) != both and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _certificates(bundle.read_bytes()) == both
    finally:
        process.kill()
        process.wait()


def test_no_limit_and_no_node_pool_names_a_node_id() -> None:
    limits = agent_env().get("VOLUME_QUOTA_VOLUME_LIMITS", "")
    assert not re.search(r"kafka-log\d+", limits), limits
    for path in (KAFKA, KAFKA_IMAGE_VOLUME):
        for pool in documents(path):
            annotations = pool["metadata"].get("annotations") or {}
            assert "strimzi.io/next-node-ids" not in annotations, (path.name, pool["metadata"])
