"""``--tmpfs`` (root only): one tmpfs per broker, so that each broker has a volume of its own,
as in the end-to-end suite; without it every broker's log dir is on the user's filesystem."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

TMPFS_SIZE = "3g"
"""Room for the demo's limits (2 GiB free at least); tmpfs takes memory only for what is
written, well under 1 GiB on the breaching broker."""

_LOG = logging.getLogger(__name__)


class TmpfsVolumes:
    """Mount points ``<workdir>/volume-<i>``; :meth:`unmount` is safe to call at any time."""

    def __init__(self, workdir: Path, broker_count: int) -> None:
        self.mount_points = [workdir / f"volume-{index}" for index in range(broker_count)]
        self._mounted: list[Path] = []

    @staticmethod
    def check_allowed() -> str | None:
        """Why this process cannot mount, or None."""
        if os.geteuid() != 0:
            return "--tmpfs needs root (it mounts one tmpfs per broker)"
        return None

    def mount(self) -> list[list[Path]]:
        """Mount every volume; return each broker's log dirs (one per volume)."""
        for point in self.mount_points:
            point.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs", str(point)],
                check=True,
                capture_output=True,
            )
            self._mounted.append(point)
        return [[point / "kafka-logs"] for point in self.mount_points]

    def unmount(self) -> None:
        """After the brokers have stopped: a plain umount, or a lazy one if something holds on."""
        while self._mounted:
            point = self._mounted.pop()
            done = subprocess.run(["umount", str(point)], capture_output=True, check=False)
            if done.returncode != 0:
                _LOG.warning("umount %s: %s; detaching it lazily", point, done.stderr.strip())
                subprocess.run(["umount", "--lazy", str(point)], capture_output=True, check=False)
