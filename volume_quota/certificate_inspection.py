"""Reading PEM certificates and keys: expiry, and whether a key belongs to a certificate (pure).

Works on bytes already read; the files are read by ``certificate_files``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes


class CertificateError(ValueError):
    """A PEM file that cannot be used: unreadable, not PEM, wrong password, key mismatch."""


@dataclass(frozen=True, slots=True)
class CertificateSummary:
    subject: str
    not_after: datetime


def summarize_certificate(pem: bytes) -> CertificateSummary:
    """The first certificate in ``pem`` (the leaf in a chain file)."""
    certificate = _first_certificate(pem)
    return CertificateSummary(certificate.subject.rfc4514_string(), certificate.not_valid_after_utc)


def count_certificates(pem: bytes) -> int:
    """How many certificates a CA bundle holds; ``CertificateError`` when it holds none."""
    try:
        certificates = x509.load_pem_x509_certificates(pem)
    except ValueError:
        raise CertificateError("holds no PEM certificate") from None
    return len(certificates)


def seconds_until_expiry(summary: CertificateSummary, now: datetime) -> float:
    """Negative once the certificate has expired."""
    return (summary.not_after - now).total_seconds()


def refusal_of_rotation(new: CertificateSummary, now: datetime) -> str | None:
    """Why a rotated certificate must not replace the one in use, or None to take it.

    An expired certificate can never connect: taking it would drop clients that work for
    ones the brokers refuse (a renewal that wrote an old file back, a clock-skewed issuer).
    Keeping the working clients keeps the broker's snapshots flowing until a usable renewal
    arrives or the old certificate expires too."""
    if new.not_after <= now:
        return (
            f"the new certificate ({new.subject}) expired at {new.not_after.isoformat()}: "
            "keeping the one in use"
        )
    return None


def check_key_matches_certificate(
    certificate_pem: bytes, key_pem: bytes, password: bytes | None = None
) -> None:
    """Raise ``CertificateError`` unless ``key_pem`` is the private key of the certificate.

    During a rotation the certificate and key files are replaced one after the other; a
    mismatch means the rotation is not finished yet.
    """
    certificate = _first_certificate(certificate_pem)
    key = load_private_key(key_pem, password)
    public_format = serialization.PublicFormat.SubjectPublicKeyInfo
    encoding = serialization.Encoding.DER
    if key.public_key().public_bytes(
        encoding, public_format
    ) != certificate.public_key().public_bytes(encoding, public_format):
        raise CertificateError("the private key does not belong to the certificate")


def load_private_key(key_pem: bytes, password: bytes | None = None) -> PrivateKeyTypes:
    try:
        return serialization.load_pem_private_key(key_pem, password=password)
    except TypeError as error:
        raise CertificateError(f"cannot open the private key: {error}") from None
    except ValueError as error:
        raise CertificateError(f"not a usable PEM private key ({error})") from None


def _first_certificate(pem: bytes) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificates(pem)[0]
    except ValueError:
        raise CertificateError("holds no PEM certificate") from None
