"""The publisher's decisions without I/O: events in, actions out, in the style of h11's Connection.

The driver (``publication_driver``) tells the core what happened - a sample was taken or failed,
a delivery report came, the client reported trouble, the producer is unusable - and carries out
the actions the core returns: send a snapshot, rebuild the producer, update health and metrics,
write a log line. Times are monotonic seconds handed in with each event; nothing here reads a
clock, logs, counts metrics or knows librdkafka's error codes.

What the core decides:

- when to publish (``publication_policy``: first, volumes changed, state changed, free space
  moved, heartbeat) and how to pace it (``delivery_pacing``: one message in flight, retries with
  backoff, a fresh snapshot on every retry, an unanswered message expires);
- when Kafka counts as reachable (a delivery succeeded; a disconnecting client error or a failed
  delivery says it is not);
- when an unusable producer is rebuilt (at once, then with a backoff while it stays unusable);
- which client errors are worth a log line (the same error at most once a minute).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from publisher.delivery_pacing import DeliveryState, retry_delay
from publisher.health import HealthInputs
from publisher.publication_policy import (
    Publication,
    PublicationPolicy,
    PublicationReason,
    decide_publication,
)
from publisher.repeat_suppression import RepeatSuppressor
from schemas.snapshot import VolumeSnapshot

UNANSWERED_GRACE_SECONDS = 5.0
"""A message counts as failed this long after the producer's own delivery timeout."""
REBUILD_BACKOFF_BASE_SECONDS = 1.0
REBUILD_BACKOFF_CAP_SECONDS = 60.0
CLIENT_ERROR_LOG_WINDOW_SECONDS = 60.0

# -- events: what happened ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SampleTaken:
    snapshot: VolumeSnapshot
    at: float


@dataclass(frozen=True, slots=True)
class SampleFailed:
    error: str
    at: float


@dataclass(frozen=True, slots=True)
class DeliveryReported:
    message_id: int
    error: str | None
    """None when the message was delivered."""
    at: float


@dataclass(frozen=True, slots=True)
class ClientIssue:
    """Trouble the Kafka client reported, already classified by the Kafka edge."""

    name: str
    detail: str
    disconnecting: bool
    """After this error Kafka counts as unreachable until a delivery succeeds."""
    fatal: bool
    """The producer cannot be used any more and must be rebuilt."""


@dataclass(frozen=True, slots=True)
class ClientTrouble:
    issue: ClientIssue
    at: float


@dataclass(frozen=True, slots=True)
class ProducerUnusable:
    """The producer is in a state it will not leave (found when polling or sending)."""

    at: float


Event = SampleTaken | SampleFailed | DeliveryReported | ClientTrouble | ProducerUnusable

# -- actions: what to do ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    message_id: int
    snapshot: VolumeSnapshot
    reason: PublicationReason


@dataclass(frozen=True, slots=True)
class RebuildProducer:
    rebuilds_in_a_row: int
    next_rebuild_in_seconds: float


@dataclass(frozen=True, slots=True)
class PublicationDue:
    reason: PublicationReason
    detail: str


@dataclass(frozen=True, slots=True)
class PublicationDelivered:
    reason: PublicationReason
    snapshot: VolumeSnapshot


@dataclass(frozen=True, slots=True)
class PublicationFailed:
    error: str
    consecutive_failures: int
    retry_in_seconds: float


@dataclass(frozen=True, slots=True)
class ConnectivityChanged:
    connected: bool


@dataclass(frozen=True, slots=True)
class ClientIssueSeen:
    issue: ClientIssue
    log: bool
    """Whether this occurrence deserves a log line (the same error at most once a minute)."""
    repeats_not_logged: int


@dataclass(frozen=True, slots=True)
class SampleLost:
    error: str


Action = (
    Send
    | RebuildProducer
    | PublicationDue
    | PublicationDelivered
    | PublicationFailed
    | ConnectivityChanged
    | ClientIssueSeen
    | SampleLost
)


@dataclass(frozen=True, slots=True)
class CoreSettings:
    policy: PublicationPolicy
    delivery_timeout_seconds: float = 15.0


@dataclass(frozen=True, slots=True)
class _Sent:
    reason: PublicationReason
    snapshot: VolumeSnapshot


