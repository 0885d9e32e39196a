"""`helm test`: a hook pod checks every sidecar's /readyz and reads the decision with
`volume-quota status --json`. Its script is run here against local HTTP servers and a
stand-in for the volume-quota command."""

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
    CI_VALUES,
    RELEASE,
    Manifest,
    container,
    env_values,
    find,
    pod_spec,
    render,
)

FULLNAME = f"{RELEASE}-volume-quota"
POD_DOMAIN = f"{FULLNAME}-headless.kafka.svc.cluster.local"


def _hook(manifests: list[Manifest]) -> Manifest:
    return find(manifests, "Pod", f"{FULLNAME}-test")


def test_the_hook_is_a_helm_test_that_checks_every_sidecar(
    default_manifests: list[Manifest],
) -> None:
    hook = _hook(default_manifests)
    assert hook["metadata"]["annotations"]["helm.sh/hook"] == "test"
    check = container(hook["spec"], "check-sidecars")
    env = env_values(check)
    assert env["READYZ_URLS"].split(",") == [
        f"http://{FULLNAME}-{ordinal}.{POD_DOMAIN}:9464/readyz" for ordinal in range(3)
    ]
    sidecar = container(pod_spec(default_manifests), "volume-quota")
    assert check["image"] == sidecar["image"]
    sidecar_env = env_values(sidecar)
    for name in (
        "VOLUME_QUOTA_BOOTSTRAP_SERVERS",
        "VOLUME_QUOTA_TLS_CA_FILE",
        "VOLUME_QUOTA_TLS_CERT_FILE",
        "VOLUME_QUOTA_TLS_KEY_FILE",
        "VOLUME_QUOTA_TOPIC",
        "VOLUME_QUOTA_CONSUMER_GROUP",
    ):
        assert env[name] == sidecar_env[name], name
    tls = next(v for v in hook["spec"]["volumes"] if v["name"] == "sidecar-tls")
    # A sidecar certificate of its own from csi-driver (sidecar.tls.perBroker, the default).
    assert tls["csi"]["driver"] == "csi.cert-manager.io"
    attributes = tls["csi"]["volumeAttributes"]
    assert attributes["csi.cert-manager.io/common-name"] == "volume-quota-sidecar"


def test_attach_mode_checks_the_urls_it_is_given() -> None:
    attach = next(path for path in CI_VALUES if path.name == "attach-values.yaml")
    url = "http://kafka-0.kafka:9464/readyz"
    manifests = render([attach], {"helmTest.readyzUrls[0]": url})
    assert env_values(container(_hook(manifests)["spec"], "check-sidecars"))["READYZ_URLS"] == url
    assert not any(m["kind"] == "Pod" for m in render(settings={"helmTest.enabled": "false"}))


class _Readyz(http.server.BaseHTTPRequestHandler):
    """/readyz of a sidecar; the path says which answer: /ok/readyz or /failing/readyz."""

    def do_GET(self) -> None:
        ready = self.path.startswith("/ok/")
        body = json.dumps({"status": "ok" if ready else "failing"}).encode()
        self.send_response(200 if ready else 503)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def sidecars() -> Iterator[tuple[str, str]]:
    """URLs of a ready and a not-ready /readyz."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Readyz)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    yield f"{base}/ok/readyz", f"{base}/failing/readyz"
    server.shutdown()
    server.server_close()


def _run_hook(
    manifests: list[Manifest], tmp_path: Path, urls: list[str], status_exit: int
) -> subprocess.CompletedProcess[str]:
    check = container(_hook(manifests)["spec"], "check-sidecars")
    stand_in = tmp_path / "volume-quota"
    stand_in.write_text(
        "#!/bin/sh\n"
        'echo "$*" > "$(dirname "$0")/status.args"\n'
        'echo \'{"decision": {"state": "OPEN", "throttleFactor": 1.0}}\'\n'
        f"exit {status_exit}\n"
    )
    stand_in.chmod(0o755)
    env = {
        **env_values(check),
        "READYZ_URLS": ",".join(urls),
        "PATH": f"{tmp_path}:{os.environ['PATH']}",
    }
    return subprocess.run(
        check["command"], env=env, capture_output=True, text=True, check=False, timeout=60
    )


def test_the_hook_passes_when_every_sidecar_is_ready(
    default_manifests: list[Manifest], tmp_path: Path, sidecars: tuple[str, str]
) -> None:
    ready, _ = sidecars
    completed = _run_hook(default_manifests, tmp_path, [ready, ready], 0)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout.count("ready     ") == 2
    assert 'decision: {"state": "OPEN", "throttleFactor": 1.0}' in completed.stdout
    assert (tmp_path / "status.args").read_text().split() == ["status", "--json", "--timeout", "60"]


def test_the_hook_fails_on_a_sidecar_that_is_not_ready(
    default_manifests: list[Manifest], tmp_path: Path, sidecars: tuple[str, str]
) -> None:
    ready, failing = sidecars
    completed = _run_hook(default_manifests, tmp_path, [ready, failing], 0)
    assert completed.returncode == 1
    assert f"NOT READY {failing}: 503" in completed.stdout


def test_the_hook_fails_on_an_unreachable_sidecar(
    default_manifests: list[Manifest], tmp_path: Path, sidecars: tuple[str, str]
) -> None:
    ready, _ = sidecars
    completed = _run_hook(default_manifests, tmp_path, [ready, "http://127.0.0.1:1/readyz"], 0)
    assert completed.returncode == 1
    assert "NO ANSWER http://127.0.0.1:1/readyz" in completed.stdout


def test_the_hook_fails_when_the_decision_cannot_be_read(
    default_manifests: list[Manifest], tmp_path: Path, sidecars: tuple[str, str]
) -> None:
    ready, _ = sidecars
    completed = _run_hook(default_manifests, tmp_path, [ready], 1)
    assert completed.returncode == 1
    assert "volume-quota status exited 1" in completed.stdout
