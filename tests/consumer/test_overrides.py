"""The operator's override: parsed strictly, in force only until it expires, first reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client import CollectorRegistry

from consumer.cluster_state import ClusterState
from consumer.override_follower import REFUSALS_KEPT, OverrideFollower
from consumer.overrides import (
    CLEARED,
    OverridePolicy,
    OverrideVerdict,
    RefusalReason,
    in_force,
    interpret_override,
    judge_override_record,
)
from consumer.policy import DecisionPolicy
from consumer.signatures import SignatureMode
from consumer.snapshot_topic_reader import (
    TopicAccessDeniedError,
    TopicRecord,
    TopicUnavailableError,
)
from publisher.signing import SnapshotSigner
from schemas.decision import QuotaState, ReasonKind
from schemas.decode import Rejection, RejectionReason
from schemas.override import QuotaOverride
from tests.publisher.tls_material import TestCertificateAuthority
from tests.snapshot_factory import NOON, make_snapshot, volume

UNTIL = NOON + timedelta(minutes=30)


def record(state: str = "OPEN", set_at: datetime = NOON, until: datetime = UNTIL) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 1,
            "state": state,
            "reason": "false alarm on broker 2",
            "setBy": "oncall",
            "setAt": set_at.isoformat(),
            "expiresAt": until.isoformat(),
        }
    ).encode()


def paused_cluster() -> ClusterState:
    """Broker 2 is under its hard limit: the rule says PAUSE."""
    state = ClusterState(DecisionPolicy())
    state.apply_snapshot(make_snapshot(broker_id=2, volumes=[volume("v", 1000, 950)]))
    state.set_live_brokers({2})
    return state


def test_a_record_sets_an_override_and_a_tombstone_clears_it() -> None:
    override = interpret_override(b"cluster", record())
    assert isinstance(override, QuotaOverride)
    assert override.state is QuotaState.OPEN
    assert interpret_override(b"cluster", None) is CLEARED


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"broker-1", record()),  # only the one reserved key
        (b"cluster", record(state="THROTTLE")),  # OPEN or PAUSE only
        (b"cluster", record(until=NOON - timedelta(seconds=1))),  # ends before it starts
        (b"cluster", record(until=NOON + timedelta(hours=24, seconds=1))),  # over a day
        (b"cluster", b"{not json"),
    ],
)
def test_unusable_records_are_rejections(key: bytes, value: bytes) -> None:
    assert isinstance(interpret_override(key, value), Rejection)


@pytest.mark.parametrize(
    "value",
    [
        # The last "state" would win in a lenient parser: one reader may see OPEN, another PAUSE.
        record().replace(b'"state": "OPEN"', b'"state": "PAUSE", "state": "OPEN"'),
        record().replace(b'"schemaVersion": 1', b'"schemaVersion": 1, "extra": NaN'),
        record().replace(
            b'"schemaVersion": 1', b'"schemaVersion": 1, "pad": "' + b"x" * 1_100_000 + b'"'
        ),
    ],
    ids=["duplicate-name", "nan", "oversized"],
)
def test_an_override_is_read_by_the_same_strict_json_rules_as_a_snapshot(value: bytes) -> None:
    rejection = interpret_override(b"cluster", value)
    assert isinstance(rejection, Rejection)
    assert rejection.reason in (RejectionReason.MALFORMED_JSON, RejectionReason.TOO_LARGE)


def test_in_force_from_set_at_until_just_before_expiry() -> None:
    override = interpret_override(b"cluster", record())
    assert isinstance(override, QuotaOverride)
    assert not in_force(override, NOON - timedelta(seconds=1))
    assert in_force(override, NOON)
    assert in_force(override, UNTIL - timedelta(microseconds=1))
    assert not in_force(override, UNTIL)
    assert not in_force(None, NOON)


def test_an_override_forces_the_state_says_so_first_and_never_outlives_itself() -> None:
    override = interpret_override(b"cluster", record(until=NOON + timedelta(seconds=10)))
    assert isinstance(override, QuotaOverride)
    state = paused_cluster()
    now = NOON + timedelta(seconds=5)
    assert state.decide(now).state is QuotaState.PAUSE
    forced = state.decide(now, override=override)
    assert (forced.state, forced.throttle_factor) == (QuotaState.OPEN, 1.0)
    assert forced.reasons[0].kind is ReasonKind.OVERRIDE
    assert "oncall" in forced.reasons[0].detail
    assert "false alarm on broker 2" in forced.reasons[0].detail
    assert forced.reasons[1].kind is ReasonKind.LIMIT  # what the rule would say
    assert forced.valid_until == NOON + timedelta(seconds=10)  # not the usual 30 s
    after = state.decide(NOON + timedelta(seconds=10), override=override)
    assert after.state is QuotaState.PAUSE


class Topic:
    """A scripted override topic: missing until ``create`` is called."""

    def __init__(self) -> None:
        self.exists = False
        self.denied = False
        self.assigned = False
        self.pending: list[TopicRecord] = []

    @property
    def caught_up(self) -> bool:
        return self.assigned and not self.pending

    def assign_from_beginning(self, timeout_seconds: float = 10.0) -> None:
        if self.denied:
            raise TopicAccessDeniedError("topic '__volume_quota_overrides': Authorization failed")
        if not self.exists:
            raise TopicUnavailableError("topic '__volume_quota_overrides' is not readable")
        self.assigned = True

    def poll(self, timeout_seconds: float, max_records: int = 500) -> Iterator[TopicRecord]:
        batch, self.pending = self.pending, []
        yield from batch

    reconnects = 0
    fail_reconnect = False

    def reconnect(self, timeout_seconds: float = 2.0) -> str | None:
        if self.fail_reconnect:
            raise RuntimeError("cannot create a consumer")
        self.reconnects += 1
        return f"broker-{self.reconnects}:9093"


def test_the_follower_sees_the_first_override_ever_within_its_retry_interval() -> None:
    topic, registry = Topic(), CollectorRegistry()
    follower = OverrideFollower(topic, registry, retry_seconds=2.0)
    assert follower.current(0.0, NOON) is None
    assert follower.settled  # no override topic: nothing to wait for
    topic.exists = True
    topic.pending.append(TopicRecord(b"cluster", record(state="PAUSE"), 0, 0))
    assert follower.current(1.0, NOON) is None  # retried only every 2 s
    forced = follower.current(2.0, NOON + timedelta(seconds=1))
    assert forced is not None
    assert forced.state is QuotaState.PAUSE
    assert registry.get_sample_value("volume_quota_override_active", {"state": "PAUSE"}) == 1
    assert registry.get_sample_value("volume_quota_override_expiry_timestamp_seconds") == (
        UNTIL.timestamp()
    )
    topic.pending.append(TopicRecord(b"cluster", None, 0, 1))
    assert follower.current(3.0, NOON + timedelta(seconds=2)) is None
    assert registry.get_sample_value("volume_quota_override_active", {"state": "PAUSE"}) == 0


def test_the_follower_rebuilds_its_reader_only_once_it_has_one() -> None:
    topic = Topic()
    follower = OverrideFollower(topic, CollectorRegistry())
    assert follower.reconnect() is None  # not assigned yet: nothing to rebuild
    assert topic.reconnects == 0
    topic.exists = True
    follower.current(0.0, NOON)
    assert follower.reconnect() == "broker-1:9093"
    assert topic.reconnects == 1


def test_a_failed_rebuild_of_the_override_reader_leaves_the_follower_working() -> None:
    topic = Topic()
    topic.exists = True
    follower = OverrideFollower(topic, CollectorRegistry())
    follower.current(0.0, NOON)
    topic.fail_reconnect = True
    assert follower.reconnect() is None
    topic.pending.append(TopicRecord(b"cluster", record(state="PAUSE"), 0, 0))
    forced = follower.current(1.0, NOON + timedelta(seconds=1))
    assert forced is not None
    assert forced.state is QuotaState.PAUSE


def test_an_override_topic_this_principal_may_not_read_is_an_error_not_an_absence() -> None:
    # Kafka answers TOPIC_AUTHORIZATION_FAILED whether or not the topic exists: an operator's
    # override may be there, unseen. Shown (metric, readiness), never read as "no override".
    topic, registry = Topic(), CollectorRegistry()
    topic.denied = True
    follower = OverrideFollower(topic, registry, retry_seconds=2.0)
    assert follower.current(0.0, NOON) is None
    assert follower.problem is not None
    assert "not allowed to read" in follower.problem
    assert registry.get_sample_value("volume_quota_override_topic_access_denied") == 1
    topic.denied = False
    topic.exists = True
    follower.current(2.0, NOON)
    assert follower.problem is None
    assert registry.get_sample_value("volume_quota_override_topic_access_denied") == 0


def test_an_override_set_to_start_later_is_shown_while_it_waits() -> None:
    # Within the allowed skew only (an operator's clock a little ahead of the broker's).
    topic, registry = Topic(), CollectorRegistry()
    topic.exists = True
    later = NOON + timedelta(minutes=2)
    topic.pending.append(
        TopicRecord(b"cluster", record("OPEN", later, later + timedelta(hours=1)), 0, 0)
    )
    follower = OverrideFollower(topic, registry)
    assert follower.current(0.0, NOON) is None
    assert follower.dormant(NOON) is not None
    assert registry.get_sample_value("volume_quota_override_dormant", {"state": "OPEN"}) == 1
    assert follower.current(1.0, later) is not None
    assert follower.dormant(later) is None
    assert registry.get_sample_value("volume_quota_override_dormant", {"state": "OPEN"}) == 0


# Who may set an override: records judged before they count (consumer/overrides.py).

CA = TestCertificateAuthority()
NOW = datetime.now(UTC).replace(microsecond=0)
"""Signing tests run at the real time: the throw-away certificates are valid from an hour ago."""
OPERATORS = ("CN=alice", "DNS:oncall.ops.example")


def signed_by(
    common_name: str,
    value: bytes | None,
    authority: TestCertificateAuthority = CA,
    dns_names: tuple[str, ...] = (),
) -> tuple[tuple[str, bytes | None], ...]:
    """The headers ``volume-quota override`` writes, made with a certificate for ``common_name``."""
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = authority.certify(key.public_key(), common_name, timedelta(days=1), dns_names)
    der = certificate.public_bytes(serialization.Encoding.DER)
    return tuple(SnapshotSigner(key, der).headers(b"cluster", value))


def policy(mode: SignatureMode = SignatureMode.REQUIRE) -> OverridePolicy:
    return OverridePolicy(mode, [CA.certificate], OPERATORS, max_set_at_skew_seconds=300)


def fresh(state: str = "OPEN", set_at: datetime = NOW) -> bytes:
    return record(state, set_at, set_at + timedelta(minutes=30))


def judge(
    value: bytes | None,
    headers: tuple[tuple[str, bytes | None], ...] = (),
    mode: SignatureMode = SignatureMode.REQUIRE,
    arrived_at: datetime | None = NOW,
    now: datetime = NOW,
) -> OverrideVerdict:
    return judge_override_record(
        b"cluster", value, headers, arrived_at=arrived_at, now=now, policy=policy(mode)
    )


def refusal_reason(verdict: OverrideVerdict) -> RefusalReason | None:
    return None if verdict.refusal is None else verdict.refusal.reason


def test_an_unsigned_override_is_refused_when_signatures_are_required() -> None:
    verdict = judge(fresh())
    assert refusal_reason(verdict) is RefusalReason.UNSIGNED
    assert verdict.override is None


def test_an_override_signed_by_a_certificate_that_is_no_operator_is_refused() -> None:
    # The cluster CA issued it (a broker's own certificate, say): trusted, but no operator.
    value = fresh()
    verdict = judge(value, signed_by("kafka-2", value))
    assert refusal_reason(verdict) is RefusalReason.NOT_AN_OPERATOR
    assert verdict.refusal is not None
    assert verdict.refusal.signer == "CN=kafka-2"


def test_an_identity_is_matched_on_the_whole_subject_never_on_a_common_name_inside_it() -> None:
    value = fresh()
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "attacker"),
        ]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(CA.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - timedelta(hours=1))
        .not_valid_after(NOW + timedelta(days=1))
        .sign(CA.key, hashes.SHA256())
    )
    der = certificate.public_bytes(serialization.Encoding.DER)
    headers = tuple(SnapshotSigner(key, der).headers(b"cluster", value))
    assert refusal_reason(judge(value, headers)) is RefusalReason.NOT_AN_OPERATOR


def test_an_operator_certificate_from_another_ca_is_refused() -> None:
    value = fresh()
    verdict = judge(value, signed_by("alice", value, authority=TestCertificateAuthority()))
    assert refusal_reason(verdict) is RefusalReason.UNTRUSTED_CERTIFICATE


def test_an_operator_signature_does_not_cover_a_changed_record() -> None:
    value = fresh("PAUSE")
    headers = signed_by("alice", value)
    assert refusal_reason(judge(fresh("OPEN"), headers)) is RefusalReason.BAD_SIGNATURE


def test_set_by_is_the_operator_identity_that_signed_not_what_the_record_claims() -> None:
    value = fresh()  # claims "oncall"
    verdict = judge(value, signed_by("alice", value))
    assert verdict.refusal is None
    assert verdict.override is not None
    assert verdict.override.set_by == "CN=alice"
    assert verdict.claimed_by == "oncall"


def test_an_operator_may_be_named_by_a_dns_name_of_the_certificate() -> None:
    value = fresh()
    verdict = judge(value, signed_by("laptop-17", value, dns_names=("oncall.ops.example",)))
    assert verdict.override is not None
    assert verdict.override.set_by == "DNS:oncall.ops.example"


def test_warn_uses_an_unsigned_override_but_marks_its_author_unverified() -> None:
    verdict = judge(fresh(), mode=SignatureMode.WARN)
    assert verdict.refusal is None
    assert verdict.override is not None
    assert verdict.override.set_by.startswith("oncall (unverified: unsigned")
    assert verdict.unverified is not None


def test_accept_takes_the_record_as_it_claims() -> None:
    verdict = judge(fresh(), mode=SignatureMode.ACCEPT)
    assert verdict.override is not None
    assert verdict.override.set_by == "oncall"


def test_a_tombstone_must_be_signed_by_an_operator_too() -> None:
    assert refusal_reason(judge(None)) is RefusalReason.UNSIGNED
    cleared = judge(None, signed_by("alice", None))
    assert (cleared.refusal, cleared.override) == (None, CLEARED)


@pytest.mark.parametrize("mode", list(SignatureMode))
def test_an_override_dated_a_week_ahead_of_its_arrival_is_refused(mode: SignatureMode) -> None:
    value = fresh(set_at=NOW + timedelta(days=7))
    verdict = judge(value, signed_by("alice", value), mode=mode)
    assert refusal_reason(verdict) is RefusalReason.SET_AT_SKEW
    assert verdict.refusal is not None
    assert "from its arrival" in verdict.refusal.detail


def test_an_old_override_written_again_is_refused() -> None:
    # An operator's record copied from the topic and written again an hour later (with the
    # broker's LogAppendTime, its arrival is the broker's clock, not the copy's).
    set_at = NOW - timedelta(hours=1)
    value = fresh(set_at=set_at)
    verdict = judge(value, signed_by("alice", value), arrived_at=NOW)
    assert refusal_reason(verdict) is RefusalReason.SET_AT_SKEW


def test_a_producer_dated_record_cannot_be_ahead_of_the_readers_clock() -> None:
    # On a CreateTime topic the producer sets the arrival itself: it can make them agree.
    ahead = NOW + timedelta(days=7)
    value = fresh(set_at=ahead)
    verdict = judge(value, signed_by("alice", value), arrived_at=ahead, now=NOW)
    assert refusal_reason(verdict) is RefusalReason.SET_AT_SKEW
    assert verdict.refusal is not None
    assert "ahead of this reader's clock" in verdict.refusal.detail


def test_set_at_within_the_skew_of_its_arrival_is_accepted() -> None:
    for set_at in (NOW - timedelta(seconds=299), NOW + timedelta(seconds=299)):
        value = fresh(set_at=set_at)
        assert judge(value, signed_by("alice", value)).override is not None
    assert judge(fresh(), signed_by("alice", fresh()), arrived_at=None).override is not None


def test_an_override_written_earlier_is_still_accepted_when_read_much_later() -> None:
    # A decider (re)started an hour later reads the same record: its arrival has not changed.
    value = fresh(set_at=NOW - timedelta(hours=1))
    verdict = judge(value, signed_by("alice", value), arrived_at=NOW - timedelta(hours=1))
    assert verdict.override is not None


def arrived(
    value: bytes | None, headers: tuple[tuple[str, bytes | None], ...], offset: int
) -> TopicRecord:
    return TopicRecord(b"cluster", value, 0, offset, headers, int(NOW.timestamp() * 1000), True)


def test_a_refused_record_never_replaces_the_override_in_force_and_is_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic, registry = Topic(), CollectorRegistry()
    topic.exists = True
    follower = OverrideFollower(topic, registry, policy=policy())
    pause = fresh("PAUSE")
    topic.pending.append(arrived(pause, signed_by("alice", pause), 0))
    forced = follower.current(0.0, NOW)
    assert forced is not None
    assert (forced.state, forced.set_by) == (QuotaState.PAUSE, "CN=alice")

    forged = fresh("OPEN")
    topic.pending += [
        arrived(forged, (), 1),
        arrived(forged, signed_by("kafka-2", forged), 2),
        arrived(None, (), 3),
    ]
    forced = follower.current(1.0, NOW + timedelta(seconds=1))
    assert forced is not None
    assert forced.state is QuotaState.PAUSE, "the attacker's records do not take effect"
    reasons = [refused.reason for refused in follower.refused]
    assert reasons == [
        RefusalReason.UNSIGNED,
        RefusalReason.NOT_AN_OPERATOR,
        RefusalReason.UNSIGNED,
    ]
    refused_total = "volume_quota_override_records_refused_total"
    assert registry.get_sample_value(refused_total, {"reason": "unsigned"}) == 2
    assert registry.get_sample_value(refused_total, {"reason": "not_an_operator"}) == 1
    assert registry.get_sample_value(refused_total, {"reason": "set_at_skew"}) == 0
    assert registry.get_sample_value("volume_quota_override_active", {"state": "OPEN"}) == 0
    logged = capsys.readouterr().out
    assert logged.count("override record refused") == 3


def test_the_follower_keeps_only_the_latest_refusals() -> None:
    topic = Topic()
    topic.exists = True
    follower = OverrideFollower(topic, CollectorRegistry(), policy=policy())
    topic.pending += [arrived(fresh(), (), offset) for offset in range(REFUSALS_KEPT + 5)]
    follower.current(0.0, NOW)
    assert len(follower.refused) == REFUSALS_KEPT


def test_a_topic_with_the_writers_timestamps_is_warned_of_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = Topic()
    topic.exists = True
    follower = OverrideFollower(topic, CollectorRegistry(), policy=policy(SignatureMode.ACCEPT))
    stamp = int(NOW.timestamp() * 1000)
    topic.pending += [
        TopicRecord(b"cluster", fresh(), 0, offset, (), stamp, False) for offset in range(2)
    ]
    assert follower.current(0.0, NOW) is not None
    assert capsys.readouterr().out.count("keeps the writers' own timestamps (CreateTime)") == 1
    topic.pending.append(arrived(fresh(), (), 2))
    follower.current(1.0, NOW)
    assert "CreateTime" not in capsys.readouterr().out
