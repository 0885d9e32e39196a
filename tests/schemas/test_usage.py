"""The topic usage document: strict fields, its invariants, its size bound, its decoder."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from schemas.decode import (
    MAX_MESSAGE_BYTES,
    Rejection,
    RejectionReason,
    decode_snapshot,
    decode_usage,
)
from schemas.json_schema import SCHEMA_DIRECTORY
from schemas.snapshot import MAX_BROKER_ID, MAX_BYTES, snapshot_key
from schemas.usage import (
    MAX_TOPIC_NAME_LENGTH,
    MAX_TOPICS_PER_VOLUME,
    MAX_USAGE_DOCUMENT_BYTES,
    MAX_USAGE_VOLUME_NAME_LENGTH,
    MAX_USAGE_VOLUMES,
    TopicUsageDocument,
)
from tests.snapshot_factory import make_snapshot, volume

KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588


def topic(name: str = "orders", size: int = 1000, **extra: Any) -> dict[str, Any]:
    return {
        "topic": name,
        "bytes": size,
        "partitions": 3,
        "activeSegmentBytes": 100,
        "transientBytes": 0,
        "oldestSegmentAt": "2026-11-26T10:00:00.000Z",
        **extra,
    }


def usage_volume(
    name: str = "/dev/a", *topics: dict[str, Any], unattributed: int = 5
) -> dict[str, Any]:
    return {
        "volumeName": name,
        "totalBytes": sum(t["bytes"] for t in topics if type(t["bytes"]) is int) + 7 + unattributed,
        "topics": list(topics),
        "other": {
            "topics": 2,
            "bytes": 7,
            "partitions": 4,
            "activeSegmentBytes": 1,
            "transientBytes": 0,
        },
        "unattributedBytes": unattributed,
    }


def usage_document(broker_id: int = 3, *volumes: dict[str, Any]) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "brokerId": broker_id,
        "surveyedAt": "2026-11-26T12:00:00.000Z",
        "surveySeconds": 0.5,
        "volumes": list(volumes) or [usage_volume("/dev/a", topic())],
    }


def encode(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()


def test_a_valid_document_decodes() -> None:
    decoded = decode_usage(encode(usage_document()), b"3")
    assert isinstance(decoded, TopicUsageDocument)
    assert decoded.volumes[0].topics[0].topic == "orders"


@pytest.mark.parametrize(
    ("key", "reason"),
    [(b"4", RejectionReason.KEY_MISMATCH), (b"03", RejectionReason.INVALID_KEY)],
)
def test_the_key_must_be_the_canonical_broker_id(key: bytes, reason: RejectionReason) -> None:
    decoded = decode_usage(encode(usage_document()), key)
    assert not isinstance(decoded, TopicUsageDocument)
    assert decoded.reason is reason


def _refused(document: dict[str, Any]) -> str:
    decoded = decode_usage(encode(document), b"3")
    assert not isinstance(decoded, TopicUsageDocument), document
    return decoded.describe()


def test_growth_is_optional_and_states_its_span() -> None:
    grown = topic(
        growth15m={"bytes": -300, "seconds": 600.5}, growth24h={"bytes": 9, "seconds": 60}
    )
    decoded = decode_usage(encode(usage_document(3, usage_volume("/dev/a", grown))), b"3")
    assert isinstance(decoded, TopicUsageDocument)
    growth = decoded.volumes[0].topics[0].growth_15m
    assert growth is not None
    assert (growth.bytes, growth.seconds) == (-300, 600.5)
    assert b'"growth24h":{"bytes":9,"seconds":60.0}' in decoded.to_json_bytes()


@pytest.mark.parametrize(
    "growth",
    [
        {"bytes": 1, "seconds": -1},
        {"bytes": 1, "seconds": 86401},
        {"bytes": 1.5, "seconds": 60},
        {"bytes": MAX_BYTES + 1, "seconds": 60},
        {"bytes": 1},
    ],
)
def test_growth_fields_are_strict(growth: dict[str, Any]) -> None:
    grown = topic(growth15m=growth)
    assert "invalid_field" in _refused(usage_document(3, usage_volume("/dev/a", grown)))


def test_parts_that_do_not_add_up_to_the_total_are_refused() -> None:
    document = usage_document()
    document["volumes"][0]["totalBytes"] += 1
    assert "add up" in _refused(document)


def test_duplicate_topics_and_volumes_are_refused() -> None:
    assert "unique" in _refused(usage_document(3, usage_volume("/dev/a", topic(), topic())))
    same = usage_volume("/dev/a", topic())
    assert "unique" in _refused(usage_document(3, same, same))


@pytest.mark.parametrize(
    "change",
    [
        {"bytes": "1000"},
        {"bytes": 1000.0},
        {"bytes": -1},
        {"partitions": True},
        {"topic": "bad topic"},
        {"topic": "x" * (MAX_TOPIC_NAME_LENGTH + 1)},
        {"oldestSegmentAt": 1_700_000_000},
    ],
)
def test_fields_are_strict(change: dict[str, Any]) -> None:
    assert "invalid_field" in _refused(usage_document(3, usage_volume("/dev/a", topic(**change))))


def test_an_unknown_major_version_is_reported_as_such() -> None:
    document = usage_document()
    document["schemaVersion"] = 2
    assert _refused(document).startswith("unsupported_version")


def test_a_snapshot_is_no_usage_document_and_a_usage_document_no_snapshot() -> None:
    """Both are keyed and signed alike: a record moved from one topic to the other (its
    signature still verifying) must be refused by the other topic's decoder."""
    snapshot = make_snapshot(broker_id=3, volumes=[volume("/dev/a", 100, 50)]).to_json_bytes()
    assert not isinstance(decode_usage(snapshot, b"3"), TopicUsageDocument)
    assert isinstance(decode_snapshot(encode(usage_document()), b"3"), Rejection)


