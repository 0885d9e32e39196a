"""Bad configuration through the real entry point: exit status 2 and one line naming the setting."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.publisher.tls_material import TestCertificateAuthority
from volume_quota.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err  # (the in-process form of the `cli` fixture)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["publish", "--once", "--print", "--log-dirs", "/"], "broker_id (--broker-id"),
        (["publish", "--once", "--print", "--broker-id", "1"], "no log dir to measure"),
        (
            ["publish", "--once", "--print", "--broker-id", "1", "--log-dirs", "/nope"],
            "invalid setting log_dirs (--log-dirs, VOLUME_QUOTA_LOG_DIRS): "
            "log dir /nope does not exist",
        ),
        (
            [
                "publish",
                "--once",
                "--print",
                "--broker-id",
                "1",
                "--log-dirs",
                "/",
                "--soft-limit",
                "Percent:5",
            ],
            "invalid setting soft_limit (--soft-limit, VOLUME_QUOTA_SOFT_LIMIT): "
            "unknown limit type 'Percent'",
        ),
        (
            ["publish", "--once", "--print", "--broker-id", "one", "--log-dirs", "/"],
            "invalid setting broker_id (--broker-id, VOLUME_QUOTA_BROKER_ID)",
        ),
        (
            [
                "publish",
                "--once",
                "--print",
                "--broker-id",
                "1",
                "--log-dirs",
                "/",
                "--volume-limit",
                "/elsewhere:soft=MinFreeBytes:1",
            ],
            "volume limit for '/elsewhere' matches no log dir volume",
        ),
        (["publish", "--print", "--broker-id", "1", "--log-dirs", "/"], "--print needs --once"),
        (["retire"], "broker_id (--broker-id"),
        (["publish", "--config", "/nope.toml"], "--config /nope.toml: No such file or directory"),
    ],
)
def test_bad_configuration_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    status, out, err = run_cli(capsys, *argv)
    assert status == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("volume-quota: error: ")
    assert expected in lines[0]


BOOTSTRAP_REQUIRED = (
    "volume-quota: error: bootstrap_servers (--bootstrap-servers, "
    "VOLUME_QUOTA_BOOTSTRAP_SERVERS) is required"
)


@pytest.mark.parametrize(
    "argv", [["publish", "--broker-id", "1", "--log-dirs", "/"], ["retire", "--broker-id", "4"]]
)
def test_every_missing_connection_setting_is_named_at_once(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    status, out, err = run_cli(capsys, *argv)
    assert (status, out) == (2, "")
    assert err.splitlines() == [
        BOOTSTRAP_REQUIRED,
        "volume-quota: error: TLS files are required: set tls_ca_file (--tls-ca-file, "
        "VOLUME_QUOTA_TLS_CA_FILE), tls_cert_file (--tls-cert-file, VOLUME_QUOTA_TLS_CERT_FILE), "
        "tls_key_file (--tls-key-file, VOLUME_QUOTA_TLS_KEY_FILE)",
    ]
    status, out, err = run_cli(capsys, *argv, "--security-protocol", "sasl_ssl")
    assert (status, out) == (2, "")
    assert err.splitlines() == [
        BOOTSTRAP_REQUIRED,
        "volume-quota: error: tls_ca_file (--tls-ca-file, VOLUME_QUOTA_TLS_CA_FILE) is required "
        "with security_protocol=SASL_SSL: it verifies the brokers' certificates",
        "volume-quota: error: sasl_username (--sasl-username, VOLUME_QUOTA_SASL_USERNAME) is "
        "required with security_protocol=SASL_SSL",
        "volume-quota: error: sasl_password (VOLUME_QUOTA_SASL_PASSWORD) or "
        "sasl_password_file (--sasl-password-file, VOLUME_QUOTA_SASL_PASSWORD_FILE) is "
        "required with security_protocol=SASL_SSL",
    ]


def test_every_problem_at_start_is_reported_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, err = run_cli(
        capsys,
        "sidecar",
        "--broker-id=1",
        f"--log-dirs={tmp_path / 'gone'}",
        "--bootstrap-servers=h:1",
        f"--decision-file={tmp_path / 'no-dir' / 'decision.json'}",
        "--tls-ca-file=/nope-ca.pem",
        "--tls-cert-file=/nope-cert.pem",
        "--tls-key-file=/nope-key.pem",
    )
    assert status == 2
    assert out == ""
    assert err.splitlines() == [
        "volume-quota: error: invalid setting log_dirs (--log-dirs, VOLUME_QUOTA_LOG_DIRS): "
        f"log dir {tmp_path / 'gone'} does not exist",
        "volume-quota: error: invalid setting decision_file (--decision-file, "
        f"VOLUME_QUOTA_DECISION_FILE): directory {tmp_path / 'no-dir'} does not exist",
        "volume-quota: error: invalid setting tls_ca_file (--tls-ca-file, "
        "VOLUME_QUOTA_TLS_CA_FILE): cannot read /nope-ca.pem: No such file or directory",
        "volume-quota: error: invalid setting tls_cert_file (--tls-cert-file, "
        "VOLUME_QUOTA_TLS_CERT_FILE): cannot read /nope-cert.pem: No such file or directory",
        "volume-quota: error: invalid setting tls_key_file (--tls-key-file, "
        "VOLUME_QUOTA_TLS_KEY_FILE): cannot read /nope-key.pem: No such file or directory",
    ]


def test_environment_mistakes_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_SAMPLE_INTERVAL", "often")
    status, _out, err = run_cli(
        capsys, "publish", "--once", "--print", "--broker-id", "1", "--log-dirs", "/"
    )
    assert status == 2
    assert err.strip() == (
        "volume-quota: error: invalid setting sample_interval (--sample-interval, "
        "VOLUME_QUOTA_SAMPLE_INTERVAL): 'often' is not a duration "
        "(examples: 500ms, 1s, 10, 5m, 24h, 7d)"
    )


def test_config_file_from_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "p.toml"
    config.write_text('hard_limit = "MinFreeBytes:-1"\n')
    monkeypatch.setenv("VOLUME_QUOTA_CONFIG", str(config))
    status, _out, err = run_cli(
        capsys, "publish", "--once", "--print", "--broker-id", "1", "--log-dirs", "/"
    )
    assert status == 2
    assert "invalid setting hard_limit (--hard-limit, VOLUME_QUOTA_HARD_LIMIT)" in err


def test_print_once_writes_one_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, _err = run_cli(
        capsys, "publish", "--once", "--print", "--broker-id", "12", "--log-dirs", str(tmp_path)
    )
    assert status == 0
    assert out.count("\n") == 1
    assert '"brokerId":12' in out


def test_no_traceback_from_the_installed_entry_point(tmp_path: Path) -> None:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("VOLUME_QUOTA_")
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "volume_quota",
            "publish",
            "--once",
            "--print",
            "--broker-id",
            "1",
            "--log-dirs",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert f"log dir {tmp_path / 'missing'} does not exist" in result.stderr


def test_a_busy_metrics_port_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    authority = TestCertificateAuthority()
    tls = authority.write_identity(tmp_path / "tls", "publisher")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        status, _out, err = run_cli(
            capsys,
            "publish",
            "--broker-id", "1",
            "--log-dirs", str(tmp_path),
            "--bootstrap-servers", "127.0.0.1:9",
            "--tls-ca-file", str(tls.ca),
            "--tls-cert-file", str(tls.cert),
            "--tls-key-file", str(tls.key),
            "--metrics-host", "127.0.0.1",
            "--metrics-port", str(port),
        )  # fmt: skip
    assert status == 2
    assert err.splitlines() == [
        "volume-quota: error: metrics_port (--metrics-port, VOLUME_QUOTA_METRICS_PORT): "
        f"cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
