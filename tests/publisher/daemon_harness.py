"""Running the publisher daemon in tests: as a subprocess or in-process, with bounded waits."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from prometheus_client.parser import text_string_to_metric_families

from tests.support import wait_for
from volume_quota.config import load_settings
from volume_quota.daemons.publisher import PublisherDaemon
from volume_quota.logging_setup import configure_logging


def http_get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read()


def metric_values(port: int) -> dict[str, float]:
    """Every sample of ``/metrics`` as ``name{label="v",...}`` -> value; the text must parse as
    Prometheus exposition."""
    body = http_get(port, "/metrics")[1].decode()
    values = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            labels = ",".join(f'{key}="{value}"' for key, value in sorted(sample.labels.items()))
            values[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return values


def flags(settings: Mapping[str, object]) -> list[str]:
    """``{"broker_id": 3}`` -> ``["--broker-id", "3"]``."""
    arguments = []
    for name, value in settings.items():
        arguments += ["--" + name.replace("_", "-"), str(value)]
    return arguments


class LogReader:
    """Collects a daemon's stderr JSON lines in a thread; a non-JSON line is kept as raw text."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.events: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            text = line.decode(errors="replace").rstrip("\n")
            self.raw.append(text)
            try:
                self.events.append(json.loads(text))
            except ValueError:
                continue

    def find(self, event: str) -> dict[str, Any] | None:
        return next((e for e in list(self.events) if e.get("event") == event), None)

    def non_json_lines(self) -> list[str]:
        lines = []
        for line in list(self.raw):
            try:
                json.loads(line)
            except ValueError:
                lines.append(line)
        return lines


class DaemonProcess:
    """``python -m volume_quota publish ...`` (or ``command``) as a subprocess; killed on exit if
    still running."""

    def __init__(
        self,
        settings: Mapping[str, object],
        extra_arguments: Sequence[str] = (),
        command: str = "publish",
    ) -> None:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("VOLUME_QUOTA_")}
        self.command = command
        self.process = subprocess.Popen(
            [sys.executable, "-m", "volume_quota", command, *flags(settings), *extra_arguments],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=environment,
        )
        assert self.process.stderr is not None
        self.logs = LogReader(self.process.stderr)

    def wait_started(self, timeout: float = 30) -> int:
        """The HTTP port, from the ``publisher started`` log line (a sidecar's: from ``http
        endpoints serving``, the one server of both roles)."""
        event = "publisher started" if self.command == "publish" else "http endpoints serving"
        wait_for(
            lambda: (
                (
                    self.logs.find("publisher started") is not None
                    and self.logs.find(event) is not None
                )
                or self.process.poll() is not None
            ),
            timeout,
            "the daemon to start",
        )
        started = self.logs.find(event)
        assert started is not None, "\n".join(self.logs.raw)
        return int(started["http_port" if self.command == "publish" else "port"])

    def terminate(self, timeout: float = 15) -> tuple[int, float]:
        """SIGTERM; (exit status, seconds it took to exit)."""
        asked = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(timeout=timeout)
        return status, time.monotonic() - asked

    def __enter__(self) -> DaemonProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


class InProcessDaemon:
    """``PublisherDaemon`` running in a thread of the test process; logs kept in memory."""

    def __init__(self, settings: Mapping[str, object], config_file: Path | None = None) -> None:
        self.log_output = io.StringIO()
        configure_logging("info", self.log_output)
        self.daemon = PublisherDaemon(load_settings(settings, config_file))
        self.stop = threading.Event()
        self.outcome: list[int | BaseException] = []
        self._thread = threading.Thread(target=self._run, name="publisher-under-test")

    def _run(self) -> None:
        try:
            self.outcome.append(self.daemon.run(self.stop))
        except BaseException as error:  # the test asserts on it
            self.outcome.append(error)

    @property
    def port(self) -> int:
        return self.daemon.http_port

    def metric(self, name: str, **labels: str) -> float:
        value = self.daemon.metrics.registry.get_sample_value(name, labels or None)
        return 0.0 if value is None else value

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log_output.getvalue().splitlines()]

    def __enter__(self) -> InProcessDaemon:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop.set()
        self._thread.join(timeout=20)
        assert not self._thread.is_alive(), "the daemon did not stop within 20 s"
