"""`volume-quota demo --scenario none`: today's watch-only mode, a few seconds on a real cluster.

The scripted story (fill, throttle, pause, recover) is tested end to end in tests/demo.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_broker


def test_watch_only_mode_starts_a_cluster_runs_the_sidecars_and_shows_the_decision(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "volume_quota",
            "demo",
            "--scenario=none",
            "--brokers=1",
            "--duration=8",
            "--json-lines",
            f"--dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == "", "start-up warnings go to the log file, not the terminal"
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [event["event"] for event in events]
    assert kinds[0] == "started"
    assert kinds[-1] == "stopped"
    assert "phase" not in kinds, "watch-only mode runs no story"
    decisions = [event for event in events if event["event"] == "decision"]
    assert [event["state"] for event in decisions] == ["OPEN"]
    samples = [event for event in events if event["event"] == "sample"]
    assert len(samples) >= 8
    assert all(sample["rates"] == {} for sample in samples), "no producers"
    assert list(tmp_path.iterdir()) == [], "the demo's directory is removed"


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
