from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.decode import MAX_MESSAGE_BYTES, Rejection, RejectionReason, decode_snapshot
from schemas.snapshot import VolumeSnapshot
from tests.snapshot_factory import snapshot_document, snapshot_line, volume


def test_valid_message_with_matching_key_decodes() -> None:
    decoded = decode_snapshot(snapshot_line(broker_id=7), key=b"7")
    assert isinstance(decoded, VolumeSnapshot)
    assert decoded.broker_id == 7


def _rejected(value: bytes, key: bytes | None = b"3") -> Rejection:
    decoded = decode_snapshot(value, key)
    assert isinstance(decoded, Rejection), decoded
    return decoded


def _document_bytes(**changes: object) -> bytes:
    document = snapshot_document(broker_id=3)
    document.update(changes)
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"garbage", RejectionReason.MALFORMED_JSON),
        (b"", RejectionReason.MALFORMED_JSON),
        (b"\xff\xfe\x00", RejectionReason.MALFORMED_JSON),
        (b"[" * 50_000, RejectionReason.MALFORMED_JSON),
        (b'{"a":' * 5_000, RejectionReason.MALFORMED_JSON),
        (b"null", RejectionReason.INVALID_FIELD),
        (b"[]", RejectionReason.INVALID_FIELD),
        (_document_bytes(brokerId=10**40), RejectionReason.INVALID_FIELD),
        (_document_bytes(brokerId=True), RejectionReason.INVALID_FIELD),
        (_document_bytes(schemaVersion=2), RejectionReason.UNSUPPORTED_VERSION),
        (
            _document_bytes(volumes=[volume(capacity=10, consumed=11)]),
            RejectionReason.INVALID_FIELD,
        ),
        (_document_bytes(volumes=[volume(capacity=2**64)]), RejectionReason.INVALID_FIELD),
        (
            _document_bytes(volumes=[volume(name=f"v{i}") for i in range(2000)]),
            RejectionReason.INVALID_FIELD,
        ),
        (_document_bytes(volumes="many"), RejectionReason.INVALID_FIELD),
        (_document_bytes(snapshotAt="yesterday"), RejectionReason.INVALID_FIELD),
    ],
)
def test_hostile_values_are_rejected_with_a_typed_reason(
    value: bytes, reason: RejectionReason
) -> None:
    assert _rejected(value).reason is reason


@pytest.mark.parametrize("token", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_non_finite_numbers_are_rejected(token: bytes) -> None:
    value = _document_bytes(softLimit={"type": "MinFreePercentage", "level": 15}).replace(
        b'"level": 15', b'"level": ' + token
    )
    assert token in value
    assert isinstance(decode_snapshot(value, b"3"), Rejection)


def test_oversized_value_is_refused_before_parsing() -> None:
    rejection = _rejected(b" " * (MAX_MESSAGE_BYTES + 1))
    assert rejection.reason is RejectionReason.TOO_LARGE
    assert rejection.broker_id == 3


def test_key_and_broker_id_must_agree() -> None:
    rejection = _rejected(snapshot_line(broker_id=3), key=b"4")
    assert rejection.reason is RejectionReason.KEY_MISMATCH
    assert rejection.broker_id == 4, "the key decides which broker's state the message targets"


@pytest.mark.parametrize(
    "key", [b"x", b"-1", b"", b"99999999999", b"03", b"0003", b"+3", b" 3", b"3 ", b"\xd9\xa3"]
)
def test_a_key_that_is_not_the_canonical_decimal_broker_id_is_refused(key: bytes) -> None:
    # "03" would be a second compaction key for broker 3: a record under it survives `retire`
    # and compaction of key "3" and comes back later.
    assert _rejected(snapshot_line(broker_id=3), key=key).reason is RejectionReason.INVALID_KEY


def test_newer_major_version_is_reported_as_such_even_if_its_fields_changed() -> None:
    value = json.dumps({"schemaVersion": 2, "brokerId": 3, "disks": {"a": 1}}).encode()
    assert _rejected(value).reason is RejectionReason.UNSUPPORTED_VERSION


def test_rejection_names_the_claimed_broker_when_readable() -> None:
    rejection = _rejected(_document_bytes(schemaVersion=9), key=None)
    assert rejection.broker_id == 3
    assert "schemaVersion" in rejection.describe()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=10,
)


@settings(max_examples=400)
@given(value=st.binary(max_size=2048), key=st.none() | st.binary(max_size=12))
def test_decoder_never_raises_on_arbitrary_bytes(value: bytes, key: bytes | None) -> None:
    assert isinstance(decode_snapshot(value, key), VolumeSnapshot | Rejection)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    document=st.fixed_dictionaries(
        {},
        optional={
            "schemaVersion": json_values,
            "brokerId": json_values,
            "snapshotAt": json_values,
            "softLimit": json_values,
            "hardLimit": json_values,
            "volumes": json_values,
        },
    )
)
def test_decoder_never_raises_on_arbitrary_json(document: dict[str, object]) -> None:
    value = json.dumps(document, allow_nan=True).encode()
    assert isinstance(decode_snapshot(value), VolumeSnapshot | Rejection)