def largest_legal_document() -> TopicUsageDocument:
    """Every list at its maximum length, every name at its longest, every number at its
    widest: no legal document serializes longer."""
    name_character = "\u0001"  # written as \u0001: six bytes for one character
    volumes = []
    for index in range(MAX_USAGE_VOLUMES):
        topics = [
            topic(
                f"{position:03d}".ljust(MAX_TOPIC_NAME_LENGTH, "x"),
                MAX_BYTES // (MAX_TOPICS_PER_VOLUME + 2),
                partitions=2**31 - 1,
                activeSegmentBytes=MAX_BYTES,
                transientBytes=MAX_BYTES,
                oldestSegmentAt="2999-12-31T23:59:59.999Z",
                growth15m={"bytes": -MAX_BYTES, "seconds": 86399.99999999999},
                growth24h={"bytes": -MAX_BYTES, "seconds": 86399.99999999999},
            )
            for position in range(MAX_TOPICS_PER_VOLUME)
        ]
        volume_name = f"{index:03d}" + name_character * (MAX_USAGE_VOLUME_NAME_LENGTH - 3)
        entry = usage_volume(volume_name, *topics, unattributed=0)
        entry["other"] = {
            "topics": 2**31 - 1,
            "bytes": MAX_BYTES // (MAX_TOPICS_PER_VOLUME + 2),
            "partitions": 2**31 - 1,
            "activeSegmentBytes": MAX_BYTES,
            "transientBytes": MAX_BYTES,
        }
        entry["unattributedBytes"] = MAX_BYTES - (MAX_TOPICS_PER_VOLUME + 1) * (
            MAX_BYTES // (MAX_TOPICS_PER_VOLUME + 2)
        )
        entry["totalBytes"] = MAX_BYTES
        volumes.append(entry)
    document = usage_document(MAX_BROKER_ID, *volumes)
    document["surveySeconds"] = 86399.99999999999
    return TopicUsageDocument.model_validate_json(encode(document))


def test_the_largest_legal_document_fits_the_stated_bound() -> None:
    size = len(largest_legal_document().to_json_bytes())
    assert size <= MAX_USAGE_DOCUMENT_BYTES <= MAX_MESSAGE_BYTES
    assert MAX_USAGE_DOCUMENT_BYTES <= KAFKA_DEFAULT_MAX_MESSAGE_BYTES
    assert size > MAX_USAGE_DOCUMENT_BYTES * 0.7, f"the bound is loose: {size}"


def test_the_largest_legal_document_decodes() -> None:
    document = largest_legal_document()
    key = snapshot_key(MAX_BROKER_ID)
    assert decode_usage(document.to_json_bytes(), key) == document


def test_a_published_document_validates_against_the_schema_file() -> None:
    schema = json.loads((SCHEMA_DIRECTORY / "topic-usage.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(json.loads(largest_legal_document().to_json_bytes()))
    bad = usage_document(3, usage_volume("/dev/a", topic("bad name")))
    assert list(validator.iter_errors(bad))
