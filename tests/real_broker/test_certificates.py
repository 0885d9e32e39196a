"""The test PKI issues what the security and rotation tests assume (no broker needed)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from local_cluster import ClusterPki, read_certificate

pytestmark = pytest.mark.real_broker


@pytest.fixture
def pki(tmp_path: Path) -> ClusterPki:
    return ClusterPki.create_or_open(tmp_path / "pki", broker_count=2)


def _common_name(cert: x509.Certificate) -> str:
    return str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def _public_key_pem(cert: x509.Certificate) -> bytes:
    return cert.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def test_reissue_sets_the_requested_expiry(pki: ClusterPki) -> None:
    now = dt.datetime.now(dt.UTC)
    requested = now + dt.timedelta(days=3, hours=12)

    files = pki.issue("publisher", not_after=requested)
    cert = read_certificate(files.cert)

    assert abs(cert.not_valid_after_utc - requested) < dt.timedelta(seconds=1)
    assert (cert.not_valid_after_utc - now).days == 3
    assert cert.not_valid_before_utc <= now


def test_reissue_keeps_the_key_unless_asked_for_a_new_one(pki: ClusterPki) -> None:
    original = read_certificate(pki.identity("publisher").cert)

    same_key = read_certificate(pki.issue("publisher").cert)
    new_key = read_certificate(pki.issue("publisher", new_key=True).cert)

    assert same_key.serial_number != original.serial_number
    assert _public_key_pem(same_key) == _public_key_pem(original)
    assert _public_key_pem(new_key) != _public_key_pem(original)


def test_identities_carry_their_name_as_cn_and_the_rogue_one_another_issuer(
    pki: ClusterPki,
) -> None:
    ca = read_certificate(pki.ca_cert)
    publisher = read_certificate(pki.identity("publisher").cert)
    rogue = read_certificate(pki.identity("rogue-publisher").cert)
    broker = read_certificate(pki.identity("broker-1").cert)

    assert _common_name(publisher) == "publisher"
    assert _common_name(rogue) == "publisher"
    assert publisher.issuer == ca.subject
    assert rogue.issuer != ca.subject
    san = broker.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert set(pki.issued_identities()) == {
        "admin",
        "broker-0",
        "broker-1",
        "consumer",
        "intruder",
        "publisher",
        "rogue-publisher",
    }


def test_private_keys_are_unencrypted_pkcs8_and_not_world_readable(pki: ClusterPki) -> None:
    files = pki.identity("consumer")
    key_pem = files.key.read_bytes()

    assert key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")  # PKCS#8, not encrypted
    assert serialization.load_pem_private_key(key_pem, password=None) is not None
    assert files.key.stat().st_mode & 0o077 == 0
    assert files.keystore.read_bytes() == key_pem + files.cert.read_bytes()
