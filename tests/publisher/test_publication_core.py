"""The publication core on its own: events in, actions out, no clock, no Kafka, no fakes."""

from __future__ import annotations

from publisher.publication_core import (
    Action,
    ClientIssue,
    ClientIssueSeen,
    ClientTrouble,
    ConnectivityChanged,
    CoreSettings,
    DeliveryReported,
    ProducerUnusable,
    PublicationDelivered,
    PublicationDue,
    PublicationFailed,
    PublisherCore,
    RebuildProducer,
    SampleFailed,
    SampleLost,
    SampleTaken,
    Send,
)
from publisher.publication_policy import PublicationPolicy, PublicationReason
from tests.publisher.publisher_samples import GIB, snapshot

HEALTHY = snapshot(50 * GIB)
POLICY = PublicationPolicy(heartbeat_interval_seconds=10.0, change_threshold_percent=1.0)


def new_core() -> PublisherCore:
    return PublisherCore(CoreSettings(POLICY, delivery_timeout_seconds=15.0), started_at=0.0)


def sends(actions: list[Action]) -> list[Send]:
    return [action for action in actions if isinstance(action, Send)]


def test_the_first_sample_is_sent_and_its_delivery_connects() -> None:
    core = new_core()
    actions = core.handle(SampleTaken(HEALTHY, at=0.0))
    assert actions[0] == PublicationDue(PublicationReason.FIRST, "first snapshot since start")
    (send,) = sends(actions)
    assert send.snapshot == HEALTHY
    assert send.reason is PublicationReason.FIRST
    assert not core.connected
    delivered = core.handle(DeliveryReported(send.message_id, None, at=0.1))
    assert delivered == [
        ConnectivityChanged(True),
        PublicationDelivered(PublicationReason.FIRST, HEALTHY),
    ]
    inputs = core.health_inputs(topic_ready=True, topic_problem=None)
    assert inputs.last_delivery_at == 0.1
    assert inputs.last_sample_at == 0.0
    assert inputs.kafka_connected


def test_nothing_is_sent_until_the_heartbeat_when_nothing_changed() -> None:
    core = new_core()
    (first,) = sends(core.handle(SampleTaken(HEALTHY, at=0.0)))
    core.handle(DeliveryReported(first.message_id, None, at=0.0))
    for second in range(1, 10):
        assert core.handle(SampleTaken(HEALTHY, at=float(second))) == []
    (heartbeat,) = sends(core.handle(SampleTaken(HEALTHY, at=10.0)))
    assert heartbeat.reason is PublicationReason.HEARTBEAT


def test_one_message_in_flight_then_the_due_one_goes_fresh() -> None:
    core = new_core()
    (first,) = sends(core.handle(SampleTaken(HEALTHY, at=0.0)))
    throttled = snapshot(15 * GIB)  # under the 20 % soft limit
    waiting = core.handle(SampleTaken(throttled, at=1.0))
    assert sends(waiting) == []
    assert PublicationDue(PublicationReason.STATE_CHANGED, "/dev/sd0: OPEN -> THROTTLE") in waiting
    core.handle(DeliveryReported(first.message_id, None, at=1.5))
    newer = snapshot(14 * GIB)
    (second,) = sends(core.handle(SampleTaken(newer, at=2.0)))
    assert second.reason is PublicationReason.STATE_CHANGED
    assert second.snapshot == newer  # the snapshot measured now, not the one of t=1


def test_a_failed_delivery_disconnects_and_retries_after_a_backoff() -> None:
    core = new_core()
    (first,) = sends(core.handle(SampleTaken(HEALTHY, at=0.0)))
    core.handle(DeliveryReported(first.message_id, None, at=0.0))
    (second,) = sends(core.handle(SampleTaken(snapshot(15 * GIB), at=1.0)))
    failed = core.handle(DeliveryReported(second.message_id, "_MSG_TIMED_OUT: timed out", at=1.2))
    assert failed == [
        PublicationFailed("_MSG_TIMED_OUT: timed out", 1, 0.3),  # 0.5 s from the send at 1.0
        ConnectivityChanged(False),
    ]
    (retry,) = sends(core.handle(SampleTaken(snapshot(15 * GIB), at=2.0)))
    assert retry.reason is PublicationReason.RETRY


def test_an_unanswered_message_fails_after_the_delivery_timeout_and_a_grace() -> None:
    core = new_core()
    (first,) = sends(core.handle(SampleTaken(HEALTHY, at=0.0)))
    assert core.handle(SampleTaken(HEALTHY, at=20.0)) == [
        PublicationDue(PublicationReason.HEARTBEAT, "20.0s since the last publication")
    ]
    expired = core.handle(SampleTaken(HEALTHY, at=20.5))
    failures = [action for action in expired if isinstance(action, PublicationFailed)]
    assert [failure.error for failure in failures] == ["no delivery report within 20s"]
    (again,) = sends(expired)
    assert again.reason is PublicationReason.HEARTBEAT
    late = core.handle(DeliveryReported(first.message_id, None, at=21.0))
    assert PublicationDelivered(PublicationReason.FIRST, HEALTHY) in late


