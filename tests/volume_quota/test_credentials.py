"""Connection settings for SASL/SCRAM over TLS next to mutual TLS: what loads, what each
command gets, and one line per contradiction or missing piece."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509

from consumer.signatures import SignatureOutcome, SignatureTrust, check_signature
from tests.publisher.tls_material import TestCertificateAuthority, TlsPaths
from volume_quota.cli import build_parser
from volume_quota.commands.override import _operator
from volume_quota.config import SidecarSettings, load_settings
from volume_quota.config.commands import ConnectedSettings
from volume_quota.config.sources import load
from volume_quota.errors import UsageError
from volume_quota.kafka_client_config import SaslCredentials
from volume_quota.one_shot import signature_headers


def problems(**values: object) -> list[str]:
    with pytest.raises(UsageError) as raised:
        load_settings(values)
    return list(raised.value.problems)


@pytest.fixture
def tls(tmp_path: Path) -> TlsPaths:
    return TestCertificateAuthority().write_identity(tmp_path / "tls", "sidecar")


def scram(tls: TlsPaths, **more: object) -> dict[str, object]:
    return {
        "bootstrap_servers": "kafka-0:9094",
        "security_protocol": "SASL_SSL",
        "tls_ca_file": tls.ca,
        "sasl_username": "sidecar-0",
        "sasl_password": "pa55",
        **more,
    }


def test_scram_with_a_ca_alone_connects_without_a_client_certificate(tls: TlsPaths) -> None:
    settings = load_settings(scram(tls))
    connection = settings.required_kafka_connection()
    assert connection.security_protocol == "SASL_SSL"
    assert connection.sasl == SaslCredentials("sidecar-0", "pa55", "SCRAM-SHA-512")
    assert connection.ca_file == tls.ca
    assert connection.certificate_file is None
    assert connection.key_file is None
    assert settings.client_tls_files() is None  # nothing to sign snapshots with
    assert settings.tls_paths() == (tls.ca,)


def test_scram_with_a_certificate_keeps_it_for_signing(tls: TlsPaths) -> None:
    settings = load_settings(scram(tls, tls_cert_file=tls.cert, tls_key_file=tls.key))
    files = settings.client_tls_files()
    assert files is not None
    assert (files.certificate_file, files.key_file) == (tls.cert, tls.key)
    connection = settings.required_kafka_connection()
    assert (connection.certificate_file, connection.key_file) == (tls.cert, tls.key)
    assert connection.sasl is not None


def test_the_environment_names_them_and_case_does_not_matter(
    tls: TlsPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_BOOTSTRAP_SERVERS", "kafka-0:9094")
    monkeypatch.setenv("VOLUME_QUOTA_SECURITY_PROTOCOL", "sasl_ssl")
    monkeypatch.setenv("VOLUME_QUOTA_SASL_MECHANISM", "scram-sha-256")
    monkeypatch.setenv("VOLUME_QUOTA_SASL_USERNAME", "sidecar-0")
    monkeypatch.setenv("VOLUME_QUOTA_SASL_PASSWORD", "from-env")
    monkeypatch.setenv("VOLUME_QUOTA_TLS_CA_FILE", str(tls.ca))
    connection = load_settings({}).required_kafka_connection()
    assert connection.sasl == SaslCredentials("sidecar-0", "from-env", "SCRAM-SHA-256")


def test_the_password_file_is_read_without_its_line_break(tls: TlsPaths, tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("from-a-secret\n")
    settings = load_settings(scram(tls, sasl_password=None, sasl_password_file=secret))
    connection = settings.required_kafka_connection()
    assert connection.sasl is not None
    assert connection.sasl.password == "from-a-secret"


def test_an_unreadable_or_empty_password_file_is_one_line_at_start(
    tls: TlsPaths, tmp_path: Path
) -> None:
    missing = tmp_path / "missing"
    assert problems(**scram(tls, sasl_password=None, sasl_password_file=missing)) == [
        "invalid setting sasl_password_file (--sasl-password-file, "
        f"VOLUME_QUOTA_SASL_PASSWORD_FILE): cannot read {missing}: No such file or directory"
    ]
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert problems(**scram(tls, sasl_password=None, sasl_password_file=empty)) == [
        "invalid setting sasl_password_file (--sasl-password-file, "
        f"VOLUME_QUOTA_SASL_PASSWORD_FILE): {empty} is empty"
    ]


def test_each_contradiction_is_its_own_line(tls: TlsPaths, tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("x")
    found = problems(**scram(tls, tls_cert_file=tls.cert, sasl_password_file=secret))
    assert sorted(found) == [
        "invalid setting sasl_password_file (--sasl-password-file, "
        "VOLUME_QUOTA_SASL_PASSWORD_FILE): set sasl_password or sasl_password_file, not both",
        "invalid setting tls_key_file (--tls-key-file, VOLUME_QUOTA_TLS_KEY_FILE): is required "
        "with tls_cert_file: a certificate needs its key",
    ]


def test_scram_settings_without_sasl_ssl_are_refused_not_ignored(tls: TlsPaths) -> None:
    found = problems(
        tls_ca_file=tls.ca,
        tls_cert_file=tls.cert,
        tls_key_file=tls.key,
        sasl_username="sidecar-0",
        sasl_password="pa55",
    )
    protocol = "security_protocol (--security-protocol, VOLUME_QUOTA_SECURITY_PROTOCOL)"
    assert found == [
        "invalid setting sasl_username (--sasl-username, VOLUME_QUOTA_SASL_USERNAME): "
        f"applies only with {protocol}=SASL_SSL",
        "invalid setting sasl_password (VOLUME_QUOTA_SASL_PASSWORD): "
        f"applies only with {protocol}=SASL_SSL",
    ]


@pytest.mark.parametrize(
    ("values", "setting"),
    [
        ({"security_protocol": "PLAINTEXT"}, "security_protocol (--security-protocol"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN"}, "sasl_mechanism"),
        ({"security_protocol": "SASL_SSL", "sasl_username": ""}, "sasl_username"),
    ],
)
def test_unknown_protocols_and_mechanisms_name_the_setting(
    values: dict[str, object], setting: str
) -> None:
    (line,) = problems(**values)
    assert line.startswith(f"invalid setting {setting}")


def test_what_scram_still_lacks_is_listed_at_once(tls: TlsPaths) -> None:
    settings = load(ConnectedSettings, {"security_protocol": "SASL_SSL"})
    with pytest.raises(UsageError) as raised:
        settings.required_kafka_connection()
    assert [line.split(" (")[0] for line in raised.value.problems] == [
        "bootstrap_servers",
        "tls_ca_file",
        "sasl_username",
        "sasl_password",
    ]
    only_password_missing = load(
        ConnectedSettings, {**scram(tls), "sasl_password": None, "bootstrap_servers": "k:1"}
    )
    with pytest.raises(UsageError) as raised:
        only_password_missing.required_kafka_connection()
    assert len(raised.value.problems) == 1
    assert "sasl_password_file (--sasl-password-file" in raised.value.problems[0]


def test_mutual_tls_still_needs_its_certificate() -> None:
    settings = load(ConnectedSettings, {"bootstrap_servers": "k:1"})
    with pytest.raises(UsageError, match="TLS files are required"):
        settings.required_kafka_connection()


def test_the_password_is_not_a_flag_but_its_file_is() -> None:
    options = {
        option
        for action in build_parser()._subparsers._group_actions[0].choices["sidecar"]._actions  # type: ignore[union-attr, index]
        for option in action.option_strings
    }
    assert {"--security-protocol", "--sasl-mechanism", "--sasl-username"} <= options
    assert "--sasl-password-file" in options
    assert "--sasl-password" not in options


def test_the_password_does_not_show_in_the_settings_repr(tls: TlsPaths) -> None:
    settings: SidecarSettings = load_settings(scram(tls))
    assert "pa55" not in repr(settings)


def test_one_shot_messages_are_signed_only_with_a_certificate(tls: TlsPaths) -> None:
    without = load(ConnectedSettings, scram(tls))
    assert signature_headers(without, b"3", b"{}") == []
    with_certificate = load(
        ConnectedSettings, scram(tls, tls_cert_file=tls.cert, tls_key_file=tls.key)
    )
    headers = signature_headers(with_certificate, b"3", b"{}")
    trust = SignatureTrust(
        [x509.load_pem_x509_certificate(tls.ca.read_bytes())], cluster_signers=["CN=sidecar"]
    )
    check = check_signature(b"3", b"{}", headers, trust, datetime.now(UTC))
    assert check.outcome is SignatureOutcome.VALID, check.detail


def test_an_override_without_a_certificate_is_set_by_the_scram_user(tls: TlsPaths) -> None:
    assert _operator(load(ConnectedSettings, scram(tls))) == "sidecar-0"
    with_certificate = scram(tls, tls_cert_file=tls.cert, tls_key_file=tls.key)
    assert _operator(load(ConnectedSettings, with_certificate)) == "sidecar"
