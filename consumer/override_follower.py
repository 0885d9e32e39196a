"""Following the operator's override topic next to the snapshot topic (shell).

The topic may not exist (no operator ever set an override): that is the normal case, never a
reason to be not ready. Until it can be read, the follower retries every few seconds, so an
override set for the first time is seen within seconds. Every change (set, cleared, expired) is
logged once and shown in ``volume_quota_override_active`` and
``volume_quota_override_expiry_timestamp_seconds``; an override that starts later is shown
while it waits (``volume_quota_override_dormant``), so nobody is surprised when it takes
effect.

Every record is judged first (``consumer.overrides.judge_override_record``: signed by an
operator, ``setAt`` within the allowed skew of its arrival). A refused record never takes effect;
it is logged as an error, counted in ``volume_quota_override_records_refused_total{reason}``
and kept (the last few) for ``volume-quota status`` to list.

An authorization error is not an absent topic: Kafka refuses a principal without DESCRIBE
whether or not the topic exists, so an operator's override may be there, unseen. It is logged as
an error, shown in ``volume_quota_override_topic_access_denied`` and in ``problem`` (which fails
/readyz), and retried; the decision itself goes on by the rule.

The lookup runs on the decision loop's thread, so it is kept short (``lookup_timeout_seconds``)
and a lookup that failed waits a whole retry interval after its timeout. A hung broker keeps its
client connections open, and the client may send it every metadata request until its socket
times out (60 s): with the reader's 10 s lookup every 2 s, that stalled every decider of a real
cluster for as long as one broker hung, and every broker's decision expired
(tests/faults/test_process_faults.py, the hung broker).
"""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge

from consumer.overrides import (
    CLEARED,
    OverridePolicy,
    RefusalReason,
    RefusedOverride,
    in_force,
    judge_override_record,
)
from consumer.snapshot_topic_reader import (
    SnapshotSource,
    TopicAccessDeniedError,
    TopicRecord,
    TopicUnavailableError,
)
from schemas.override import QuotaOverride

log = structlog.get_logger(logger_name="volume_quota.consumer")

REFUSALS_KEPT = 10
"""How many refused records ``refused`` keeps for ``status`` (the latest)."""


