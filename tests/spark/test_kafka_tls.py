"""PEM files become Kafka's PEM keystore: PKCS#8 key + certificate, owner-only, removed after."""

from __future__ import annotations

import datetime as dt
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from spark_history.errors import HistoryUsageError
from spark_history.kafka_tls import TlsFiles, kafka_tls_options

pytestmark = pytest.mark.spark


def _identity(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "history")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = directory / "key.pem", directory / "cert.pem"
    # The traditional (SEC1) form, which Kafka's PEM keystore does not read as is.
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


def test_key_and_certificate_become_one_private_pem_keystore(tmp_path: Path) -> None:
    key, cert = _identity(tmp_path)
    ca = tmp_path / "ca.pem"
    ca.write_bytes(cert.read_bytes())
    with kafka_tls_options(TlsFiles(ca=ca, cert=cert, key=key)) as options:
        keystore = Path(options["kafka.ssl.keystore.location"])
        text = keystore.read_text()
        assert options["kafka.security.protocol"] == "SSL"
        assert options["kafka.ssl.keystore.type"] == "PEM"
        assert options["kafka.ssl.truststore.type"] == "PEM"
        assert options["kafka.ssl.truststore.location"] == str(ca.resolve())
        assert text.startswith("-----BEGIN PRIVATE KEY-----")
        assert "-----BEGIN CERTIFICATE-----" in text
        assert stat.S_IMODE(keystore.stat().st_mode) == 0o600
    assert not keystore.exists()


def test_no_tls_files_means_no_options() -> None:
    with kafka_tls_options(TlsFiles()) as options:
        assert options == {}


def test_a_certificate_without_its_key_is_a_usage_error(tmp_path: Path) -> None:
    _, cert = _identity(tmp_path)
    with (
        pytest.raises(HistoryUsageError, match="go together"),
        kafka_tls_options(TlsFiles(cert=cert)),
    ):
        pass
