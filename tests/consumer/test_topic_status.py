"""``status``'s top topics: usage records folded under the signature policy, joined with the
volumes and the topic configs, rendered."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from consumer.cluster_state import ClusterState
from consumer.signatures import SignatureMode, SignatureTrust
from consumer.status_report import cluster_status, render_status_table, status_as_json
from consumer.topic_status import (
    NOT_AUTHORIZED,
    UsageCollection,
    topics_to_describe,
    volume_topics,
)
from publisher.signing import SnapshotSigner
from tests.publisher.tls_material import TestCertificateAuthority
from tests.snapshot_factory import NOON, make_snapshot, volume

GIB = 2**30
MIB = 2**20
SURVEYED = NOON - timedelta(seconds=40)


def usage_topic(name: str, size: int, **extra: Any) -> dict[str, Any]:
    return {
        "topic": name,
        "bytes": size,
        "partitions": 2,
        "activeSegmentBytes": MIB,
        "transientBytes": 0,
        **extra,
    }


def usage_value(broker_id: int, volume_name: str, *topics: dict[str, Any]) -> bytes:
    total = sum(topic["bytes"] for topic in topics) + 100 * MIB + 10
    return json.dumps(
        {
            "schemaVersion": 1,
            "brokerId": broker_id,
            "surveyedAt": SURVEYED.isoformat(),
            "surveySeconds": 0.2,
            "volumes": [
                {
                    "volumeName": volume_name,
                    "totalBytes": total,
                    "topics": list(topics),
                    "other": {
                        "topics": 3,
                        "bytes": 100 * MIB,
                        "partitions": 3,
                        "activeSegmentBytes": 0,
                        "transientBytes": 0,
                    },
                    "unattributedBytes": 10,
                }
            ],
        }
    ).encode()


ORDERS = usage_topic(
    "orders",
    6 * GIB,
    growth15m={"bytes": 900 * MIB, "seconds": 900.0},
    growth24h={"bytes": 2 * GIB, "seconds": 600.0},
)
CLICKS = usage_topic("clicks", 2 * GIB, growth15m={"bytes": -MIB, "seconds": 300.0})
LOGS = usage_topic("logs", GIB)


def cluster() -> tuple[ClusterState, Any]:
    state = ClusterState()
    # broker 1: a 10 GiB volume with 1 GiB free: PAUSE at the default limits; broker 0 is OPEN
    state.apply_snapshot(make_snapshot(broker_id=0, volumes=[volume("/dev/a", 10 * GIB, GIB)]))
    state.apply_snapshot(
        make_snapshot(broker_id=1, volumes=[volume("/dev/b", 10 * GIB, 9 * GIB, path="/data")])
    )
    state.set_live_brokers([0, 1])
    return state, state.decide(NOON)


def collected() -> UsageCollection:
    usage = UsageCollection()
    usage.apply(b"1", usage_value(1, "/dev/b", ORDERS, CLICKS, LOGS), [], NOON)
    usage.apply(b"0", usage_value(0, "/dev/a", usage_topic("quiet", GIB // 2)), [], NOON)
    return usage


CONFIGS: dict[str, dict[str, str | None] | str] = {
    "orders": {"retention.ms": "-1", "retention.bytes": "-1"},
    "clicks": {"retention.bytes": str(GIB), "retention.ms": "-1", "segment.bytes": str(100 * MIB)},
    "logs": NOT_AUTHORIZED,
}


def test_only_throttled_or_paused_volumes_by_default_every_volume_when_asked() -> None:
    state, decision = cluster()
    rows = cluster_status(state, decision, NOON).volumes
    usage = collected()
    assert topics_to_describe(rows, usage.documents, every_volume=False, top=2) == [
        "clicks",
        "orders",
    ]
    shown = volume_topics(rows, usage.documents, CONFIGS, NOON, every_volume=False, top=5)
    assert [(entry.broker_id, entry.volume_name) for entry in shown] == [(1, "/dev/b")]
    every = volume_topics(rows, usage.documents, CONFIGS, NOON, every_volume=True, top=5)
    assert [(entry.broker_id, entry.volume_name) for entry in every] == [
        (1, "/dev/b"),
        (0, "/dev/a"),
    ]


def test_topic_rows_carry_share_growth_and_the_retention_outlook() -> None:
    state, decision = cluster()
    rows = cluster_status(state, decision, NOON).volumes
    (entry,) = volume_topics(rows, collected().documents, CONFIGS, NOON, every_volume=False, top=5)
    assert entry.state == "PAUSE"
    assert entry.usage_age_seconds == 40.0
    assert (entry.other_topics, entry.other_bytes) == (3, 100 * MIB)
    orders, clicks, logs = entry.topics
    assert (orders.topic, orders.bytes, orders.share_percent) == ("orders", 6 * GIB, 60.0)
    assert orders.growth_15m is not None
    assert orders.growth_15m.bytes == 900 * MIB
    assert orders.growth_24h is not None
    assert orders.growth_24h.seconds == 600.0
    assert (orders.retention.outlook, orders.retention.bound_bytes) == ("unbounded", None)
    assert orders.retention.fits_in_free_space is False
    assert clicks.retention.outlook == "bounded"
    assert clicks.retention.bound_bytes == 2 * (GIB + 100 * MIB)
    # bound 2.2 GiB, holds 2 GiB, 1 GiB free: retention stops it before the disk is full
    assert clicks.retention.fits_in_free_space is True
    assert logs.retention.outlook == "unknown"
    assert logs.retention.detail == NOT_AUTHORIZED


def test_the_table_names_the_topics_their_growth_spans_and_outlooks() -> None:
    state, decision = cluster()
    status = cluster_status(state, decision, NOON)
    usage = collected()
    status = status.model_copy(
        update={
            "topics": volume_topics(
                status.volumes, usage.documents, CONFIGS, NOON, every_volume=False, top=5
            )
        }
    )
    text = render_status_table(status)
    assert "top topics of broker 1 volume /dev/b (PAUSE), surveyed 40s ago" in text
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("TOPIC"))
    assert header.split() == [
        "TOPIC",
        "BYTES",
        "SHARE",
        "GROWTH",
        "15M",
        "GROWTH",
        "24H",
        "RETENTION",
    ]
    orders = next(line for line in lines if line.startswith("orders"))
    assert "60.0%" in orders
    assert "+900.0 MiB/15m" in orders
    assert "+2.0 GiB/10m" in orders
    assert "unbounded" in orders
    clicks = next(line for line in lines if line.startswith("clicks"))
    assert "-1.0 MiB/5m" in clicks
    assert "bounded at 2.2 GiB" in clicks
    logs = next(line for line in lines if line.startswith("logs"))
    assert "retention: unknown (not authorized to describe configs)" in logs
    assert "other: 3 topics, 100.0 MiB" in text
    document = status_as_json(status)
    assert document["topics"][0]["topics"][0]["growth15m"] == {"bytes": 900 * MIB, "seconds": 900.0}
    assert document["topics"][0]["topics"][0]["sharePercent"] == 60.0


def test_a_throttled_volume_without_usage_says_so() -> None:
    state, decision = cluster()
    status = cluster_status(state, decision, NOON)
    shown = volume_topics(status.volumes, {}, {}, NOON, every_volume=False, top=5)
    assert shown[0].topics == []
    assert shown[0].problem is not None
    text = render_status_table(status.model_copy(update={"topics": shown}))
    assert "no topic usage published for broker 1 volume /dev/b" in text


def test_refused_records_are_counted_and_a_tombstone_forgets_the_broker() -> None:
    usage = collected()
    usage.apply(b"1", b"{not json", [], NOON)
    usage.apply(b"2", usage_value(1, "/dev/b", LOGS), [], NOON)
    assert usage.refused == {"malformed_json": 1, "key_mismatch": 1}
    assert sorted(usage.documents) == [0, 1]
    usage.apply(b"0", None, [], NOON)
    assert sorted(usage.documents) == [1]


CA = TestCertificateAuthority()
TRUST = SignatureTrust(ca_certificates=[CA.certificate], broker_identities=["CN=kafka-{broker}"])


def signer(common_name: str) -> SnapshotSigner:
    private_key = ec.generate_private_key(ec.SECP256R1())
    certificate = CA.certify(private_key.public_key(), common_name, timedelta(days=30), ())
    return SnapshotSigner(private_key, certificate.public_bytes(serialization.Encoding.DER))


def test_signatures_are_checked_with_the_snapshot_policy() -> None:
    now = datetime.now(UTC)
    value = usage_value(1, "/dev/b", LOGS)
    good = signer("kafka-1").headers(b"1", value)
    wrong = signer("kafka-2").headers(b"1", value)
    required = UsageCollection(SignatureMode.REQUIRE, TRUST)
    required.apply(b"1", value, list(wrong), now)
    required.apply(b"1", value, [], now)
    assert required.documents == {}
    assert required.refused == {"signature_wrong_identity": 1, "signature_unsigned": 1}
    required.apply(b"1", value, list(good), now)
    assert sorted(required.documents) == [1]
    warned = UsageCollection(SignatureMode.WARN, TRUST)
    warned.apply(b"1", value, [], now)
    assert sorted(warned.documents) == [1]
    assert warned.unverified == {"signature_unsigned": 1}
