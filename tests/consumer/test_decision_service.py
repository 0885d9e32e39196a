"""The consumer loop against fakes: a scripted topic, a scripted cluster, a manual clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding
from prometheus_client import CollectorRegistry

from consumer.cluster_state import ClusterState
from consumer.consumer_metrics import ConsumerMetrics
from consumer.decision_service import DecisionService, LoopTiming, SignaturePolicy
from consumer.override_follower import OverrideFollower
from consumer.policy import DecisionPolicy
from consumer.signatures import SignatureMode, SignatureTrust
from consumer.snapshot_topic_reader import TopicRecord
from consumer.usage_follower import UsageFollower
from publisher.signing import SnapshotSigner
from schemas.decision import OnMissing, QuotaDecision, QuotaState, ReasonKind
from tests.publisher.tls_material import TestCertificateAuthority
from tests.snapshot_factory import NOON, snapshot_line, volume


class ScriptedTopic:
    def __init__(self, backlog: list[TopicRecord], fail_assign: int = 0) -> None:
        self.pending = list(backlog)
        self.end_at_start = len(backlog)
        self.read = 0
        self.assigned = False
        self.fail_assign = fail_assign

    @property
    def caught_up(self) -> bool:
        return self.assigned and self.read >= self.end_at_start

    def assign_from_beginning(self, timeout_seconds: float = 10.0) -> None:
        if self.fail_assign:
            self.fail_assign -= 1
            raise RuntimeError("broker transport failure")
        self.assigned = True

    def poll(self, timeout_seconds: float, max_records: int = 500) -> Iterator[TopicRecord]:
        batch, self.pending = self.pending[:max_records], self.pending[max_records:]
        for record in batch:
            self.read += 1
            yield record

    def publish(self, key: bytes, value: bytes | None) -> None:
        self.pending.append(TopicRecord(key, value, 0, len(self.pending)))

    reconnects: int = 0
    fail_reconnect: bool = False

    def reconnect(self, timeout_seconds: float = 2.0) -> str | None:
        if self.fail_reconnect:
            raise RuntimeError("cannot create a consumer")
        self.reconnects += 1
        return f"broker-{self.reconnects}:9093"


def record(broker_id: int, free: int = 900, at: datetime = NOON) -> TopicRecord:
    value = snapshot_line(broker_id=broker_id, volumes=[volume("v", 1000, 1000 - free)], at=at)
    return TopicRecord(str(broker_id).encode(), value, 0, 0)


class Harness:
    def __init__(
        self,
        backlog: list[TopicRecord],
        *,
        on_missing: OnMissing = OnMissing.PAUSE,
        signatures: SignaturePolicy | None = None,
        reconnect_when_quiet: float | None = None,
        overrides: OverrideFollower | None = None,
        usage: UsageFollower | None = None,
        **kw: int,
    ) -> None:
        self.now = NOON + timedelta(seconds=1)
        self.topic = ScriptedTopic(backlog, **kw)
        self.live: frozenset[int] | Exception = frozenset({0, 1, 2})
        self.written: list[QuotaDecision] = []
        self.registry = CollectorRegistry()
        self.service = DecisionService(
            ClusterState(DecisionPolicy(on_missing=on_missing)),
            source=self.topic,
            live_brokers=self.live_brokers,
            clock=self,
            sink=self.written.append,
            metrics=ConsumerMetrics(self.registry),
            timing=LoopTiming(
                poll_timeout_seconds=0,
                live_broker_refresh_seconds=5,
                reconnect_when_quiet_seconds=reconnect_when_quiet,
            ),
            signatures=signatures or SignaturePolicy(),
            overrides=overrides,
            usage=usage,
        )

    def wall(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return (self.now - NOON).total_seconds()

    def live_brokers(self) -> frozenset[int]:
        if isinstance(self.live, Exception):
            raise self.live
        return self.live

    def metric(self, name: str, **labels: str) -> float:
        value = self.registry.get_sample_value(name, labels)
        assert value is not None, name
        return value


def test_all_fine_after_catching_up_is_open_and_ready() -> None:
    harness = Harness([record(0), record(1), record(2)])
    decision = harness.service.step()
    assert decision.state is QuotaState.OPEN
    assert harness.service.ready
    assert harness.written[-1] == decision
    assert harness.service.current.decision is decision
    assert harness.metric("volume_quota_throttle_factor") == 1.0


def test_until_caught_up_the_on_missing_action_applies() -> None:
    backlog = [record(0), record(1), record(2)] * 400  # more than one poll batch of 500
    harness = Harness(backlog)
    first = harness.service.step()
    assert first.state is QuotaState.PAUSE
    assert first.reasons[0].kind is ReasonKind.NOT_READY
    assert not harness.service.ready
    assert harness.metric("volume_quota_consumer_caught_up") == 0
    harness.service.step()
    harness.service.step()
    assert harness.service.step().state is QuotaState.OPEN
    assert harness.metric("volume_quota_consumer_caught_up") == 1


def test_a_filling_volume_elsewhere_throttles_then_pauses() -> None:
    harness = Harness([record(0), record(1), record(2)])
    harness.service.step()
    harness.topic.publish(b"2", record(2, free=150, at=NOON + timedelta(seconds=1)).value)
    throttled = harness.service.step()
    assert (throttled.state, throttled.throttle_factor) == (QuotaState.THROTTLE, 0.5)
    harness.topic.publish(b"2", record(2, free=80, at=NOON + timedelta(seconds=2)).value)
    assert harness.service.step().state is QuotaState.PAUSE
    assert harness.metric("volume_quota_decision_state", state="PAUSE") == 1


def test_invalid_messages_are_counted_and_skipped() -> None:
    harness = Harness([record(0), record(1), record(2), TopicRecord(b"1", b"{oops", 0, 3)])
    assert harness.service.step().state is QuotaState.OPEN
    assert harness.metric("volume_quota_invalid_messages_total", reason="malformed_json") == 1


def test_tombstone_retires_a_dead_broker_breach() -> None:
    harness = Harness([record(0), record(1), record(2), record(7, free=10)])
    assert harness.service.step().state is QuotaState.PAUSE
    harness.topic.publish(b"7", None)
    assert harness.service.step().state is QuotaState.OPEN


def test_stale_snapshots_fail_safe_after_stale_after() -> None:
    harness = Harness([record(0), record(1), record(2)])
    harness.service.step()
    harness.now = NOON + timedelta(seconds=61)
    decision = harness.service.step()
    assert (decision.state, decision.caused_by_missing_data) == (QuotaState.PAUSE, True)
    assert harness.metric("volume_quota_stale_snapshots") == 3
    assert harness.metric("volume_quota_throttling_for_missing_data") == 1


def test_live_brokers_unknown_means_not_ready_and_errors_are_counted() -> None:
    harness = Harness([record(0), record(1), record(2)])
    harness.live = RuntimeError("timed out")
    decision = harness.service.step()
    assert decision.state is QuotaState.PAUSE
    assert "live brokers are not known" in decision.reasons[0].detail
    assert harness.metric("volume_quota_live_broker_refresh_errors_total") == 1


def test_an_unreachable_topic_is_retried_without_crashing() -> None:
    harness = Harness([record(0), record(1), record(2)], fail_assign=1)
    assert harness.service.step().state is QuotaState.PAUSE
    assert harness.metric("volume_quota_snapshot_topic_errors_total") == 1
    harness.now += timedelta(seconds=3)
    assert harness.service.step().state is QuotaState.OPEN


def test_unchanged_decisions_are_rewritten_only_to_refresh_valid_until() -> None:
    harness = Harness([record(0), record(1), record(2)])
    harness.service.step()
    harness.service.step()
    assert len(harness.written) == 1
    harness.now += timedelta(seconds=10)
    harness.service.step()
    assert len(harness.written) == 2
    assert harness.written[1].valid_until > harness.written[0].valid_until


def test_failed_write_makes_the_service_not_ready_and_is_retried() -> None:
    harness = Harness([record(0), record(1), record(2)])
    attempts: list[QuotaDecision] = []

    def full_disk(decision: QuotaDecision) -> None:
        attempts.append(decision)
        raise OSError(28, "No space left on device")

    harness.service._sink = full_disk  # the loop's one outlet, swapped for a failing one
    harness.service.step()
    harness.service.step()
    assert len(attempts) == 1, "a failing sink is not hammered on every turn"
    harness.now += timedelta(seconds=2)  # LoopTiming.retry_seconds
    harness.service.step()
    assert len(attempts) == 2, "but it is retried"
    assert not harness.service.ready
    assert harness.metric("volume_quota_decision_file_write_errors_total") == 2
    harness.service._sink = harness.written.append  # the disk has room again
    harness.now += timedelta(seconds=2)
    harness.service.step()
    assert harness.service.ready


@pytest.mark.parametrize("on_missing", list(OnMissing))
def test_on_missing_open_keeps_producers_running_while_catching_up(on_missing: OnMissing) -> None:
    harness = Harness([record(0), record(1), record(2)] * 400, on_missing=on_missing)
    expected = QuotaState.PAUSE if on_missing is OnMissing.PAUSE else QuotaState.OPEN
    assert harness.service.step().state is expected


def test_a_new_source_after_rotation_keeps_the_state_and_readiness() -> None:
    harness = Harness([record(0), record(1), record(2, free=150)])
    assert harness.service.step().state is QuotaState.THROTTLE
    replacement = ScriptedTopic([record(0), record(1)] * 400)  # replays from the beginning
    harness.service.replace_source(replacement, harness.live_brokers)
    decision = harness.service.step()
    assert decision.state is QuotaState.THROTTLE, "no fail-safe PAUSE while the new reader replays"
    assert harness.service.ready


def signed_record(signer: SnapshotSigner, broker_id: int, free: int, at: datetime) -> TopicRecord:
    key = str(broker_id).encode()
    value = snapshot_line(broker_id=broker_id, volumes=[volume("v", 1000, 1000 - free)], at=at)
    return TopicRecord(key, value, 0, 0, tuple(signer.headers(key, value)))


def signature_harness(mode: SignatureMode) -> tuple[Harness, dict[int, SnapshotSigner]]:
    """Brokers 0-2 each signing with CN=kafka-<id>; broker 2 is full (under the hard limit)."""
    authority = TestCertificateAuthority()
    signers = {}
    for broker_id in range(3):
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = authority.certify(key.public_key(), f"kafka-{broker_id}")
        signers[broker_id] = SnapshotSigner(key, certificate.public_bytes(Encoding.DER))
    trust = SignatureTrust([authority.certificate], broker_identities=["CN=kafka-{broker}"])
    now = datetime.now(UTC)
    backlog = [signed_record(signers[b], b, 80 if b == 2 else 900, now) for b in range(3)]
    harness = Harness(backlog, signatures=SignaturePolicy(mode, trust))
    harness.now = now + timedelta(seconds=1)
    return harness, signers


def test_required_signatures_reject_a_forged_all_clear_and_keep_the_breach() -> None:
    harness, signers = signature_harness(SignatureMode.REQUIRE)
    assert harness.service.step().state is QuotaState.PAUSE  # broker 2 is full, signed by 2
    forged = signed_record(signers[1], 2, 900, harness.now)  # broker 1 says "2 is fine"
    harness.topic.pending.append(forged)
    assert harness.service.step().state is QuotaState.PAUSE
    assert harness.metric("volume_quota_snapshot_signature_checks_total", outcome="valid") == 3
    assert (
        harness.metric("volume_quota_snapshot_signature_checks_total", outcome="wrong_identity")
        == 1
    )
    assert harness.metric("volume_quota_invalid_messages_total", reason="signature") == 1
    harness.topic.pending.append(TopicRecord(b"2", forged.value, 0, 9))  # and unsigned
    assert harness.service.step().state is QuotaState.PAUSE
    assert harness.metric("volume_quota_snapshot_signature_checks_total", outcome="unsigned") == 1


def test_a_breach_signed_before_its_certificate_expired_still_counts_after_a_restart() -> None:
    """A breach outlives its broker, also when the broker's certificate expired since: a decider
    that restarts judges each signature at the instant the snapshot says it was signed."""
    authority = TestCertificateAuthority()
    signers = {}
    for broker_id, lifetime in ((0, timedelta(days=30)), (1, timedelta(days=30)), (2, None)):
        key = ec.generate_private_key(ec.SECP256R1())
        valid_for = lifetime or timedelta(minutes=1)
        certificate = authority.certify(key.public_key(), f"kafka-{broker_id}", valid_for)
        signers[broker_id] = SnapshotSigner(key, certificate.public_bytes(Encoding.DER))
    signed_at = datetime.now(UTC)
    restart = signed_at + timedelta(days=1)
    breach = signed_record(signers[2], 2, 80, signed_at)
    fresh = [signed_record(signers[b], b, 900, restart) for b in (0, 1)]
    trust = SignatureTrust([authority.certificate], broker_identities=["CN=kafka-{broker}"])
    harness = Harness([breach, *fresh], signatures=SignaturePolicy(SignatureMode.REQUIRE, trust))
    harness.now = restart + timedelta(seconds=1)
    harness.live = frozenset({0, 1})  # broker 2 is down, its certificate expired meanwhile
    decision = harness.service.step()
    assert decision.state is QuotaState.PAUSE
    assert not decision.caused_by_missing_data
    assert harness.metric("volume_quota_snapshot_signature_checks_total", outcome="valid") == 3
    # The expired certificate cannot vouch for anything dated after it expired.
    harness.topic.pending.append(signed_record(signers[2], 2, 900, harness.now))
    assert harness.service.step().state is QuotaState.PAUSE
    expired = "expired_certificate"
    assert harness.metric("volume_quota_snapshot_signature_checks_total", outcome=expired) == 1


def test_warn_counts_a_bad_signature_but_uses_the_snapshot() -> None:
    harness, signers = signature_harness(SignatureMode.WARN)
    assert harness.service.step().state is QuotaState.PAUSE
    harness.topic.pending.append(signed_record(signers[1], 2, 900, harness.now))
    assert harness.service.step().state is QuotaState.OPEN  # migration: still believed
    assert (
        harness.metric("volume_quota_snapshot_signature_checks_total", outcome="wrong_identity")
        == 1
    )


def test_a_reader_that_reads_nothing_for_the_quiet_limit_is_reconnected_once_per_limit() -> None:
    harness = Harness([record(0), record(1), record(2)], reconnect_when_quiet=5.0)
    harness.service.step()  # caught up: the quiet time counts from here
    for _ in range(4):
        harness.now += timedelta(seconds=1)
        harness.service.step()
    assert harness.topic.reconnects == 0, "4 s without a record is not yet quiet"
    harness.now += timedelta(seconds=1.5)
    harness.service.step()
    assert harness.topic.reconnects == 1
    assert harness.metric("volume_quota_snapshot_reader_reconnects_total") == 1
    harness.now += timedelta(seconds=4)
    harness.service.step()
    assert harness.topic.reconnects == 1, "the next attempt waits a whole quiet limit"
    harness.now += timedelta(seconds=1.5)
    harness.service.step()
    assert harness.topic.reconnects == 2


def test_the_override_reader_is_rebuilt_with_the_snapshot_reader() -> None:
    # The override topic has no heartbeat: a reader stuck on a cut-off leader reads nothing,
    # just like one on a topic nobody writes, so it follows the snapshot reader's lead.
    override_topic = ScriptedTopic([])
    follower = OverrideFollower(override_topic, CollectorRegistry())
    harness = Harness(
        [record(0), record(1), record(2)], reconnect_when_quiet=5.0, overrides=follower
    )
    harness.service.step()
    harness.now += timedelta(seconds=4)
    harness.service.step()
    assert override_topic.reconnects == 0
    harness.now += timedelta(seconds=1.5)
    harness.service.step()
    assert (harness.topic.reconnects, override_topic.reconnects) == (1, 1)


def test_records_arriving_keep_the_reader_from_reconnecting() -> None:
    harness = Harness([record(0), record(1), record(2)], reconnect_when_quiet=5.0)
    harness.service.step()
    for second in range(1, 61):
        harness.now = NOON + timedelta(seconds=second)
        if second % 4 == 0:  # a heartbeat every 4 s, under the 5 s limit
            harness.topic.publish(b"0", record(0, at=harness.now).value)
        harness.service.step()
    assert harness.topic.reconnects == 0


def test_a_reader_still_catching_up_is_not_reconnected() -> None:
    harness = Harness([record(0)] * 2000, reconnect_when_quiet=5.0)
    harness.topic.end_at_start = 10**6  # never caught up
    for second in range(30):
        harness.now = NOON + timedelta(seconds=second)
        harness.service.step()
    assert harness.topic.reconnects == 0


def test_a_failed_reconnect_is_counted_and_the_loop_goes_on() -> None:
    harness = Harness([record(0), record(1), record(2)], reconnect_when_quiet=5.0)
    harness.service.step()
    harness.topic.fail_reconnect = True
    harness.now += timedelta(seconds=6)
    decision = harness.service.step()
    assert harness.metric("volume_quota_snapshot_topic_errors_total") == 1
    assert harness.metric("volume_quota_snapshot_reader_reconnects_total") == 0
    assert decision.state is QuotaState.OPEN
