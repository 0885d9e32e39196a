"""`volume-quota demo --tmpfs` (root): every broker gets a tmpfs of its own, unmounted at exit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.demo.demo_process import demo_command, of_kind, parse_events

pytestmark = [pytest.mark.real_broker, pytest.mark.real_fs]


def test_each_broker_watches_its_own_tmpfs_and_nothing_stays_mounted(tmp_path: Path) -> None:
    parent = tmp_path / "demo"
    parent.mkdir()
    command = demo_command(parent, tmp_path / "demo.log", "--tmpfs", "--scenario=none")
    result = subprocess.run(
        [*command, "--brokers=2", "--duration=5"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    events = parse_events(result.stdout)
    notice = of_kind(events, "notice")[0]
    assert notice["limits"]["sharedFilesystem"] is False
    assert notice["text"].startswith("Each broker has its own volume.")
    workdir = of_kind(events, "started")[0]["dir"]
    mounts = Path("/proc/mounts").read_text()
    assert workdir not in mounts
    assert list(parent.iterdir()) == []
