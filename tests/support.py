"""Helpers shared by every test folder (the fixtures wrapping them are in tests/conftest.py)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
PLUGIN_JAR = REPOSITORY / "deploy/broker-plugin/target/volume-quota-broker-plugin-0.1.0.jar"
"""The broker quota callback, built by ``mvn -q package`` in deploy/broker-plugin."""


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` every 0.1 s; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def du_bytes(*paths: Path) -> int:
    """What ``du`` counts for ``paths`` together: allocated bytes, the figure sidecars report."""
    output = subprocess.run(
        ["du", "-s", "-c", "--block-size=1", *map(str, paths)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(output.splitlines()[-1].split()[0])


def partition_dirs(data_dirs: tuple[Path, ...], topic: str) -> list[Path]:
    """The ``<topic>-<partition>`` directories of ``topic`` in a broker's log dirs."""
    return [
        path
        for data_dir in data_dirs
        for path in data_dir.iterdir()
        if path.name.rpartition("-")[0] == topic
    ]


HOST_DISK_LIMITS = {"soft_limit": "MinFreePercentage:1", "hard_limit": "MinFreePercentage:0.5"}
"""For tests whose brokers write to the machine's own disk and expect OPEN: the default soft
limit (15 % free) would THROTTLE on a machine whose disk is more than 85 % full (a fresh CI
machine with its caches and images was at 87 %)."""
