"""Override topic records, signed by an operator or not, for the history's override tests.

The history judges records at their arrival, days before the test runs: the CA and the operator
certificates here are valid over a window given by the test, not from an hour ago.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from consumer.overrides import OverridePolicy
from consumer.signatures import SignatureMode
from publisher.signing import SnapshotSigner
from schemas.override import OVERRIDE_KEY
from spark_history.override_history import OverrideRecord

OPERATOR = "CN=alice"


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class OperatorSigner:
    """A CA valid from ``valid_from`` for ``valid_for``, and an operator certified by it."""

    def __init__(self, valid_from: datetime, valid_for: timedelta = timedelta(days=30)) -> None:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        self.ca = (
            x509.CertificateBuilder()
            .subject_name(_name("history-test-ca"))
            .issuer_name(_name("history-test-ca"))
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(valid_from)
            .not_valid_after(valid_from + valid_for)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = (
            x509.CertificateBuilder()
            .subject_name(_name("alice"))
            .issuer_name(self.ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(valid_from)
            .not_valid_after(valid_from + valid_for)
            .sign(ca_key, hashes.SHA256())
        )
        self._signer = SnapshotSigner(key, certificate.public_bytes(serialization.Encoding.DER))

    def policy(self, mode: SignatureMode = SignatureMode.REQUIRE) -> OverridePolicy:
        return OverridePolicy(mode, [self.ca], (OPERATOR,))

    def headers(self, value: bytes | None) -> tuple[tuple[str, bytes | None], ...]:
        return tuple(self._signer.headers(OVERRIDE_KEY, value))


def override_value(
    state: str, set_at: datetime, expires_at: datetime, set_by: str = "oncall"
) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 1,
            "state": state,
            "reason": "history test",
            "setBy": set_by,
            "setAt": set_at.isoformat(),
            "expiresAt": expires_at.isoformat(),
        }
    ).encode()


def override_record(
    value: bytes | None,
    arrived_at: datetime,
    signer: OperatorSigner | None = None,
    offset: int = 0,
) -> OverrideRecord:
    """A record of the override topic (a tombstone when ``value`` is None), signed by the
    operator when ``signer`` is given."""
    headers = signer.headers(value) if signer is not None else ()
    return OverrideRecord(OVERRIDE_KEY, value, headers, arrived_at, 0, offset)
