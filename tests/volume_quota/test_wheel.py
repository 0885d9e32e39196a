"""The product installs and runs from its package set alone: no deploy/, no tests/, no checkout.

A wheel is built from a copy holding only pyproject.toml, README.md and the packages, installed
into a fresh virtual environment (its dependencies from the package index, as a user gets
them), and the installed command answers ``--help`` and decides with ``evaluate``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
PACKAGES = ("volume_quota", "schemas", "publisher", "consumer", "spark_history")
SNAPSHOT = {
    "schemaVersion": 1,
    "brokerId": 0,
    "snapshotAt": "2026-11-22T12:00:00Z",
    "softLimit": {"type": "MinFreePercentage", "level": 20},
    "hardLimit": {"type": "MinFreePercentage", "level": 10},
    "volumes": [{"volumeName": "/dev/sda", "capacity": 1000, "consumed": 950}],
}


def run(*command: str | Path, cwd: Path | None = None, stdin: str | None = None) -> str:
    result = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_wheel_of_the_packages_alone_installs_and_runs(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPOSITORY / name, source / name)
    for package in PACKAGES:
        shutil.copytree(
            REPOSITORY / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps",
        "--quiet", "-w", wheels, source)  # fmt: skip
    (wheel,) = wheels.glob("kafka_volume_quota-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        packed = {name for name in archive.namelist() if name.endswith(".py")}
    modules = {
        path.relative_to(source).as_posix()
        for package in PACKAGES
        for path in (source / package).rglob("*.py")
    }
    assert modules - packed == set(), "modules of the tree missing from the wheel"

    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel)
    command = environment / "bin" / "volume-quota"

    assert "evaluate" in run(command, "--help")
    decision = json.loads(
        run(command, "evaluate", "-", "--at", "2026-11-22T12:00:05Z", stdin=json.dumps(SNAPSHOT))
    )
    assert decision["state"] == "PAUSE"  # 5 % free is under the 10 % hard limit
    assert "local_cluster" not in run(python, "-m", "pip", "list")
