"""Helpers shared by every test folder (the fixtures wrapping them are in tests/conftest.py)."""

from __future__ import annotations

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
