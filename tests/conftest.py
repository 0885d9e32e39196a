"""Fixtures every test folder shares: a clean settings environment, a CLI runner, the jar.

``wait_for`` (polling with a deadline) and the plugin jar's path live in ``tests.support``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import PLUGIN_JAR
from volume_quota.cli import main
from volume_quota.config.commands import ALL_SETTINGS
from volume_quota.config.sources import CONFIG_FILE_ENV, env_for
from volume_quota.logging_setup import reset_logging

SETTINGS_ENVIRONMENT = frozenset({CONFIG_FILE_ENV, *(env_for(name) for name in ALL_SETTINGS)})
"""The variables that configure volume-quota; tool caches (VOLUME_QUOTA_HELM...) are kept."""


@pytest.fixture(autouse=True)
def _clean_settings_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own VOLUME_QUOTA_* settings must not leak into any test."""
    for name in SETTINGS_ENVIRONMENT & set(os.environ):
        monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _logging_reset_after_each_test() -> Iterator[None]:
    """A test that runs a command configures logging onto pytest's captured stream, which is
    closed when the test ends: the next test that logs would fail on it."""
    yield
    reset_logging()


@dataclass(frozen=True)
class CliResult:
    status: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``volume-quota`` in-process: ``cli("evaluate", "-")`` -> status, stdout, stderr."""

    def run(*argv: str) -> CliResult:
        try:
            status = main(list(argv))
        except SystemExit as exit_:  # argparse's own errors
            status = int(exit_.code or 0)
        captured = capsys.readouterr()
        return CliResult(status, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def plugin_jar() -> Path:
    """The built broker quota callback; tests/run.sh builds it before pytest runs."""
    if not PLUGIN_JAR.exists():
        raise FileNotFoundError(
            f"{PLUGIN_JAR} is missing: build it with `mvn -q package` in deploy/broker-plugin"
        )
    return PLUGIN_JAR