class OverrideFollower:
    def __init__(
        self,
        source: SnapshotSource,
        registry: CollectorRegistry,
        retry_seconds: float = 2.0,
        lookup_timeout_seconds: float = 1.0,
        policy: OverridePolicy | None = None,
    ) -> None:
        self._source = source
        self._policy = policy or OverridePolicy()
        self._refused: deque[RefusedOverride] = deque(maxlen=REFUSALS_KEPT)
        self._warned_producer_time = False
        self._retry_seconds = retry_seconds
        self._lookup_timeout_seconds = lookup_timeout_seconds
        self._next_attempt = 0.0
        self._override: QuotaOverride | None = None
        self._announced_in_force = False
        self._absent = False
        self.problem: str | None = None
        """Why the override topic cannot be read (authorization), else None."""
        self._announced_dormant: QuotaOverride | None = None
        self._denied = Gauge(
            "volume_quota_override_topic_access_denied",
            "1 while Kafka refuses this principal the override topic (an override may go unseen).",
            registry=registry,
        )
        self._dormant = Gauge(
            "volume_quota_override_dormant",
            "1 while an override is set to start later (by state), else 0.",
            ["state"],
            registry=registry,
        )
        self._active = Gauge(
            "volume_quota_override_active",
            "1 while an operator's override forces the decision (by state), else 0.",
            ["state"],
            registry=registry,
        )
        self._refusals = Counter(
            "volume_quota_override_records_refused",
            "Override records that did not take effect (not signed by an operator, setAt too "
            "far from their arrival, undecodable), by reason.",
            ["reason"],
            registry=registry,
        )
        for reason in RefusalReason:
            self._refusals.labels(reason=reason.value)
        self._expiry = Gauge(
            "volume_quota_override_expiry_timestamp_seconds",
            "Unix time the override in force expires; 0 when none is in force.",
            registry=registry,
        )

    @property
    def settled(self) -> bool:
        """The topic was read to its end, or does not exist (no override was ever set)."""
        return self._absent or self._source.caught_up

    def reconnect(self) -> str | None:
        """Rebuild the reader through another broker, resuming where it was (see
        ``SnapshotTopicReader.reconnect``); returns that broker's address, None when there was
        nothing to rebuild or it failed.

        The override topic has no heartbeat, so a reader stuck on a leader cut off from its
        peers cannot be told from a topic nobody writes: the decision loop calls this when the
        snapshot reader, which has one, found the cluster link broken."""
        if not self._source.assigned:
            return None
        try:
            address = self._source.reconnect(self._lookup_timeout_seconds)
        except Exception as error:  # a new client could not be made: the next quiet spell retries
            log.warning("reconnecting the override reader failed", error=str(error))
            return None
        if address is not None:
            log.warning("override reader reconnected through another broker", bootstrap=address)
        return address

    @property
    def refused(self) -> list[RefusedOverride]:
        """The latest records that were refused, oldest first."""
        return list(self._refused)

    def replace_policy(self, policy: OverridePolicy) -> None:
        """New trust (a rotated CA bundle); records already judged stay judged."""
        self._policy = policy

    def replace_source(self, source: SnapshotSource) -> None:
        self._source = source
        self._next_attempt = 0.0

    def current(self, moment: float, now: datetime) -> QuotaOverride | None:
        """Read what arrived (retrying an unreadable topic) and return the override, if any."""
        self._read(moment, now)
        override = self._override
        active = in_force(override, now)
        if active != self._announced_in_force:
            self._announced_in_force = active
            if active and override is not None:
                log.warning(
                    "operator override in force",
                    state=override.state.value,
                    expires_at=override.expires_at.isoformat(),
                    set_by=override.set_by,
                    reason=override.reason,
                )
            else:
                log.warning("operator override no longer in force: the rule decides again")
        for state in ("OPEN", "PAUSE"):
            forced = active and override is not None and override.state.value == state
            self._active.labels(state=state).set(1 if forced else 0)
        self._expiry.set(override.expires_at.timestamp() if active and override else 0)
        waiting = self.dormant(now)
        if waiting is not None and waiting != self._announced_dormant:
            log.warning(
                "operator override set to start later",
                state=waiting.state.value,
                starts_at=waiting.set_at.isoformat(),
                expires_at=waiting.expires_at.isoformat(),
                set_by=waiting.set_by,
                reason=waiting.reason,
            )
        self._announced_dormant = waiting
        for state in ("OPEN", "PAUSE"):
            pending = waiting is not None and waiting.state.value == state
            self._dormant.labels(state=state).set(1 if pending else 0)
        return override if active else None

    def dormant(self, now: datetime) -> QuotaOverride | None:
        """The override that is set but not in force yet (its ``setAt`` is still ahead)."""
        override = self._override
        return override if override is not None and now < override.set_at else None

    def _read(self, moment: float, now: datetime) -> None:
        if not self._source.assigned:
            if moment < self._next_attempt:
                return
            try:
                self._source.assign_from_beginning(timeout_seconds=self._lookup_timeout_seconds)
            except TopicAccessDeniedError as error:
                problem = (
                    f"not allowed to read the override topic ({error}): an operator's override "
                    "would go unseen; grant this principal READ and DESCRIBE on it"
                )
                if problem != self.problem:
                    log.error("override topic refused", detail=problem)
                self.problem = problem
                self._denied.set(1)
                self._absent = True  # nothing to wait for: the rule decides meanwhile
                self._next_attempt = moment + self._retry_seconds
                return
            except TopicUnavailableError as error:  # usually: no override was ever set
                if not self._absent:
                    log.info("no override topic to follow (yet)", detail=str(error))
                self._absent = True
                self._next_attempt = moment + self._retry_seconds
                return
            except Exception as error:  # the cluster may be down: retried, and not settled
                # The lookup may have used its whole timeout: count the retry from its end.
                self._next_attempt = moment + self._lookup_timeout_seconds + self._retry_seconds
                log.warning("override topic not readable yet", error=str(error))
                return
            self._absent = False
            self.problem = None
            self._denied.set(0)
        try:
            for record in self._source.poll(0.0):
                self._take(record, now)
        except Exception as error:  # transport trouble: retried next turn
            log.warning("reading the override topic failed", error=str(error))

    def _take(self, record: TopicRecord, now: datetime) -> None:
        """Judge one record; set or clear the override when it is believed."""
        arrived = (
            None
            if record.timestamp_ms is None
            else datetime.fromtimestamp(record.timestamp_ms / 1000, UTC)
        )
        if record.timestamp_ms is not None and not record.log_append_time:
            self._warn_of_producer_time()
        verdict = judge_override_record(
            record.key,
            record.value,
            record.headers,
            arrived_at=arrived,
            now=now,
            policy=self._policy,
        )
        if verdict.refusal is not None:
            self._refuse(verdict.refusal)
            return
        if verdict.unverified is not None:
            log.warning(
                "override record used although not signed by an operator "
                "(override_signatures=warn)",
                problem=verdict.unverified,
            )
        if verdict.claimed_by is not None and verdict.override is not None:
            log.info(
                "override setBy replaced by its signer's identity",
                claimed=verdict.claimed_by,
                signer=verdict.override.set_by,
            )
        self._override = verdict.override
        if verdict.override is CLEARED:
            log.warning("operator override cleared")

    def _warn_of_producer_time(self) -> None:
        if self._warned_producer_time:
            return
        self._warned_producer_time = True
        log.warning(
            "the override topic keeps the writers' own timestamps (CreateTime): an old override "
            "written again would be accepted as new; set message.timestamp.type=LogAppendTime "
            "on it"
        )

    def _refuse(self, refusal: RefusedOverride) -> None:
        self._refused.append(refusal)
        self._refusals.labels(reason=refusal.reason.value).inc()
        log.error(
            "override record refused: it does not take effect",
            reason=refusal.reason.value,
            detail=refusal.detail,
            state=refusal.state,
            signer=refusal.signer,
            arrived_at=refusal.arrived_at.isoformat(),
        )
