"""The kubelet's prober, for pods that podman plays: podman 4.3 has no readiness or startup
probes, so the chart's probes are run here, against the played pod, with the kubelet's rules.

The rules (Kubernetes' "Configure Liveness, Readiness and Startup Probes"): every probe runs
every ``periodSeconds`` (default 10) from ``initialDelaySeconds`` (default 0) after the
container starts, and fails after ``timeoutSeconds`` (default 1); ``failureThreshold``
(default 3) failures in a row of the startup probe, or of the liveness probe once the startup
probe has succeeded, make the kubelet kill and restart the container; readiness and liveness
probes start only once the startup probe (if any) has succeeded; a container is ready after
``successThreshold`` (default 1) readiness successes in a row. An ``httpGet`` succeeds with a
status from 200 to 399, a ``tcpSocket`` when the connection opens. The pods run on the host
network, so the target is 127.0.0.1.

``ProbeTrack`` is the rule alone, fed with results; ``KubeletProber`` runs the probes on a
thread and feeds them.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]
PROBE_NAMES = ("startupProbe", "readinessProbe", "livenessProbe")


@dataclass
class ProbeTrack:
    """One probe of one container, judged as the kubelet judges it."""

    container: str
    kind: str
    period: float
    initial_delay: float
    failure_threshold: int
    success_threshold: int
    failures_in_a_row: int = 0
    successes_in_a_row: int = 0
    succeeded_at: float | None = None
    restart_due: str | None = None
    results: list[tuple[float, bool, str]] = field(default_factory=list)

    @classmethod
    def of(cls, container: str, kind: str, probe: Json) -> ProbeTrack:
        return cls(
            container,
            kind,
            period=float(probe.get("periodSeconds", 10)),
            initial_delay=float(probe.get("initialDelaySeconds", 0)),
            failure_threshold=int(probe.get("failureThreshold", 3)),
            success_threshold=int(probe.get("successThreshold", 1)),
        )

    def record(self, at: float, success: bool, detail: str) -> None:
        self.results.append((at, success, detail))
        if success:
            self.failures_in_a_row = 0
            self.successes_in_a_row += 1
            if self.succeeded_at is None and self.successes_in_a_row >= self.success_threshold:
                self.succeeded_at = at
            return
        self.successes_in_a_row = 0
        self.failures_in_a_row += 1
        restarts = self.kind == "livenessProbe" or (
            self.kind == "startupProbe" and self.succeeded_at is None
        )
        if restarts and self.failures_in_a_row >= self.failure_threshold and not self.restart_due:
            self.restart_due = (
                f"{self.container} {self.kind}: {self.failures_in_a_row} failures in a row "
                f"by {at:.0f} s (failureThreshold {self.failure_threshold}): {detail}"
            )


def probe_once(probe: Json, timeout: float) -> tuple[bool, str]:
    """Run ``probe`` (ports already numbers) once against 127.0.0.1."""
    if "httpGet" in probe:
        target = probe["httpGet"]
        if target.get("scheme", "HTTP") != "HTTP":
            raise ValueError(f"httpGet scheme {target['scheme']} is not run here")
        connection = http.client.HTTPConnection("127.0.0.1", int(target["port"]), timeout=timeout)
        try:
            connection.request("GET", target.get("path", "/"))
            status = connection.getresponse().status
        except OSError as error:
            return False, f"GET {target.get('path', '/')}: {error}"
        finally:
            connection.close()
        return 200 <= status < 400, f"GET {target.get('path', '/')}: {status}"
    if "tcpSocket" in probe:
        port = int(probe["tcpSocket"]["port"])
        try:
            socket.create_connection(("127.0.0.1", port), timeout=timeout).close()
        except OSError as error:
            return False, f"tcp {port}: {error}"
        return True, f"tcp {port}: open"
    raise ValueError(f"probe {sorted(probe)} is not run here (only httpGet and tcpSocket)")


class KubeletProber:
    """Runs every probe of ``probes`` (container -> probe kind -> probe) from ``start()``."""

    def __init__(self, probes: dict[str, dict[str, Json]]) -> None:
        self._probes = probes
        self.tracks = [
            ProbeTrack.of(container, kind, probe)
            for container, by_kind in probes.items()
            for kind, probe in by_kind.items()
        ]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelet-prober", daemon=True)
        self._started = 0.0

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _startup_done(self, container: str) -> bool:
        startup = [t for t in self.tracks if t.container == container and t.kind == "startupProbe"]
        return all(t.succeeded_at is not None for t in startup)

    def _run(self) -> None:
        due = {id(track): track.initial_delay for track in self.tracks}
        while not self._stop.is_set():
            now = time.monotonic() - self._started
            for track in self.tracks:
                if now < due[id(track)] or track.restart_due:
                    continue
                if track.kind != "startupProbe" and not self._startup_done(track.container):
                    continue
                if track.kind == "startupProbe" and track.succeeded_at is not None:
                    continue  # the kubelet stops a startup probe once it succeeded
                probe = self._probes[track.container][track.kind]
                success, detail = probe_once(probe, float(probe.get("timeoutSeconds", 1)))
                track.record(now, success, detail)
                due[id(track)] = now + track.period
            self._stop.wait(0.5)

    def ready_at(self, container: str) -> float | None:
        (readiness,) = [
            t for t in self.tracks if t.container == container and t.kind == "readinessProbe"
        ]
        return readiness.succeeded_at

    def restarts_due(self) -> list[str]:
        return [t.restart_due for t in self.tracks if t.restart_due]
