"""`volume-quota demo`'s command line: help without the cluster, one-line refusals (no broker)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import volume_quota.demo.runner
from volume_quota.cli import main

GIB = 1024**3


def test_help_loads_neither_the_local_cluster_nor_the_demo_itself() -> None:
    probe = (
        "import sys, contextlib, io\n"
        "from volume_quota.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        main(['demo', '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert '--scenario {fill,none}' in out.getvalue(), out.getvalue()\n"
        "assert '--json-lines' in out.getvalue()\n"
        "loaded = ('local_cluster', 'volume_quota.demo.runner', 'volume_quota.demo.screen')\n"
        "print(sorted(m for m in loaded if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_silly_broker_count_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--brokers", "0"]) == 2
    assert capsys.readouterr().err == "volume-quota: error: --brokers must be between 1 and 5\n"


def test_a_filesystem_with_too_little_room_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(volume_quota.demo.runner, "free_bytes", lambda _path: GIB)
    assert main(["demo", "--dir", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("volume-quota: error: the demo needs 2.0 GiB free")
    assert error.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # nothing was created


def test_watch_only_mode_does_not_need_room_to_fill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--scenario none writes nothing, so a full disk does not stop it (it fails later here,
    on purpose, where the cluster would start)."""
    monkeypatch.setattr(volume_quota.demo.runner, "free_bytes", lambda _path: GIB)

    def no_cluster(*_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(volume_quota.demo.runner, "_run", no_cluster)
    arguments = ["demo", "--scenario", "none", "--json-lines", "--dir", str(tmp_path)]
    assert main(arguments) == 130
    assert list(tmp_path.iterdir()) == [], "the interrupted demo removed its directory"


def test_tmpfs_volumes_are_refused_without_root(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert main(["demo", "--tmpfs"]) == 2
    assert capsys.readouterr().err == (
        "volume-quota: error: --tmpfs needs root (it mounts one tmpfs per broker)\n"
    )
