"""Who may speak for which broker: signatures made by the publisher's signer, checked here.

Certificates come from a throw-away CA (tests/publisher/tls_material.py), not from the code
under test; every case names the outcome the contract in consumer/signatures.py promises.
"""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.oid import NameOID

from consumer.signatures import (
    SignatureOutcome,
    SignatureTrust,
    check_signature,
    identity_pattern,
)
from publisher.signing import SnapshotSigner, UnsupportedKeyError
from schemas.signature import SIGNATURE_HEADER, SIGNER_HEADER
from tests.publisher.tls_material import TestCertificateAuthority

CA = TestCertificateAuthority()
TRUST = SignatureTrust(
    ca_certificates=[CA.certificate],
    broker_identities=["CN=kafka-{broker}", "DNS:kafka-{broker}.kafka.svc"],
    cluster_signers=["CN=volume-quota-agent"],
)
FULL = b'{"brokerId": 2, "volumes": "...full"}'


def signer(
    common_name: str,
    key: PrivateKeyTypes | None = None,
    authority: TestCertificateAuthority = CA,
    valid_for: dt.timedelta = dt.timedelta(days=30),
    dns_names: tuple[str, ...] = (),
) -> SnapshotSigner:
    private_key = key or ec.generate_private_key(ec.SECP256R1())
    certificate = authority.certify(private_key.public_key(), common_name, valid_for, dns_names)  # type: ignore[arg-type]
    return SnapshotSigner(private_key, certificate.public_bytes(serialization.Encoding.DER))


def outcome(
    headers: list[tuple[str, bytes]], key: bytes = b"2", value: bytes | None = FULL
) -> SignatureOutcome:
    now = dt.datetime.now(dt.UTC)
    return check_signature(key, value, list(headers), TRUST, now).outcome


def test_a_broker_signing_for_itself_is_trusted() -> None:
    assert outcome(signer("kafka-2").headers(b"2", FULL)) is SignatureOutcome.VALID


@pytest.mark.parametrize(
    "key",
    [
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ed25519.Ed25519PrivateKey.generate(),
        ec.generate_private_key(ec.SECP384R1()),
    ],
    ids=["rsa", "ed25519", "p384"],
)
def test_every_usual_key_type_signs(key: PrivateKeyTypes) -> None:
    assert outcome(signer("kafka-2", key).headers(b"2", FULL)) is SignatureOutcome.VALID


def test_one_broker_may_not_speak_for_another() -> None:
    forged = signer("kafka-1").headers(b"2", FULL)  # broker 1's identity, broker 2's key
    assert outcome(forged) is SignatureOutcome.WRONG_IDENTITY


def test_a_dns_name_of_the_certificate_may_name_the_broker() -> None:
    headers = signer("someone", dns_names=("kafka-2.kafka.svc",)).headers(b"2", FULL)
    assert outcome(headers) is SignatureOutcome.VALID
    assert outcome(headers, key=b"3") is not SignatureOutcome.VALID


def test_a_cluster_signer_speaks_for_every_broker_and_for_tombstones() -> None:
    agent = signer("volume-quota-agent")
    assert outcome(agent.headers(b"7", FULL), key=b"7") is SignatureOutcome.VALID
    assert outcome(agent.headers(b"7", None), key=b"7", value=None) is SignatureOutcome.VALID


def test_an_unsigned_message_is_unsigned() -> None:
    assert outcome([]) is SignatureOutcome.UNSIGNED
    assert outcome([(SIGNATURE_HEADER, b"x")]) is SignatureOutcome.UNSIGNED


def test_a_changed_value_or_key_breaks_the_signature() -> None:
    agent = signer("volume-quota-agent")
    assert outcome(agent.headers(b"2", b'{"fine": true}')) is SignatureOutcome.BAD_SIGNATURE
    assert outcome(agent.headers(b"1", FULL), key=b"2") is SignatureOutcome.BAD_SIGNATURE
    # A snapshot's signature does not make a tombstone, nor the reverse.
    assert outcome(agent.headers(b"2", FULL), value=None) is SignatureOutcome.BAD_SIGNATURE


def test_a_certificate_from_another_ca_is_untrusted() -> None:
    rogue = TestCertificateAuthority()
    headers = signer("kafka-2", authority=rogue).headers(b"2", FULL)
    assert outcome(headers) is SignatureOutcome.UNTRUSTED_CERTIFICATE


def test_an_expired_certificate_is_refused() -> None:
    headers = signer("kafka-2", valid_for=dt.timedelta(seconds=-1)).headers(b"2", FULL)
    assert outcome(headers) is SignatureOutcome.EXPIRED_CERTIFICATE


