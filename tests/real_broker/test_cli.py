"""``python -m local_cluster``: help, one-line errors, and a start/stop round trip."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from .kafka_helpers import quiet

pytestmark = pytest.mark.real_broker

_LOCAL_CLUSTER_ROOT = Path(__file__).resolve().parents[2] / "deploy" / "local"
_START_TIMEOUT_S = 150.0
_STOP_TIMEOUT_S = 60.0


def _cli_env(**overrides: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(_LOCAL_CLUSTER_ROOT), env.get("PYTHONPATH", "")] if p
    )
    env.update(overrides)
    return env


def _run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "local_cluster", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_help_explains_the_start_command() -> None:
    result = _run_cli("start", "--help", env=_cli_env())

    assert result.returncode == 0
    assert "--brokers" in result.stdout
    assert "SIGTERM" in result.stdout


def test_missing_java_is_reported_in_one_line(tmp_path: Path) -> None:
    result = _run_cli("start", "--dir", str(tmp_path / "c"), env=_cli_env(PATH=str(tmp_path)))

    assert result.returncode == 1
    assert result.stderr.startswith("local_cluster: error: java executable")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_start_prints_cluster_json_and_stops_cleanly_on_sigint(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "local_cluster", "start", "--brokers", "1", "--dir", str(tmp_path)],
        env=_cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        info = _read_json_document(process, _START_TIMEOUT_S)
        admin_files = info["identities"]["admin"]
        config = {
            "bootstrap.servers": info["bootstrap_servers"],
            "security.protocol": "SSL",
            "ssl.ca.location": admin_files["ca"],
            "ssl.certificate.location": admin_files["cert"],
            "ssl.key.location": admin_files["key"],
        }
        metadata = AdminClient(quiet(config)).list_topics(timeout=20)
        client_port = info["brokers"][0]["client_port"]

        process.send_signal(signal.SIGINT)
        exit_code = process.wait(timeout=_STOP_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert set(info["identities"]) >= {"publisher", "consumer", "admin", "intruder"}
    assert all(Path(path).is_file() for path in info["identities"]["publisher"].values())
    assert list(metadata.brokers) == [0]
    assert exit_code == 0
    assert not _port_accepts_connections(client_port), "broker still running after the CLI exit"


def _read_json_document(process: subprocess.Popen[str], timeout_s: float) -> dict[str, Any]:
    """Collect stdout lines until they form one JSON document (bounded by ``timeout_s``)."""
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        try:
            text += lines.get(timeout=0.5)
        except queue.Empty:
            if process.poll() is not None:
                stderr = process.stderr.read() if process.stderr else ""
                raise AssertionError(f"CLI exited with {process.returncode}: {stderr}") from None
            continue
        try:
            document: dict[str, Any] = json.loads(text)
        except json.JSONDecodeError:
            continue
        return document
    raise AssertionError(f"no JSON from the CLI within {timeout_s}s; got {text!r}")


def _port_accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False
