"""The image installs its Python packages only from lock files with hashes
(deploy/container/requirements*.lock, written by deploy/container/lock-requirements.sh): these
tests fail when pyproject.toml's dependencies change without the locks being regenerated, and
when the Dockerfile installs anything but the locked, hashed distributions."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPOSITORY = Path(__file__).resolve().parents[2]
CONTAINER = REPOSITORY / "deploy" / "container"
DOCKERFILE = CONTAINER / "Dockerfile"
REGENERATE = "bash deploy/container/lock-requirements.sh"
PROJECT = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())
# Each lock and the pyproject.toml list it is compiled from.
LOCKS = {
    "requirements-build.lock": PROJECT["build-system"]["requires"],
    "requirements.lock": PROJECT["project"]["dependencies"],
    "requirements-history.lock": PROJECT["project"]["optional-dependencies"]["history"],
}
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)")


@dataclass(frozen=True)
class Pin:
    version: Version
    hashes: tuple[str, ...]
    via: tuple[str, ...]
    """What pip-compile says asked for it: ``pyproject.toml`` for a direct dependency."""


def read_lock(name: str) -> dict[str, Pin]:
    """The pins of a pip-compile lock file by canonical name, with their hashes and origins."""
    pins: dict[str, Pin] = {}
    entries = re.split(r"\n(?=[A-Za-z0-9])", (CONTAINER / name).read_text())
    for entry in entries:
        match = _PIN.match(entry)
        if match is None:
            continue
        hashes = tuple(re.findall(r"--hash=sha256:([0-9a-f]{64})", entry))
        via = tuple(
            origin.strip()
            for origin in re.findall(r"^[ \t]+#[ \t]+(?:via[ \t]+)?(\S.*)$", entry, re.MULTILINE)
            if origin.strip() != "via"
        )
        pins[canonicalize_name(match["name"])] = Pin(Version(match["version"]), hashes, via)
    return pins


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_the_lock_was_written_by_the_script_that_regenerates_it(lock: str) -> None:
    assert REGENERATE in (CONTAINER / lock).read_text().split("\n\n")[0]


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_dependency_in_pyproject_is_pinned_within_its_range(lock: str) -> None:
    pins = read_lock(lock)
    for text in LOCKS[lock]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} ({text}) is not in {lock}: run {REGENERATE}"
        version = pins[name].version
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{lock} pins {name}=={version}, outside pyproject.toml's {text}: run {REGENERATE}"
        )


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_the_direct_dependencies_of_the_lock_are_exactly_pyprojects(lock: str) -> None:
    """A dependency removed from pyproject.toml must leave the lock as well."""
    direct = {name for name, pin in read_lock(lock).items() if "-r pyproject.toml" in pin.via}
    assert direct == {canonicalize_name(Requirement(text).name) for text in LOCKS[lock]}, (
        f"run {REGENERATE}"
    )


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_pin_carries_its_hashes(lock: str) -> None:
    pins = read_lock(lock)
    assert pins
    assert [name for name, pin in pins.items() if not pin.hashes] == []


def test_a_package_in_two_locks_has_one_version() -> None:
    """All three are installed into one environment (the history target's)."""
    versions: dict[str, set[Version]] = {}
    for lock in LOCKS:
        for name, pin in read_lock(lock).items():
            versions.setdefault(name, set()).add(pin.version)
    assert {name: found for name, found in versions.items() if len(found) > 1} == {}


def _pip_installs() -> list[str]:
    """Every `pip install` command of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    commands = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        commands += [part for part in re.split(r"&&|;", line) if re.search(r"pip install", part)]
    return commands


def test_the_dockerfile_installs_packages_only_from_the_hashed_locks() -> None:
    installs = _pip_installs()
    downloads = [command for command in installs if "--no-deps" not in command]
    assert downloads, "no pip install of the dependencies found"
    for command in downloads:
        assert "--require-hashes" in command, command
        assert "--no-build-isolation" in command or "requirements-build.lock" in command, command
        files = re.findall(r"-r\s+(\S+)", command)
        assert files, command
        assert all(Path(file).name in LOCKS for file in files), command
    # The product itself: the local source only, no dependency, no build-time download.
    local = [command for command in installs if "--no-deps" in command]
    assert all("--no-build-isolation" in command for command in local), local
    used = {Path(file).name for command in downloads for file in re.findall(r"-r\s+(\S+)", command)}
    assert used == set(LOCKS)
