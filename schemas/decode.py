"""Decoding a snapshot message: bytes in, a validated snapshot or a typed rejection out.

Anything on the topic is untrusted input: a misconfigured client, an old publisher, or an
attacker with write access must not be able to crash a consumer. ``decode_snapshot`` is pure and
never raises; it returns a ``Rejection`` that says why, and, when it can still be read, which
broker the bad message claims to come from (a consumer treats that broker as unknown).

Two readings of one contract (``docs/decision-rule.md``, "The strict wire contract"):
``decode_snapshot`` is the hot path (``schemas.fast_decode``); ``decode_snapshot_reference``
validates with the pydantic model itself, the single source of truth. Both first read the JSON
text strictly (``schemas.json_text``); ``tests/schemas/test_differential.py`` requires the same
verdict, reason and claimed broker from both, and the same verdict from the JSON Schema file.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from schemas.fast_decode import FieldError, TextLimitError, UnsupportedVersionError, build_snapshot
from schemas.json_text import (
    MalformedJsonError,
    parse_json_text,
    parse_strict_document,
    text_limit_problem,
)
from schemas.snapshot import (
    MAX_BROKER_ID,
    SNAPSHOT_SCHEMA_VERSION,
    VolumeSnapshot,
    broker_id_from_key,
)
from schemas.usage import MAX_USAGE_DOCUMENT_BYTES, TopicUsageDocument

MAX_MESSAGE_BYTES = 1024 * 1024
"""Far above a 1024-volume snapshot; larger values are refused before parsing."""
RECORD_OVERHEAD_MARGIN_BYTES = 32 * 1024
"""What a record carries on top of its value: the key (a broker id), the signature headers
(``vq-signature``, at most 512 bytes for RSA-4096; ``vq-signer``, a DER certificate of about
1-2 KiB) and the record batch framing (61 bytes plus a few per record), with room for a
certificate many times the usual size."""
MAX_RECORD_BYTES = MAX_MESSAGE_BYTES + RECORD_OVERHEAD_MARGIN_BYTES
"""1081344: ``max.message.bytes`` of every volume-quota topic and of its producers: the largest
document a reader accepts, signed. Without the cap a topic takes the brokers'
``message.max.bytes``, which clusters often raise far above 1 MiB for their own traffic."""


class RejectionReason(StrEnum):
    TOO_LARGE = "too_large"
    MALFORMED_JSON = "malformed_json"
    UNSUPPORTED_VERSION = "unsupported_version"
    INVALID_FIELD = "invalid_field"
    INVALID_KEY = "invalid_key"
    KEY_MISMATCH = "key_mismatch"


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a message was refused; ``broker_id`` is the claimed broker when it could be read."""

    reason: RejectionReason
    detail: str
    broker_id: int | None = None

    def describe(self) -> str:
        return f"{self.reason.value}: {self.detail}"


def decode_snapshot(value: bytes, key: bytes | None = None) -> VolumeSnapshot | Rejection:
    """Parse and validate one message value; when ``key`` is given it must name the same broker."""
    if len(value) > MAX_MESSAGE_BYTES:
        return _too_large(value, key)
    try:
        document = parse_json_text(value)
    except MalformedJsonError as error:
        return Rejection(RejectionReason.MALFORMED_JSON, str(error), broker_id_from_key(key))
    try:
        snapshot = build_snapshot(document)
    except TextLimitError as error:
        return Rejection(RejectionReason.MALFORMED_JSON, str(error), broker_id_from_key(key))
    except UnsupportedVersionError as error:
        return _refused(document, RejectionReason.UNSUPPORTED_VERSION, str(error), key)
    except FieldError as error:
        return _refused(document, RejectionReason.INVALID_FIELD, str(error), key)
    if key is not None:
        return _check_key(snapshot, key)
    return snapshot


def strict_text_problem(value: bytes) -> Rejection | None:
    """Why ``value`` is not a wire document's text (too large, or not strict JSON), or None.

    The one text check of every document on the wire (snapshots, overrides): no duplicate
    names, no NaN or Infinity, the nesting and number limits, at most ``MAX_MESSAGE_BYTES``."""
    if len(value) > MAX_MESSAGE_BYTES:
        return Rejection(
            RejectionReason.TOO_LARGE, f"{len(value)} bytes, over the {MAX_MESSAGE_BYTES} limit"
        )
    try:
        parse_strict_document(value)
    except MalformedJsonError as error:
        return Rejection(RejectionReason.MALFORMED_JSON, str(error))
    return None


