"""Signing snapshot messages with the publisher's TLS client key (see ``schemas.signature``).

Pure computation on a loaded key: no file is read here; the shell loads the key and the
certificate from the TLS files and makes a new signer when they rotate.
"""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from schemas.signature import SIGNATURE_HEADER, SIGNER_HEADER, signed_payload

Headers = list[tuple[str, bytes]]


class UnsupportedKeyError(ValueError):
    """The key is of a type snapshots cannot be signed with (only EC, RSA and Ed25519)."""


class SnapshotSigner:
    def __init__(self, private_key: PrivateKeyTypes, certificate_der: bytes) -> None:
        if not isinstance(
            private_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey
        ):
            raise UnsupportedKeyError(
                f"cannot sign with a {type(private_key).__name__}: use an EC, RSA or Ed25519 key"
            )
        self._key = private_key
        self._certificate = certificate_der

    def headers(self, key: bytes | None, value: bytes | None) -> Headers:
        """The record headers that sign the message ``key``/``value``."""
        payload = signed_payload(key, value)
        private_key = self._key
        if isinstance(private_key, ec.EllipticCurvePrivateKey):
            signature = private_key.sign(payload, ec.ECDSA(hashes.SHA256()))
        elif isinstance(private_key, rsa.RSAPrivateKey):
            signature = private_key.sign(payload, padding.PKCS1v15(), hashes.SHA256())
        else:
            signature = private_key.sign(payload)
        return [(SIGNATURE_HEADER, signature), (SIGNER_HEADER, self._certificate)]
