from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from publisher.delivery_pacing import DeliveryState, retry_delay
from publisher.publication_policy import PublicationReason

FIRST = PublicationReason.FIRST
HEARTBEAT = PublicationReason.HEARTBEAT


def test_nothing_to_send_until_requested() -> None:
    state = DeliveryState()
    assert not state.may_send(0.0)
    with pytest.raises(ValueError, match="nothing is due"):
        state.sent(0.0)


def test_one_message_in_flight_at_a_time() -> None:
    state = DeliveryState().request(FIRST)
    assert state.may_send(0.0)
    state = state.sent(0.0)
    assert state.in_flight is not None
    assert state.in_flight.message_id == 1
    state = state.request(HEARTBEAT)
    assert not state.may_send(1.0)
    state = state.delivered(1)
    assert state.may_send(1.0)
    assert state.due is HEARTBEAT


def test_first_reason_is_kept_until_sent() -> None:
    state = DeliveryState().request(FIRST).request(HEARTBEAT)
    assert state.due is FIRST


def test_failure_retries_after_backoff_and_success_resets_it() -> None:
    state = DeliveryState().request(FIRST).sent(5.0).failed(1, now=5.0)
    assert state.due is PublicationReason.RETRY
    assert state.consecutive_failures == 1
    assert not state.may_send(5.0 + retry_delay(1) - 0.01)
    assert state.may_send(5.0 + retry_delay(1))
    state = state.sent(6.0).failed(2, now=6.5)
    assert state.consecutive_failures == 2
    assert state.not_before == 6.0 + retry_delay(2)
    state = state.sent(9.0).delivered(3)
    assert state.consecutive_failures == 0
    assert state.not_before == -math.inf


def test_a_timed_out_message_is_followed_at_once() -> None:
    """The backoff counts from the send: a 15 s timeout already waited longer than it."""
    state = DeliveryState().request(FIRST).sent(0.0).failed(1, now=15.0)
    assert state.may_send(15.0)
    for failures in range(2, 10):
        sent_at = state.in_flight.sent_at if state.in_flight else 15.0 * (failures - 1)
        state = state.sent(sent_at).failed(failures, now=sent_at + 15.0)
        assert state.may_send(sent_at + 15.0)


def test_a_failure_asks_for_a_fresh_publication() -> None:
    state = DeliveryState().request(FIRST).sent(0.0).failed(1, now=1.0)
    assert state.due is PublicationReason.RETRY


def test_reports_for_other_messages_are_ignored() -> None:
    state = DeliveryState().request(FIRST).sent(0.0)
    assert state.delivered(99) == state
    assert state.failed(99, now=1.0) == state


def test_overdue() -> None:
    state = DeliveryState().request(FIRST).sent(10.0)
    assert not state.overdue(20.0, limit_seconds=10.0)
    assert state.overdue(20.5, limit_seconds=10.0)
    assert not DeliveryState().overdue(1e9, limit_seconds=1.0)


@given(st.integers(min_value=1, max_value=10_000))
def test_backoff_grows_and_is_capped(failures: int) -> None:
    delay = retry_delay(failures, base_seconds=0.5, cap_seconds=10.0)
    assert 0.5 <= delay <= 10.0
    assert retry_delay(failures + 1, 0.5, 10.0) >= delay


def test_backoff_doubles() -> None:
    assert [retry_delay(n, 0.5, 10.0) for n in range(7)] == [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0]


events = st.lists(
    st.sampled_from(["request", "send", "deliver", "fail", "tick"]), min_size=1, max_size=60
)


@given(events)
def test_never_two_in_flight_and_never_sent_before_backoff(sequence: list[str]) -> None:
    state = DeliveryState()
    now = 0.0
    sent_ids: list[int] = []
    for event in sequence:
        now += 0.3
        if event == "request":
            state = state.request(HEARTBEAT)
        elif event == "send" and state.may_send(now):
            assert state.in_flight is None
            assert now >= state.not_before
            sent_ids.append(state.next_message_id)
            state = state.sent(now)
        elif event == "deliver" and state.in_flight is not None:
            state = state.delivered(state.in_flight.message_id)
        elif event == "fail" and state.in_flight is not None:
            state = state.failed(state.in_flight.message_id, now)
            assert state.due is not None
    assert sent_ids == sorted(set(sent_ids))
