"""How a snapshot message is signed: the Kafka record headers and the bytes the signature covers.

Kafka's ACLs cannot say which key a producer may write, so any principal allowed to write the
snapshot topic could speak for any broker. A publisher therefore signs each message with its
TLS client key and sends its certificate along; a consumer checks the certificate against the
cluster CA and maps its identity to the broker ids it may speak for.

The signature covers a context string, the key and the value, so a signature cannot be moved to
another broker's key nor to another kind of message. The message value (the JSON snapshot) is
unchanged: a consumer that does not check signatures reads signed messages as before.
"""

from __future__ import annotations

SIGNATURE_HEADER = "vq-signature"
"""The raw signature: ECDSA (DER) or RSA PKCS#1 v1.5 over SHA-256, or Ed25519."""
SIGNER_HEADER = "vq-signer"
"""The signer's X.509 certificate, DER-encoded (every record verifies alone: compaction may
remove any earlier record)."""

SIGNING_CONTEXT = b"volume-quota snapshot signature v1\x00"


def signed_payload(key: bytes | None, value: bytes | None) -> bytes:
    """The bytes a signature covers: context, key length, key, value (a tombstone: no value)."""
    key_bytes = key or b""
    value_bytes = b"\x01" + value if value is not None else b"\x00"
    return SIGNING_CONTEXT + len(key_bytes).to_bytes(4, "big") + key_bytes + value_bytes