def test_an_unusable_producer_is_rebuilt_with_a_growing_backoff_until_a_delivery() -> None:
    core = new_core()
    rebuilt_at = []
    for second in range(40):
        core.handle(ProducerUnusable(at=float(second)))
        actions = core.handle(SampleTaken(HEALTHY, at=float(second)))
        if any(isinstance(action, RebuildProducer) for action in actions):
            rebuilt_at.append(second)
        for send in sends(actions):
            core.handle(DeliveryReported(send.message_id, "_FATAL: fenced", at=float(second)))
    assert rebuilt_at == [0, 1, 3, 7, 15, 31]
    (send,) = sends(core.handle(SampleTaken(HEALTHY, at=60.0)))
    core.handle(DeliveryReported(send.message_id, None, at=60.0))
    core.handle(ProducerUnusable(at=61.0))
    rebuild = [a for a in core.handle(SampleTaken(HEALTHY, 61.0)) if isinstance(a, RebuildProducer)]
    assert rebuild == [RebuildProducer(1, 1.0)]  # a success reset the backoff


def test_client_issues_are_always_seen_but_logged_once_a_minute() -> None:
    core = new_core()
    down = ClientIssue("_ALL_BROKERS_DOWN", "all down", disconnecting=True, fatal=False)
    first = core.handle(ClientTrouble(down, at=0.0))
    assert first == [ClientIssueSeen(down, log=True, repeats_not_logged=0)]
    repeats = [core.handle(ClientTrouble(down, at=float(second))) for second in range(1, 60)]
    assert all(actions == [ClientIssueSeen(down, False, 0)] for actions in repeats)
    assert core.handle(ClientTrouble(down, at=61.0)) == [ClientIssueSeen(down, True, 59)]


def test_a_disconnecting_issue_disconnects_and_a_fatal_one_asks_for_a_rebuild() -> None:
    core = new_core()
    (send,) = sends(core.handle(SampleTaken(HEALTHY, at=0.0)))
    core.handle(DeliveryReported(send.message_id, None, at=0.0))
    transport = ClientIssue("_TRANSPORT", "broker went away", disconnecting=False, fatal=False)
    assert core.handle(ClientTrouble(transport, at=1.0))[1:] == []
    assert core.connected
    fenced = ClientIssue("_FENCED", "fenced", disconnecting=True, fatal=True)
    assert core.handle(ClientTrouble(fenced, at=2.0))[1:] == [ConnectivityChanged(False)]
    assert RebuildProducer(1, 1.0) in core.handle(SampleTaken(HEALTHY, at=3.0))


def test_a_failed_sample_is_reported_and_changes_nothing() -> None:
    core = new_core()
    assert core.handle(SampleFailed("Input/output error", at=5.0)) == [
        SampleLost("Input/output error")
    ]
    assert core.health_inputs(topic_ready=True, topic_problem=None).last_sample_at is None


def test_each_broker_is_paced_on_its_own_stream() -> None:
    core = new_core()
    one, two = snapshot(50 * GIB, broker_id=1), snapshot(50 * GIB, broker_id=2)
    (first_one,) = sends(core.handle(SampleTaken(one, at=0.0)))
    (first_two,) = sends(core.handle(SampleTaken(two, at=0.0)))  # not held by broker 1's
    assert (first_one.reason, first_two.reason) == (PublicationReason.FIRST,) * 2
    assert first_one.message_id != first_two.message_id
    core.handle(DeliveryReported(first_two.message_id, None, at=0.1))
    failed = core.handle(DeliveryReported(first_one.message_id, "_MSG_TIMED_OUT", at=0.2))
    assert isinstance(failed[0], PublicationFailed)
    (retry,) = sends(core.handle(SampleTaken(one, at=1.0)))
    assert retry.reason is PublicationReason.RETRY
    assert sends(core.handle(SampleTaken(two, at=1.0))) == []  # broker 2 is up to date
    assert core.last_sent_snapshot == one


def test_two_failed_deliveries_in_a_row_ask_for_a_rebuild_one_does_not() -> None:
    core = new_core()
    timeline: list[tuple[str, int]] = []
    failed = 0
    for second in range(60):
        actions = core.handle(SampleTaken(HEALTHY, at=float(second)))
        if any(isinstance(action, RebuildProducer) for action in actions):
            timeline.append(("rebuild", failed))
        for send in sends(actions):
            if failed < 2:
                failed += 1
                timed_out = "_MSG_TIMED_OUT: Local: Message timed out"
                core.handle(DeliveryReported(send.message_id, timed_out, at=second + 0.5))
                timeline.append(("failed", failed))
            else:
                core.handle(DeliveryReported(send.message_id, None, at=second + 0.5))
    assert timeline == [("failed", 1), ("failed", 2), ("rebuild", 2)]
