"""The operator's override: parsed strictly, in force only until it expires, first reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from consumer.cluster_state import ClusterState
from consumer.override_follower import OverrideFollower
from consumer.overrides import CLEARED, in_force, interpret_override
from consumer.policy import DecisionPolicy
from consumer.snapshot_topic_reader import (
    TopicAccessDeniedError,
    TopicRecord,
    TopicUnavailableError,
)
from schemas.decision import QuotaState, ReasonKind
from schemas.decode import Rejection, RejectionReason
from schemas.override import QuotaOverride
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
    topic, registry = Topic(), CollectorRegistry()
    topic.exists = True
    later = NOON + timedelta(hours=2)
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
