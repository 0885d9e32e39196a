"""Checking who signed a snapshot message, and whether they may speak for its broker (pure).

A message is trusted when (see ``schemas.signature``):

1. it carries a signature and the signer's certificate;
2. the certificate was issued directly by one of the trusted CA certificates and is valid at
   the time of the check; that CA certificate is itself valid then, has ``CA:TRUE`` and, if it
   states a key usage, ``keyCertSign``;
3. the signature over (context, key, value) verifies with the certificate's public key;
4. the certificate's identity may speak for the broker named by the key: it matches one of the
   ``broker_identities`` patterns with that broker id in place of ``{broker}`` (for example
   ``CN=kafka-{broker}``), or it is one of the ``cluster_signers`` (a cluster-level publisher
   that measures every broker).

Identities are matched exactly against the whole subject (RFC 4514, e.g. ``CN=kafka-2`` or
``CN=kafka-2,O=acme``) and each DNS name of the subject alternative names
(``DNS:kafka-2.kafka.svc``); never against a common name taken out of a longer subject, so
``CN=kafka-2,O=attacker`` does not match ``CN=kafka-{broker}``.

An operator's override record (key ``cluster``) is checked by steps 1 to 3 the same way; step 4
is ``check_operator_signature``: one of the certificate's identities must be one of the
operators' (``override_signers``), matched exactly as above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

from schemas.signature import SIGNATURE_HEADER, SIGNER_HEADER, signed_payload
from schemas.snapshot import broker_id_from_key


class SignatureMode(StrEnum):
    """How a consumer treats signatures; the steps of turning them on in a running cluster."""

    ACCEPT = "accept"
    """Signatures are not checked (publishers sign anyway)."""
    WARN = "warn"
    """Every message is checked; a failed check is counted and logged, the message still used."""
    REQUIRE = "require"
    """A message that fails the check is rejected: its broker keeps its last trusted state."""


class SignatureOutcome(StrEnum):
    VALID = "valid"
    UNSIGNED = "unsigned"
    MALFORMED = "malformed"
    UNTRUSTED_CERTIFICATE = "untrusted_certificate"
    EXPIRED_CERTIFICATE = "expired_certificate"
    BAD_SIGNATURE = "bad_signature"
    WRONG_IDENTITY = "wrong_identity"


@dataclass(frozen=True, slots=True)
class SignatureCheck:
    outcome: SignatureOutcome
    detail: str
    signer: str | None = None

    @property
    def trusted(self) -> bool:
        return self.outcome is SignatureOutcome.VALID


@dataclass(frozen=True)
class SignatureTrust:
    """Whom to believe: the CA certificates and the identity rules, as loaded values."""

    ca_certificates: Sequence[x509.Certificate]
    broker_identities: Sequence[str] = ()
    cluster_signers: Sequence[str] = ()
    _patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_patterns", tuple(identity_pattern(rule) for rule in self.broker_identities)
        )

    def may_speak_for(self, identities: Iterable[str], broker_id: int) -> bool:
        names = list(identities)
        if any(name in self.cluster_signers for name in names):
            return True
        return any(
            (match := pattern.fullmatch(name)) is not None and int(match["broker"]) == broker_id
            for pattern in self._patterns
            for name in names
        )


def identity_pattern(rule: str) -> re.Pattern[str]:
    """``CN=kafka-{broker}`` -> a pattern whose group ``broker`` is the broker id."""
    if rule.count("{broker}") != 1:
        raise ValueError(f"{rule!r} must contain {{broker}} exactly once")
    before, after = rule.split("{broker}")
    # The broker id as the key spells it (no sign, no leading zero): kafka-02 is no broker.
    return re.compile(re.escape(before) + r"(?P<broker>0|[1-9][0-9]{0,9})" + re.escape(after))


def certificate_identities(certificate: x509.Certificate) -> list[str]:
    """The names a certificate can be matched by (see the module docstring)."""
    names = [certificate.subject.rfc4514_string()]
    try:
        alternatives = certificate.extensions.get_extension_for_class(
            x509.SubjectAlternativeName
        ).value
    except x509.ExtensionNotFound:
        return names
    return names + [f"DNS:{name}" for name in alternatives.get_values_for_type(x509.DNSName)]


def check_signature(
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
    trust: SignatureTrust,
    now: datetime,
    *,
    signed_at: datetime | None = None,
) -> SignatureCheck:
    """Whether the message ``key``/``value`` was signed by someone who may speak for its broker.

    ``signed_at`` is the instant the message says it was made (a snapshot's ``snapshotAt``): the
    certificates are judged then, if it is earlier than ``now``. A breach signed before its
    broker's certificate expired keeps counting after a restart; an expired key can only vouch
    for something dated before it expired, which is stale by then (the rule never lets a stale
    "fine" open the cluster for a live broker)."""
    expiry_at = now if signed_at is None else min(now, signed_at)
    verified = verify_signed_message(
        key, value, headers, trust.ca_certificates, now, expiry_at=expiry_at
    )
    if isinstance(verified, SignatureCheck):
        return verified
    signer = verified.subject.rfc4514_string()
    broker_id = broker_id_from_key(key)
    if broker_id is None or not trust.may_speak_for(certificate_identities(verified), broker_id):
        return SignatureCheck(
            SignatureOutcome.WRONG_IDENTITY,
            f"{signer} may not speak for key {(key or b'')[:20]!r}",
            signer,
        )
    return SignatureCheck(SignatureOutcome.VALID, "trusted", signer)


def check_operator_signature(
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
    *,
    ca_certificates: Sequence[x509.Certificate],
    operators: Sequence[str],
    now: datetime,
) -> SignatureCheck:
    """Whether an override record was signed by one of the ``operators``: identities matched
    exactly, like the snapshot signers' (see the module docstring). On success ``signer`` is the
    identity that matched (the subject or the ``DNS:`` name), the one to show as its author."""
    verified = verify_signed_message(key, value, headers, ca_certificates, now)
    if isinstance(verified, SignatureCheck):
        return verified
    names = certificate_identities(verified)
    matched = next((name for name in names if name in operators), None)
    if matched is None:
        return SignatureCheck(
            SignatureOutcome.WRONG_IDENTITY,
            f"{names[0]} is not an operator identity (override_signers)",
            names[0],
        )
    return SignatureCheck(SignatureOutcome.VALID, "signed by an operator", matched)


def verify_signed_message(
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
    ca_certificates: Sequence[x509.Certificate],
    now: datetime,
    *,
    expiry_at: datetime | None = None,
) -> x509.Certificate | SignatureCheck:
    """The signer's certificate when steps 1 to 3 hold (signed, by a certificate a trusted CA
    issued and valid now, and the signature verifies), else the failed check. With
    ``expiry_at`` (earlier than now: the instant the message claims), the certificates must
    have started by now and not have expired by then: a message made before its signer
    expired keeps its signature."""
    until = now if expiry_at is None else min(now, expiry_at)
    found = {name: content for name, content in headers if content is not None}
    signature, certificate_der = found.get(SIGNATURE_HEADER), found.get(SIGNER_HEADER)
    if signature is None or certificate_der is None:
        return SignatureCheck(SignatureOutcome.UNSIGNED, "no signature headers")
    try:
        certificate = x509.load_der_x509_certificate(certificate_der)
        signer = certificate.subject.rfc4514_string()
    except ValueError as error:
        return SignatureCheck(SignatureOutcome.MALFORMED, f"unreadable certificate: {error}")
    if not _issued_by_trusted_ca(certificate, ca_certificates, now, until):
        return SignatureCheck(
            SignatureOutcome.UNTRUSTED_CERTIFICATE, "not issued by a trusted CA", signer
        )
    if not _valid(certificate, now, until):
        return SignatureCheck(
            SignatureOutcome.EXPIRED_CERTIFICATE,
            f"valid {certificate.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ} to "
            f"{certificate.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}",
            signer,
        )
    if not _signature_verifies(certificate, signature, signed_payload(key, value)):
        return SignatureCheck(SignatureOutcome.BAD_SIGNATURE, "signature does not verify", signer)
    return certificate


def _valid(certificate: x509.Certificate, now: datetime, until: datetime) -> bool:
    """Started by ``now`` and not expired by ``until`` (``until`` <= ``now``)."""
    return certificate.not_valid_before_utc <= now and until <= certificate.not_valid_after_utc


def _issued_by_trusted_ca(
    certificate: x509.Certificate,
    authorities: Sequence[x509.Certificate],
    now: datetime,
    until: datetime,
) -> bool:
    for authority in authorities:
        if not _may_issue_certificates(authority, now, until):
            continue
        try:
            certificate.verify_directly_issued_by(authority)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return True
    return False


def _may_issue_certificates(authority: x509.Certificate, now: datetime, until: datetime) -> bool:
    """A CA certificate vouches for a signer only while it is valid, marked ``CA:TRUE`` and,
    where it states its key usage, allowed to sign certificates (RFC 5280, 4.2.1.3 and 4.2.1.9)."""
    if not _valid(authority, now, until):
        return False
    extensions = authority.extensions
    try:
        if not extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
            return False
    except x509.ExtensionNotFound:
        return False
    try:
        return extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    except x509.ExtensionNotFound:
        return True


def _signature_verifies(certificate: x509.Certificate, signature: bytes, payload: bytes) -> bool:
    public_key = certificate.public_key()
    try:
        if isinstance(public_key, ec.EllipticCurvePublicKey):
            public_key.verify(signature, payload, ec.ECDSA(hashes.SHA256()))
        elif isinstance(public_key, rsa.RSAPublicKey):
            public_key.verify(signature, payload, padding.PKCS1v15(), hashes.SHA256())
        elif isinstance(public_key, ed25519.Ed25519PublicKey):
            public_key.verify(signature, payload)
        else:
            return False
    except InvalidSignature:
        return False
    return True
