"""Pacing publications to Kafka: one snapshot in flight at a time, retries with backoff.

At most one snapshot is in flight. A publication that becomes due while another is in flight
waits for it (a healthy cluster answers in milliseconds); the next snapshot sent is always freshly
measured, never an old one replayed. A failed delivery makes a new publication due (``RETRY``),
no sooner than an exponential backoff after the failed send, so an unreachable or refusing
cluster is retried steadily but never in a tight loop. Success resets the backoff.

Immutable values and pure transitions; the time (monotonic seconds) is passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from publisher.publication_policy import PublicationReason

DEFAULT_BACKOFF_BASE_SECONDS = 0.5
DEFAULT_BACKOFF_CAP_SECONDS = 10.0


def retry_delay(
    consecutive_failures: int,
    base_seconds: float = DEFAULT_BACKOFF_BASE_SECONDS,
    cap_seconds: float = DEFAULT_BACKOFF_CAP_SECONDS,
) -> float:
    """Seconds to wait after the ``consecutive_failures``-th failure in a row: base * 2^(n-1),
    capped; 0 before any failure."""
    if consecutive_failures <= 0:
        return 0.0
    exponent = min(consecutive_failures - 1, 62)
    return float(min(cap_seconds, base_seconds * math.pow(2, exponent)))


@dataclass(frozen=True, slots=True)
class InFlight:
    message_id: int
    reason: PublicationReason
    sent_at: float


@dataclass(frozen=True, slots=True)
class DeliveryState:
    due: PublicationReason | None = None
    """A publication is wanted, and why."""
    in_flight: InFlight | None = None
    consecutive_failures: int = 0
    not_before: float = -math.inf
    """No new send before this time (backoff after a failure)."""
    next_message_id: int = 1

    def request(self, reason: PublicationReason) -> DeliveryState:
        """Ask for a publication; the first reason asked for is kept until it is sent."""
        return self if self.due is not None else replace(self, due=reason)

    def may_send(self, now: float) -> bool:
        return self.due is not None and self.in_flight is None and now >= self.not_before

    def sent(self, now: float) -> DeliveryState:
        """The due publication was handed to the producer as message ``next_message_id``."""
        if self.due is None:
            raise ValueError("nothing is due")
        in_flight = InFlight(self.next_message_id, self.due, now)
        return replace(
            self, due=None, in_flight=in_flight, next_message_id=self.next_message_id + 1
        )

    def delivered(self, message_id: int) -> DeliveryState:
        if self.in_flight is None or self.in_flight.message_id != message_id:
            return self
        return replace(self, in_flight=None, consecutive_failures=0, not_before=-math.inf)

    def failed(
        self,
        message_id: int,
        now: float,
        base_seconds: float = DEFAULT_BACKOFF_BASE_SECONDS,
        cap_seconds: float = DEFAULT_BACKOFF_CAP_SECONDS,
    ) -> DeliveryState:
        """The message was not delivered: retry with a fresh snapshot after a backoff.

        The backoff counts from when the failed message was sent, so a message that timed out
        after waiting for an unreachable cluster is followed at once by the next one: a message
        is nearly always waiting in the producer, and goes out as soon as the cluster is back.
        Only quick refusals (no permission, queue full) leave gaps between attempts.
        """
        if self.in_flight is None or self.in_flight.message_id != message_id:
            return self
        failures = self.consecutive_failures + 1
        return replace(
            self,
            due=self.due or PublicationReason.RETRY,
            in_flight=None,
            consecutive_failures=failures,
            not_before=self.in_flight.sent_at + retry_delay(failures, base_seconds, cap_seconds),
        )

    def overdue(self, now: float, limit_seconds: float) -> bool:
        """The in-flight message has gone unanswered for longer than ``limit_seconds``."""
        return self.in_flight is not None and now - self.in_flight.sent_at > limit_seconds