def test_a_signature_is_judged_at_the_instant_the_message_claims_if_that_is_earlier() -> None:
    headers = signer("kafka-2", valid_for=dt.timedelta(minutes=1)).headers(b"2", FULL)
    signed_at = dt.datetime.now(dt.UTC)
    later = signed_at + dt.timedelta(days=1)
    at_signing = check_signature(b"2", FULL, headers, TRUST, later, signed_at=signed_at)
    assert at_signing.outcome is SignatureOutcome.VALID
    claimed_later = check_signature(b"2", FULL, headers, TRUST, later, signed_at=later)
    assert claimed_later.outcome is SignatureOutcome.EXPIRED_CERTIFICATE
    # A date in the future never stretches a certificate's life.
    ahead = check_signature(
        b"2", FULL, headers, TRUST, later, signed_at=later + dt.timedelta(days=1)
    )
    assert ahead.outcome is SignatureOutcome.EXPIRED_CERTIFICATE


def test_a_message_dated_before_a_valid_certificate_was_issued_still_verifies() -> None:
    # A replayed or late snapshot signed now: its date says nothing of the certificate's start
    # (the rule supersedes it as old); only expiry is judged at the claimed instant.
    headers = signer("kafka-2").headers(b"2", FULL)
    now = dt.datetime.now(dt.UTC)
    week_old = now - dt.timedelta(days=7)
    check = check_signature(b"2", FULL, headers, TRUST, now, signed_at=week_old)
    assert check.outcome is SignatureOutcome.VALID


def test_garbage_in_the_headers_is_malformed_never_an_exception() -> None:
    headers = [(SIGNATURE_HEADER, b"\x00" * 64), (SIGNER_HEADER, b"not a certificate")]
    assert outcome(headers) is SignatureOutcome.MALFORMED


def test_identity_rules_name_the_broker_once() -> None:
    assert identity_pattern("CN=kafka-{broker}").fullmatch("CN=kafka-12") is not None
    assert identity_pattern("CN=kafka-{broker}").fullmatch("CN=kafka-12x") is None
    with pytest.raises(ValueError, match="exactly once"):
        identity_pattern("CN=kafka")


def test_keys_that_cannot_sign_are_refused_at_once() -> None:
    from cryptography.hazmat.primitives.asymmetric import dsa  # noqa: PLC0415

    key = dsa.generate_private_key(key_size=2048)
    certificate = CA.certify(key.public_key(), "kafka-2")
    with pytest.raises(UnsupportedKeyError):
        SnapshotSigner(key, certificate.public_bytes(serialization.Encoding.DER))


def test_the_identity_of_the_subject_is_its_rfc4514_form() -> None:
    certificate = x509.load_der_x509_certificate(
        dict(signer("kafka-5").headers(b"5", FULL))[SIGNER_HEADER]
    )
    assert certificate.subject.rfc4514_string() == "CN=kafka-5"


@pytest.mark.parametrize("subject_cn", ["kafka-02", "kafka-0000000002"])
def test_a_padded_broker_number_speaks_for_no_broker(subject_cn: str) -> None:
    assert outcome(signer(subject_cn).headers(b"2", FULL)) is SignatureOutcome.WRONG_IDENTITY


def test_a_rule_matches_the_whole_subject_not_a_common_name_inside_it() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "kafka-2"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "attacker"),
        ]
    )
    certificate = CA.certify(key.public_key(), subject)
    headers = SnapshotSigner(key, certificate.public_bytes(serialization.Encoding.DER)).headers(
        b"2", FULL
    )
    assert outcome(headers) is SignatureOutcome.WRONG_IDENTITY


def _key_usage(key_cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=key_cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


@pytest.mark.parametrize(
    ("authority", "trusted"),
    [
        (TestCertificateAuthority(), True),
        (TestCertificateAuthority(key_usage=_key_usage(key_cert_sign=True)), True),
        # A CA past its end of validity vouches for nothing, even for certificates it signed
        # while it was valid.
        (
            TestCertificateAuthority(valid_until=dt.datetime.now(dt.UTC) - dt.timedelta(days=1)),
            False,
        ),
        # A leaf certificate (no CA:TRUE) in the trust bundle may not issue certificates.
        (TestCertificateAuthority(is_ca=False), False),
        (TestCertificateAuthority(key_usage=_key_usage(key_cert_sign=False)), False),
    ],
    ids=["ca", "ca-with-key-usage", "expired-ca", "not-a-ca", "no-key-cert-sign"],
)
def test_only_a_valid_ca_certificate_may_vouch_for_a_signer(
    authority: TestCertificateAuthority, trusted: bool
) -> None:
    trust = SignatureTrust(
        ca_certificates=[authority.certificate], broker_identities=["CN=kafka-{broker}"]
    )
    headers = signer("kafka-2", authority=authority).headers(b"2", FULL)
    check = check_signature(b"2", FULL, list(headers), trust, dt.datetime.now(dt.UTC))
    assert check.trusted is trusted, check
    if not trusted:
        assert check.outcome is SignatureOutcome.UNTRUSTED_CERTIFICATE
