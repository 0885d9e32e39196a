"""broker.rack from the node's zone: an init container reads its node's label through the API
with a token no other container sees; its script runs here against a local stand-in API."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chart.chart_tools import (
    RELEASE,
    Manifest,
    container,
    env_of,
    env_values,
    find,
    mounts,
    pod_spec,
    render,
)

FULLNAME = f"{RELEASE}-volume-quota"
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture(scope="module")
def racked() -> list[Manifest]:
    return render(settings={"kafka.rack.enabled": "true"})


def test_only_the_init_container_gets_an_api_token(racked: list[Manifest]) -> None:
    spec = pod_spec(racked)
    assert spec["automountServiceAccountToken"] is False
    discover = container(spec, "discover-rack", init=True)
    assert mounts(discover)[TOKEN_DIR]["name"] == "kube-api-access"
    for entry in [*spec["containers"], *spec["initContainers"]]:
        if entry["name"] != "discover-rack":
            assert TOKEN_DIR not in mounts(entry), entry["name"]
    assert env_of(discover)["NODE_NAME"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "spec.nodeName"}
    }
    assert env_values(discover)["TOPOLOGY_KEY"] == "topology.kubernetes.io/zone"
    rack_file = env_values(discover)["RACK_FILE"]
    kafka = container(spec, "kafka")
    assert env_values(kafka)["RACK_FILE"] == rack_file
    directory = rack_file.rsplit("/", 1)[0]
    assert mounts(kafka)[directory]["readOnly"] is True
    assert mounts(kafka)[directory]["name"] == mounts(discover)[directory]["name"]


def test_the_token_may_only_get_nodes(racked: list[Manifest]) -> None:
    role = find(racked, "ClusterRole")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    binding = find(racked, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": FULLNAME, "namespace": "kafka"}
    ]


def test_no_rack_no_token_no_role(default_manifests: list[Manifest]) -> None:
    kinds = {manifest["kind"] for manifest in default_manifests}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding"}
    spec = pod_spec(default_manifests)
    assert "discover-rack" not in [entry["name"] for entry in spec["initContainers"]]
    assert "RACK_FILE" not in env_values(container(spec, "kafka"))


NODES = {
    "node-a": {"metadata": {"labels": {"topology.kubernetes.io/zone": "eu-west-1a"}}},
    "node-b": {"metadata": {"labels": {"kubernetes.io/hostname": "node-b"}}},
}


class _Api(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        name = self.path.removeprefix("/api/v1/nodes/")
        authorized = self.headers.get("Authorization") == "Bearer the-token"
        node = NODES.get(name)
        self.send_response(200 if authorized and node else 403 if not authorized else 404)
        self.end_headers()
        self.wfile.write(json.dumps(node or {}).encode())

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def api() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _discover(
    manifests: list[Manifest], tmp_path: Path, api: str, node: str
) -> subprocess.CompletedProcess[str]:
    discover = container(pod_spec(manifests), "discover-rack", init=True)
    account = tmp_path / "account"
    account.mkdir()
    (account / "token").write_text("the-token\n")
    env = {
        **env_values(discover),
        "PATH": os.environ["PATH"],
        "NODE_NAME": node,
        "KUBERNETES_API": api,
        "SERVICE_ACCOUNT_DIR": str(account),
        "RACK_FILE": str(tmp_path / "rack"),
    }
    return subprocess.run(
        discover["command"], env=env, capture_output=True, text=True, check=False, timeout=60
    )


def test_the_rack_is_the_nodes_zone(racked: list[Manifest], tmp_path: Path, api: str) -> None:
    completed = _discover(racked, tmp_path, api, "node-a")
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "rack").read_text() == "eu-west-1a"
    assert "broker.rack=eu-west-1a (node node-a" in completed.stdout


def test_a_node_without_the_label_stops_the_pod(
    racked: list[Manifest], tmp_path: Path, api: str
) -> None:
    completed = _discover(racked, tmp_path, api, "node-b")
    assert completed.returncode == 1
    assert "node node-b has no label topology.kubernetes.io/zone" in completed.stderr
    assert not (tmp_path / "rack").exists()
