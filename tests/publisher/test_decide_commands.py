"""``decide``, ``sidecar`` and ``status``: configuration mistakes end in one line, exit 2.

Their Kafka behaviour is covered against a real cluster in tests/e2e and tests/real_broker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.decision import OnMissing
from tests.publisher.tls_material import TestCertificateAuthority
from volume_quota.cli import main
from volume_quota.config import load_settings


@pytest.fixture
def tls_flags(tmp_path: Path) -> list[str]:
    authority = TestCertificateAuthority()
    files = authority.write_identity(tmp_path / "tls", "publisher")
    return [
        "--bootstrap-servers",
        "127.0.0.1:1",
        "--tls-ca-file",
        str(files.ca),
        "--tls-cert-file",
        str(files.cert),
        "--tls-key-file",
        str(files.key),
    ]


def errors_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    try:
        status = main(list(argv))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    assert status == 2
    errors = capsys.readouterr().err
    assert "Traceback" not in errors
    assert len(errors.strip().splitlines()) <= 2  # argparse adds its usage line
    return errors


def test_decide_needs_a_decision_file(
    capsys: pytest.CaptureFixture[str], tls_flags: list[str]
) -> None:
    errors = errors_of(capsys, "decide", *tls_flags)
    assert "decision_file (--decision-file, VOLUME_QUOTA_DECISION_FILE) is required" in errors


def test_decision_file_directory_must_exist(
    capsys: pytest.CaptureFixture[str], tls_flags: list[str]
) -> None:
    errors = errors_of(capsys, "decide", *tls_flags, "--decision-file", "/no/such/dir/d.json")
    assert "directory /no/such/dir does not exist" in errors


def test_on_missing_must_be_pause_or_open(
    capsys: pytest.CaptureFixture[str], tls_flags: list[str], tmp_path: Path
) -> None:
    errors = errors_of(
        capsys,
        "sidecar",
        *tls_flags,
        "--decision-file",
        str(tmp_path / "d.json"),
        "--on-missing",
        "MAYBE",
    )
    assert "on_missing (--on-missing, VOLUME_QUOTA_ON_MISSING)" in errors


def test_status_needs_the_connection(capsys: pytest.CaptureFixture[str]) -> None:
    assert "bootstrap_servers (--bootstrap-servers" in errors_of(capsys, "status")


def test_consumer_settings_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_ON_MISSING", "open")
    monkeypatch.setenv("VOLUME_QUOTA_STALE_AFTER", "45s")
    monkeypatch.setenv("VOLUME_QUOTA_DECISION_FILE", str(tmp_path / "decision.json"))
    settings = load_settings()
    assert settings.on_missing is OnMissing.OPEN
    assert settings.stale_after == 45
    assert settings.required_decision_file() == tmp_path / "decision.json"
