"""Throw-away certificates for unit tests: a CA and leaf certificates written as PEM files."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class TlsPaths:
    ca: Path
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey, password: bytes | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


class TestCertificateAuthority:
    __test__ = False  # not a test class

    def __init__(
        self,
        valid_until: dt.datetime | None = None,
        is_ca: bool = True,
        key_usage: x509.KeyUsage | None = None,
    ) -> None:
        """A self-signed CA, valid for ten years unless ``valid_until``; ``is_ca=False`` leaves
        out the ``CA:TRUE`` basic constraint, ``key_usage`` adds that extension."""
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        not_after = valid_until or now + dt.timedelta(days=3650)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name("test-ca"))
            .issuer_name(_name("test-ca"))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(min(now, not_after) - dt.timedelta(hours=1))
            .not_valid_after(not_after)
        )
        if is_ca:
            builder = builder.add_extension(
                x509.BasicConstraints(ca=True, path_length=None), critical=True
            )
        if key_usage is not None:
            builder = builder.add_extension(key_usage, critical=True)
        self.certificate = builder.sign(self.key, hashes.SHA256())

    @property
    def pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def issue(
        self, common_name: str, valid_for: dt.timedelta = dt.timedelta(days=30)
    ) -> tuple[bytes, bytes]:
        """(certificate PEM, unencrypted key PEM) for ``common_name``."""
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = self.certify(key.public_key(), common_name, valid_for)
        return certificate.public_bytes(serialization.Encoding.PEM), _key_pem(key)

    def certify(
        self,
        public_key: CertificatePublicKeyTypes,
        common_name: str | x509.Name,
        valid_for: dt.timedelta = dt.timedelta(days=30),
        dns_names: tuple[str, ...] = (),
    ) -> x509.Certificate:
        """A certificate for ``public_key`` (any type), CN=``common_name`` (or that whole subject),
        with DNS names."""
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(common_name if isinstance(common_name, x509.Name) else _name(common_name))
            .issuer_name(self.certificate.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + valid_for)
        )
        if dns_names:
            alternatives = x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names])
            builder = builder.add_extension(alternatives, critical=False)
        return builder.sign(self.key, hashes.SHA256())

    def write_identity(
        self, directory: Path, common_name: str, valid_for: dt.timedelta = dt.timedelta(days=30)
    ) -> TlsPaths:
        directory.mkdir(parents=True, exist_ok=True)
        certificate, key = self.issue(common_name, valid_for)
        paths = TlsPaths(directory / "ca.pem", directory / "cert.pem", directory / "key.pem")
        paths.ca.write_bytes(self.pem)
        paths.cert.write_bytes(certificate)
        paths.key.write_bytes(key)
        return paths


def encrypted_key_pem(password: bytes) -> bytes:
    return _key_pem(ec.generate_private_key(ec.SECP256R1()), password)
