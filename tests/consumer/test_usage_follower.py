"""The decider following the usage topic: latest summary per broker, refusals counted, an
unreadable topic reported once and never in the way of the decision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding
from prometheus_client import CollectorRegistry

from consumer.signatures import SignatureMode, SignatureTrust
from consumer.snapshot_topic_reader import TopicAccessDeniedError, TopicRecord
from consumer.usage_follower import UsageFollower
from publisher.signing import SnapshotSigner
from schemas.decision import QuotaState
from tests.consumer.test_decision_service import Harness, ScriptedTopic, record
from tests.consumer.test_topic_growth import FILLING, NOW, document, topic
from tests.publisher.tls_material import TestCertificateAuthority

MIB = 1024**2


def usage_record(broker_id: int, value: bytes | None) -> TopicRecord:
    return TopicRecord(str(broker_id).encode(), value, 0, 0)


def follower(
    topic_: ScriptedTopic,
    mode: SignatureMode = SignatureMode.ACCEPT,
    trust: SignatureTrust | None = None,
) -> tuple[UsageFollower, CollectorRegistry]:
    registry = CollectorRegistry()
    return UsageFollower(topic_, registry, mode=mode, trust=trust, retry_seconds=10), registry


def test_the_latest_document_of_each_broker_is_kept_as_a_summary() -> None:
    older = document(2, [topic("old", MIB, MIB)], at=NOW - timedelta(seconds=60))
    scripted = ScriptedTopic([usage_record(2, older.to_json_bytes())])
    usage, _ = follower(scripted)
    usage.follow(0.0, NOW)
    assert [t.topic for t in usage.summaries[2].volumes["/data"]] == ["old"]
    scripted.publish(b"2", FILLING.to_json_bytes())
    usage.follow(1.0, NOW)
    assert [t.topic for t in usage.summaries[2].volumes["/data"]] == ["orders", "clicks", "audit"]
    scripted.publish(b"2", None)  # tombstone: the broker retired
    usage.follow(2.0, NOW)
    assert usage.summaries == {}


def test_refused_records_are_counted_by_reason_and_never_kept() -> None:
    scripted = ScriptedTopic([usage_record(2, b"{not json"), usage_record(2, b'{"a": 1}')])
    scripted.publish(b"x", None)
    usage, registry = follower(scripted)
    usage.follow(0.0, NOW)
    assert usage.summaries == {}
    refused = {
        sample.labels["reason"]: sample.value
        for metric in registry.collect()
        if metric.name == "volume_quota_usage_records_refused"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.value
    }
    assert refused == {"malformed_json": 1, "invalid_field": 1, "invalid_key": 1}


def signer(common_name: str, authority: TestCertificateAuthority) -> SnapshotSigner:
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = authority.certify(key.public_key(), common_name)
    return SnapshotSigner(key, certificate.public_bytes(Encoding.DER))


def test_required_signatures_refuse_a_document_signed_for_another_broker() -> None:
    authority = TestCertificateAuthority()
    trust = SignatureTrust([authority.certificate], broker_identities=["CN=kafka-{broker}"])
    value = FILLING.to_json_bytes()
    wrong = TopicRecord(b"2", value, 0, 0, tuple(signer("kafka-1", authority).headers(b"2", value)))
    good = TopicRecord(b"2", value, 0, 1, tuple(signer("kafka-2", authority).headers(b"2", value)))
    scripted = ScriptedTopic([wrong])
    usage, registry = follower(scripted, SignatureMode.REQUIRE, trust)
    usage.follow(0.0, datetime.now(UTC))
    assert usage.summaries == {}
    assert (
        registry.get_sample_value(
            "volume_quota_usage_records_refused_total", {"reason": "signature_wrong_identity"}
        )
        == 1
    )
    scripted.pending.append(good)
    usage.follow(1.0, datetime.now(UTC))
    assert 2 in usage.summaries


class DeniedTopic(ScriptedTopic):
    def assign_from_beginning(self, timeout_seconds: float = 10.0) -> None:
        self.attempts = getattr(self, "attempts", 0) + 1
        raise TopicAccessDeniedError("TOPIC_AUTHORIZATION_FAILED")


def test_an_unreadable_topic_is_reported_once_counted_and_retried_later(
    capsys: pytest.CaptureFixture[str],
) -> None:
    denied = DeniedTopic([])
    usage, registry = follower(denied)
    for moment in (0.0, 1.0, 5.0, 10.5, 11.0, 21.0):
        usage.follow(moment, NOW)
    assert denied.attempts == 3  # at 0, 10.5 and 21: every retry_seconds, not every step
    assert (
        registry.get_sample_value("volume_quota_usage_topic_unreadable_total", {"reason": "denied"})
        == 3
    )
    assert usage.problem is not None
    assert "usage topic" in usage.problem
    lines = capsys.readouterr().out.splitlines()
    assert len([line for line in lines if "usage topic not readable" in line]) == 1


def test_the_decision_names_the_topics_and_a_broken_usage_topic_changes_nothing() -> None:
    full = [record(0), record(1), record(2, free=80)]  # broker 2 under its hard limit
    fresh = document(2, FILLING.volumes[0].topics, volume="v", at=NOW)
    usage_topic = ScriptedTopic([usage_record(2, fresh.to_json_bytes())])
    harness = Harness(full, usage=UsageFollower(usage_topic, CollectorRegistry()))
    harness.now = NOW + timedelta(seconds=1)
    first = harness.service.step()  # the usage topic is read after the decision is handed on
    assert first.reasons[0].top_topics is None
    decision = harness.service.step()
    assert decision.state is QuotaState.PAUSE
    assert "top growth orders +1.2 GiB/15m" in decision.reasons[0].detail
    harness.now += timedelta(seconds=11)  # named topics are not material: the next refresh
    harness.service.step()
    assert harness.written[-1].reasons[0].top_topics is not None

    broken = Harness(full, usage=UsageFollower(DeniedTopic([]), CollectorRegistry()))
    broken.now = harness.now
    broken.service.step()
    plain = broken.service.step()
    assert plain.state is QuotaState.PAUSE
    assert plain.reasons[0].top_topics is None
    assert broken.service.ready
