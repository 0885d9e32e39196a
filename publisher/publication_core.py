"""The publisher's decisions without I/O: events in, actions out, in the style of h11's Connection.

The driver (``publication_driver``) tells the core what happened - a sample was taken or failed,
a delivery report came, the client reported trouble, the producer is unusable - and carries out
the actions the core returns: send a snapshot, rebuild the producer, update health and metrics,
write a log line. Times are monotonic seconds handed in with each event; nothing here reads a
clock, logs, counts metrics or knows librdkafka's error codes.

What the core decides:

- when to publish (``publication_policy``: first, volumes changed, state changed, free space
  moved, heartbeat) and how to pace it (``delivery_pacing``: one message in flight, retries with
  backoff, a fresh snapshot on every retry, an unanswered message expires), for each broker on
  its own (a sidecar publishes for one broker, a cluster-level publisher for all of them);
- when Kafka counts as reachable (a delivery succeeded; a disconnecting client error or a failed
  delivery says it is not);
- when an unusable producer is rebuilt (at once, then with a backoff while it stays unusable);
- which client errors are worth a log line (the same error at most once a minute).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

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
REBUILD_AFTER_FAILED_DELIVERIES = 2
"""Rebuild the producer (bootstrapped from another broker, ``consumer.bootstrap_rotation``)
after this many failed deliveries in a row: a partition leader cut off from its peers keeps
answering the producer's metadata requests with its stale "I lead", and every delivery to it
times out (tests/faults, a broker cut off from its peers). One failure may be a blip."""
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
    broker_id: int
    stream_message_id: int
    reason: PublicationReason
    snapshot: VolumeSnapshot


@dataclass(slots=True)
class _Stream:
    """One broker's publications: what was last sent and the pacing of the next."""

    delivery: DeliveryState = field(default_factory=DeliveryState)
    last_sent: Publication | None = None


class PublisherCore:
    """The publication state machine; feed it events with :meth:`handle`."""

    def __init__(self, settings: CoreSettings, started_at: float) -> None:
        self._settings = settings
        self._streams: dict[int, _Stream] = {}
        self._in_flight: dict[int, _Sent] = {}
        self._next_message_id = 1
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
        """The newest snapshot handed to Kafka, of any broker."""
        sent = [s.last_sent for s in self._streams.values() if s.last_sent is not None]
        return max(sent, key=lambda publication: publication.at).snapshot if sent else None

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
        stream = self._streams.setdefault(event.snapshot.broker_id, _Stream())
        policy = self._settings.policy
        decision = decide_publication(stream.last_sent, event.snapshot, now, policy)
        if decision.reason is not None:
            actions.append(PublicationDue(decision.reason, decision.detail))
            stream.delivery = stream.delivery.request(decision.reason)
        actions.extend(self._expire_unanswered(event.snapshot.broker_id, now))
        # Sending does not wait for the topic check: the producer never creates topics, so a
        # missing topic is a counted, retried failure like any other outage.
        if stream.delivery.may_send(now):
            actions.append(self._send(stream, event.snapshot, now))
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

    def _send(self, stream: _Stream, snapshot: VolumeSnapshot, now: float) -> Send:
        reason = stream.delivery.due
        assert reason is not None  # may_send guarantees it
        stream_message_id = stream.delivery.next_message_id
        stream.delivery = stream.delivery.sent(now)
        stream.last_sent = Publication(snapshot, now)
        message_id = self._next_message_id
        self._next_message_id += 1
        self._in_flight[message_id] = _Sent(snapshot.broker_id, stream_message_id, reason, snapshot)
        return Send(message_id, snapshot, reason)

    def _delivery_reported(self, message_id: int, error: str | None, now: float) -> list[Action]:
        sent = self._in_flight.pop(message_id, None)
        if sent is None:
            return []
        stream = self._streams[sent.broker_id]
        if error is None:
            self._rebuilds_in_a_row = 0
            self._next_rebuild_at = -math.inf
            stream.delivery = stream.delivery.delivered(sent.stream_message_id)
            self._last_delivery_at = now
            actions: list[Action] = self._set_connected(True)
            actions.append(PublicationDelivered(sent.reason, sent.snapshot))
            return actions
        in_flight = stream.delivery.in_flight
        if in_flight is None or in_flight.message_id != sent.stream_message_id:
            return []  # already counted (expired while unanswered)
        stream.delivery = stream.delivery.failed(sent.stream_message_id, now)
        if stream.delivery.consecutive_failures >= REBUILD_AFTER_FAILED_DELIVERIES:
            self._unusable = True  # rebuilt at the next sample, with the rebuild backoff
        retry_in = round(max(0.0, stream.delivery.not_before - now), 3)
        failed = PublicationFailed(error, stream.delivery.consecutive_failures, retry_in)
        return [failed, *self._set_connected(False)]

    def _expire_unanswered(self, broker_id: int, now: float) -> list[Action]:
        """A delivery report that never comes must not block publication forever."""
        stream = self._streams[broker_id]
        limit = self._settings.delivery_timeout_seconds + UNANSWERED_GRACE_SECONDS
        in_flight = stream.delivery.in_flight
        if in_flight is None or not stream.delivery.overdue(now, limit):
            return []
        message_id = next(
            (
                key
                for key, sent in self._in_flight.items()
                if sent.broker_id == broker_id and sent.stream_message_id == in_flight.message_id
            ),
            None,
        )
        if message_id is None:  # pragma: no cover - every in-flight message is recorded
            return []
        # Kept in _in_flight: a late success still counts as delivered.
        sent = self._in_flight[message_id]
        actions = self._delivery_reported(message_id, f"no delivery report within {limit:g}s", now)
        self._in_flight[message_id] = sent
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
