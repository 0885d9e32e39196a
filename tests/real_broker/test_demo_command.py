"""`volume-quota demo`: the README's first command, run for a few seconds on a real cluster."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.real_broker


def test_demo_starts_a_cluster_runs_the_sidecar_and_shows_the_decision() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "volume_quota", "demo", "--duration", "10", "--every", "5"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "BROKER  VOLUME" in result.stdout
    assert "cluster decision: OPEN, throttle factor 1.000" in result.stdout
    assert "quota callback loaded" in result.stdout


def test_demo_refuses_a_silly_broker_count() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "volume_quota", "demo", "--brokers", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "volume-quota: error: --brokers must be between 1 and 5"