def decode_snapshot_reference(value: bytes, key: bytes | None = None) -> VolumeSnapshot | Rejection:
    """``decode_snapshot`` by the pydantic model: slower, the reference the hot path must match."""
    if len(value) > MAX_MESSAGE_BYTES:
        return _too_large(value, key)
    try:
        document = parse_strict_document(value)
    except MalformedJsonError as error:
        return Rejection(RejectionReason.MALFORMED_JSON, str(error), broker_id_from_key(key))
    try:
        snapshot = VolumeSnapshot.model_validate_json(value)
    except ValidationError as error:
        return _rejection_from_validation(error, document, key)
    if key is not None:
        return _check_key(snapshot, key)
    return snapshot


def _too_large(value: bytes, key: bytes | None) -> Rejection:
    return Rejection(
        RejectionReason.TOO_LARGE,
        f"{len(value)} bytes is over the {MAX_MESSAGE_BYTES}-byte limit",
        broker_id_from_key(key),
    )


def _refused(document: Any, reason: RejectionReason, detail: str, key: bytes | None) -> Rejection:
    """A field broke the contract; but a document over a text limit is malformed, whatever else."""
    problem = text_limit_problem(document)
    if problem is not None:
        return Rejection(RejectionReason.MALFORMED_JSON, problem, broker_id_from_key(key))
    return Rejection(reason, detail[:300], _claimed_broker_id(document, key))


def _check_key(snapshot: VolumeSnapshot, key: bytes) -> VolumeSnapshot | Rejection:
    key_broker_id = broker_id_from_key(key)
    if key_broker_id is None:
        return Rejection(
            RejectionReason.INVALID_KEY,
            f"key {key[:40]!r} is not a canonical decimal broker id",
            snapshot.broker_id,
        )
    if key_broker_id != snapshot.broker_id:
        # Trust neither side: the key decides which broker's state this message would replace.
        return Rejection(
            RejectionReason.KEY_MISMATCH,
            f"key says broker {key_broker_id} but brokerId is {snapshot.broker_id}",
            key_broker_id,
        )
    return snapshot


def _rejection_from_validation(
    error: ValidationError, document: Any, key: bytes | None
) -> Rejection:
    claimed = _claimed_broker_id(document, key)
    errors = error.errors(include_url=False, include_input=False)
    for problem in errors:
        # A newer major version explains every other error: report it first.
        if problem["loc"] == ("schemaVersion",) and "unsupported schemaVersion" in problem["msg"]:
            return Rejection(
                RejectionReason.UNSUPPORTED_VERSION, f"schemaVersion: {problem['msg']}", claimed
            )
    first = errors[0]
    if first["type"] == "json_invalid":  # pragma: no cover - the strict parse refused it first
        return Rejection(RejectionReason.MALFORMED_JSON, first["msg"][:200], claimed)
    location = ".".join(str(part) for part in first["loc"]) or "value"
    return Rejection(RejectionReason.INVALID_FIELD, f"{location}: {first['msg']}"[:300], claimed)


def _claimed_broker_id(document: Any, key: bytes | None) -> int | None:
    """The key's broker, else the ``brokerId`` of a well-formed document that failed validation."""
    claimed = broker_id_from_key(key)
    if claimed is not None or type(document) is not dict:
        return claimed
    broker_id = document.get("brokerId")
    if type(broker_id) is int and 0 <= broker_id <= MAX_BROKER_ID:
        return broker_id
    return None


def decode_usage(value: bytes, key: bytes | None) -> TopicUsageDocument | Rejection:
    """A topic usage record (``schemas.usage``): the document, or why it is refused. Never
    raises. The key must be the canonical broker id of the document's ``brokerId``, and the
    document at most ``MAX_USAGE_DOCUMENT_BYTES`` long."""
    if len(value) > MAX_USAGE_DOCUMENT_BYTES:
        return Rejection(
            RejectionReason.TOO_LARGE,
            f"{len(value)} bytes, over the usage document's {MAX_USAGE_DOCUMENT_BYTES} limit",
            broker_id_from_key(key),
        )
    problem = strict_text_problem(value)
    if problem is not None:
        return Rejection(problem.reason, problem.detail, broker_id_from_key(key))
    try:
        document = TopicUsageDocument.model_validate_json(value)
    except ValidationError as error:
        return _rejection_from_validation(error, parse_strict_document(value), key)
    key_broker_id = broker_id_from_key(key)
    if key_broker_id is None:
        return Rejection(
            RejectionReason.INVALID_KEY,
            f"key {(key or b'')[:40]!r} is not a canonical decimal broker id",
            document.broker_id,
        )
    if key_broker_id != document.broker_id:
        return Rejection(
            RejectionReason.KEY_MISMATCH,
            f"key says broker {key_broker_id} but brokerId is {document.broker_id}",
            key_broker_id,
        )
    return document


__all__ = [
    "MAX_MESSAGE_BYTES",
    "MAX_RECORD_BYTES",
    "SNAPSHOT_SCHEMA_VERSION",
    "Rejection",
    "RejectionReason",
    "decode_snapshot",
    "decode_snapshot_reference",
    "decode_usage",
    "strict_text_problem",
]
