"""One `volume-quota sidecar` subprocess per broker, its output appended to the demo's log."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from schemas.decision import QuotaDecision


def read_decision(path: Path) -> QuotaDecision | None:
    """A broker's decision file as the callback reads it; None while missing or invalid."""
    try:
        return QuotaDecision.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None


class SidecarProcess:
    """`python -m volume_quota sidecar` for one broker; dies with the demo (pdeathsig)."""

    def __init__(
        self, arguments: list[str], decision_file: Path, log_file: Path, workdir: Path
    ) -> None:
        self.arguments = arguments
        self.decision_file = decision_file
        self.log_file = log_file
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        setpriv = shutil.which("setpriv")
        prefix = [setpriv, "--pdeathsig", "TERM"] if setpriv else []
        environment = {k: v for k, v in os.environ.items() if not k.startswith("VOLUME_QUOTA_")}
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                [*prefix, sys.executable, "-m", "volume_quota", "sidecar", *self.arguments],
                env=environment,
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: the terminal's Ctrl-C reaches the demo, which stops it.
                start_new_session=True,
            )

    def exit_code(self) -> int | None:
        """None while running (or never started)."""
        return None if self.process is None else self.process.poll()

    def signal_stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout_s: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.process = None


def stop_all(sidecars: list[SidecarProcess], timeout_s: float = 10.0) -> None:
    """SIGTERM to all at once, then wait for each (SIGKILL after the timeout)."""
    for sidecar in sidecars:
        sidecar.signal_stop()
    for sidecar in sidecars:
        sidecar.wait(timeout_s)


def check_sidecars(sidecars: list[SidecarProcess]) -> None:
    """Raise (one line; the sidecar's own error is in the log) if a sidecar has exited."""
    for index, sidecar in enumerate(sidecars):
        code = sidecar.exit_code()
        if code is not None:
            raise RuntimeError(
                f"the sidecar of broker {index} exited with code {code}; see {sidecar.log_file}"
            )
