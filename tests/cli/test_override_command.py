"""``volume-quota override`` through ``main`` in-process, without a Kafka to write to."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.publisher.tls_material import TestCertificateAuthority
from volume_quota.cli import main


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_override_without_a_client_certificate_warns_that_it_is_unsigned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(TestCertificateAuthority().pem)
    password = tmp_path / "password"
    password.write_text("pa55\n")
    status = main(
        [
            "override",
            "--state=OPEN",
            "--for=5m",
            "--reason=drill",
            f"--bootstrap-servers=127.0.0.1:{closed_port()}",
            "--security-protocol=SASL_SSL",
            f"--tls-ca-file={ca}",
            "--sasl-username=oncall",
            f"--sasl-password-file={password}",
            "--delivery-timeout=1s",
        ]
    )
    error = capsys.readouterr().err
    assert "the override is not signed: deciders with override_signatures=require refuse it" in (
        error
    )
    assert status == 1  # nothing listens there: not written
    assert "override not written" in error


def test_the_help_says_who_may_set_an_override(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["override", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Deciders check it against their override_signers" in text
    assert "message.timestamp.type=LogAppendTime" in text