class PublisherCore:
    """The publication state machine; feed it events with :meth:`handle`."""

    def __init__(self, settings: CoreSettings, started_at: float) -> None:
        self._settings = settings
        self._delivery = DeliveryState()
        self._last_sent: Publication | None = None
        self._in_flight: dict[int, _Sent] = {}
        self._started_at = started_at
        self._last_sample_at: float | None = None
        self._last_delivery_at: float | None = None
        self._connected = False
        self._unusable = False
        self._rebuilds_in_a_row = 0
        self._next_rebuild_at = -math.inf
        self._client_error_log = RepeatSuppressor(window_seconds=CLIENT_ERROR_LOG_WINDOW_SECONDS)

    # -- state ------------------------------------------------------------------------------

    @property
    def last_sent_snapshot(self) -> VolumeSnapshot | None:
        return self._last_sent.snapshot if self._last_sent is not None else None

    @property
    def connected(self) -> bool:
        return self._connected

    def health_inputs(self, *, topic_ready: bool, topic_problem: str | None) -> HealthInputs:
        return HealthInputs(
            started_at=self._started_at,
            last_sample_at=self._last_sample_at,
            last_delivery_at=self._last_delivery_at,
            kafka_connected=self._connected,
            topic_ready=topic_ready,
            topic_problem=topic_problem,
        )

    # -- events -----------------------------------------------------------------------------

    def handle(self, event: Event) -> list[Action]:
        """What to do about ``event``, in order."""
        match event:
            case SampleTaken():
                return self._sample_taken(event)
            case SampleFailed():
                return [SampleLost(event.error)]
            case DeliveryReported():
                return self._delivery_reported(event.message_id, event.error, event.at)
            case ClientTrouble():
                return self._client_trouble(event.issue, event.at)
            case ProducerUnusable():
                self._unusable = True
                return []

    def _sample_taken(self, event: SampleTaken) -> list[Action]:
        now = event.at
        actions: list[Action] = self._rebuild_if_unusable(now)
        self._last_sample_at = now
        decision = decide_publication(self._last_sent, event.snapshot, now, self._settings.policy)
        if decision.reason is not None:
            actions.append(PublicationDue(decision.reason, decision.detail))
            self._delivery = self._delivery.request(decision.reason)
        actions.extend(self._expire_unanswered(now))
        # Sending does not wait for the topic check: the producer never creates topics, so a
        # missing topic is a counted, retried failure like any other outage.
        if self._delivery.may_send(now):
            actions.append(self._send(event.snapshot, now))
        return actions

    def _rebuild_if_unusable(self, now: float) -> list[Action]:
        """An unusable producer is replaced, with a backoff: a refusal that persists must not
        make a new connection every second."""
        if not self._unusable or now < self._next_rebuild_at:
            return []
        self._unusable = False
        self._rebuilds_in_a_row += 1
        delay = retry_delay(
            self._rebuilds_in_a_row, REBUILD_BACKOFF_BASE_SECONDS, REBUILD_BACKOFF_CAP_SECONDS
        )
        self._next_rebuild_at = now + delay
        return [RebuildProducer(self._rebuilds_in_a_row, delay)]

    def _send(self, snapshot: VolumeSnapshot, now: float) -> Send:
        reason = self._delivery.due
        assert reason is not None  # may_send guarantees it
        message_id = self._delivery.next_message_id
        self._delivery = self._delivery.sent(now)
        self._last_sent = Publication(snapshot, now)
        self._in_flight[message_id] = _Sent(reason, snapshot)
        return Send(message_id, snapshot, reason)

    def _delivery_reported(self, message_id: int, error: str | None, now: float) -> list[Action]:
        sent = self._in_flight.pop(message_id, None)
        if error is None:
            self._rebuilds_in_a_row = 0
            self._next_rebuild_at = -math.inf
            self._delivery = self._delivery.delivered(message_id)
            self._last_delivery_at = now
            actions: list[Action] = self._set_connected(True)
            if sent is not None:
                actions.append(PublicationDelivered(sent.reason, sent.snapshot))
            return actions
        in_flight = self._delivery.in_flight
        if in_flight is None or in_flight.message_id != message_id:
            return []  # already counted (expired while unanswered)
        self._delivery = self._delivery.failed(message_id, now)
        retry_in = round(max(0.0, self._delivery.not_before - now), 3)
        failed = PublicationFailed(error, self._delivery.consecutive_failures, retry_in)
        return [failed, *self._set_connected(False)]

    def _expire_unanswered(self, now: float) -> list[Action]:
        """A delivery report that never comes must not block publication forever."""
        limit = self._settings.delivery_timeout_seconds + UNANSWERED_GRACE_SECONDS
        in_flight = self._delivery.in_flight
        if in_flight is None or not self._delivery.overdue(now, limit):
            return []
        # Kept in _in_flight: a late success still counts as delivered.
        sent = self._in_flight.get(in_flight.message_id)
        actions = self._delivery_reported(
            in_flight.message_id, f"no delivery report within {limit:g}s", now
        )
        if sent is not None:
            self._in_flight[in_flight.message_id] = sent
        return actions

    def _client_trouble(self, issue: ClientIssue, now: float) -> list[Action]:
        actions: list[Action] = []
        if issue.fatal:
            self._unusable = True
        if issue.disconnecting:
            actions.extend(self._set_connected(False))
        suppressed = self._client_error_log.admit(issue.name, now)
        actions.insert(0, ClientIssueSeen(issue, suppressed is not None, suppressed or 0))
        return actions

    def _set_connected(self, connected: bool) -> list[Action]:
        changed = connected != self._connected
        self._connected = connected
        return [ConnectivityChanged(connected)] if changed else []
