"""Following the usage topic next to the snapshot topic, to name in a decision's reasons the
topics that fill a volume (shell; the join itself is ``consumer.topic_growth``, pure).

Every record is judged as ``volume-quota status`` judges it: its signature under the snapshot
signature policy (``snapshot_signatures``), its value by ``schemas.decode.decode_usage``; a
tombstone forgets its broker, and only a summary of each broker's latest document is kept
(``consumer.topic_growth.summarize_usage``: a few topics per volume, however large the
document). A refused record is never used; it is counted in
``volume_quota_usage_records_refused_total{reason}``.

The usage topic only explains a decision, it never makes one: a topic that is absent (no sidecar
publishes usage), refused (no READ on it) or unreachable is logged once, counted in
``volume_quota_usage_topic_unreadable_total{reason}`` and retried every ``retry_seconds``; it
never fails readiness. The decision loop reads it after handing the decision on, with a short
lookup timeout and a poll that does not wait, so it does not delay a decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import structlog
from prometheus_client import CollectorRegistry, Counter

from consumer.signatures import SignatureMode, SignatureTrust, check_signature
from consumer.snapshot_topic_reader import (
    SnapshotSource,
    TopicAccessDeniedError,
    TopicRecord,
    TopicUnavailableError,
)
from consumer.topic_config_reads import largest_topics, newest, topic_sizes
from consumer.topic_growth import BrokerTopics, summarize_usage, with_top_topics
from schemas.decision import QuotaDecision
from schemas.decode import RejectionReason, decode_usage
from schemas.snapshot import broker_id_from_key
from schemas.usage import TopicConfigsSection, TopicUsageDocument

log = structlog.get_logger(logger_name="volume_quota.consumer")

USAGE_RETRY_SECONDS = 10.0
USAGE_LOOKUP_TIMEOUT_SECONDS = 0.5
USAGE_STALE_AFTER_SECONDS = 180.0
"""Three default usage intervals (``volume_quota.config.usage``)."""
UNREADABLE_REASONS = ("absent", "denied", "error")


class UsageFollower:
    def __init__(
        self,
        source: SnapshotSource,
        registry: CollectorRegistry,
        *,
        mode: SignatureMode = SignatureMode.ACCEPT,
        trust: SignatureTrust | None = None,
        retry_seconds: float = USAGE_RETRY_SECONDS,
        lookup_timeout_seconds: float = USAGE_LOOKUP_TIMEOUT_SECONDS,
        stale_after_seconds: float = USAGE_STALE_AFTER_SECONDS,
    ) -> None:
        """``stale_after_seconds``: a usage document older than this names no topic."""
        self._source = source
        self._stale_after_seconds = stale_after_seconds
        self._mode = mode
        self._trust = trust
        self._retry_seconds = retry_seconds
        self._lookup_timeout_seconds = lookup_timeout_seconds
        self._next_attempt = 0.0
        self.summaries: dict[int, BrokerTopics] = {}
        """Per broker, what its latest usage document says of its growing topics."""
        self.topic_sizes: dict[int, dict[str, int]] = {}
        """Per broker, the topics its latest usage document names, with their bytes."""
        self.newest_configs: TopicConfigsSection | None = None
        """The newest ``topicConfigs`` section read from any broker's document."""
        self.problem: str | None = None
        """Why the usage topic is not followed (reported once per problem), else None."""
        self._refusals = Counter(
            "volume_quota_usage_records_refused",
            "Usage records the decider did not use (signature check failed, undecodable), "
            "by reason.",
            ["reason"],
            registry=registry,
        )
        for rejection in RejectionReason:
            self._refusals.labels(reason=rejection.value)
        self._unreadable = Counter(
            "volume_quota_usage_topic_unreadable",
            "Failed attempts to follow the usage topic (absent, denied, error); the decision "
            "goes on without naming topics.",
            ["reason"],
            registry=registry,
        )
        for reason in UNREADABLE_REASONS:
            self._unreadable.labels(reason=reason)

    def explain(self, decision: QuotaDecision, now: datetime) -> QuotaDecision:
        """``decision`` with the fastest growing topics of its volumes past a limit named
        (``consumer.topic_growth.with_top_topics``, with the summaries read so far)."""
        return with_top_topics(decision, self.summaries, now, self._stale_after_seconds)

    def cluster_topics(self) -> list[str]:
        """The largest topics the brokers' latest documents name, largest first."""
        return largest_topics(tuple(self.topic_sizes.values()))  # a copy: another thread adds

    def replace_signatures(self, mode: SignatureMode, trust: SignatureTrust | None) -> None:
        self._mode, self._trust = mode, trust

    def replace_source(self, source: SnapshotSource) -> None:
        self._source = source
        self._next_attempt = 0.0

    def reconnect(self) -> None:
        """Rebuild the reader through another broker (alongside the snapshot reader)."""
        if not self._source.assigned:
            return
        try:
            self._source.reconnect(self._lookup_timeout_seconds)
        except Exception as error:  # retried at the next quiet spell
            log.warning("reconnecting the usage reader failed", error=str(error))

    def follow(self, moment: float, now: datetime) -> None:
        """Read what arrived (assigning the topic first, at most every ``retry_seconds``)."""
        if not self._source.assigned:
            if moment < self._next_attempt:
                return
            try:
                self._source.assign_from_beginning(timeout_seconds=self._lookup_timeout_seconds)
            except TopicAccessDeniedError as error:
                self._unreadable_now(moment, "denied", f"not allowed to read it ({error})")
                return
            except TopicUnavailableError as error:
                self._unreadable_now(moment, "absent", str(error))
                return
            except Exception as error:  # the cluster may be down
                self._unreadable_now(moment, "error", str(error))
                return
            if self.problem is not None:
                log.info("usage topic followed again")
            self.problem = None
        try:
            for record in self._source.poll(0.0):
                self._take(record, now)
        except Exception as error:  # transport trouble: retried next turn
            self._unreadable.labels(reason="error").inc()
            log.warning("reading the usage topic failed", error=str(error))

    def _unreadable_now(self, moment: float, reason: str, detail: str) -> None:
        self._unreadable.labels(reason=reason).inc()
        self._next_attempt = moment + self._lookup_timeout_seconds + self._retry_seconds
        problem = (
            f"usage topic not readable ({reason}: {detail}): decisions do not name the topics "
            "filling a volume"
        )
        if self.problem is None or not self.problem.startswith(problem[:40]):
            log.warning("usage topic not readable", detail=problem)
        self.problem = problem

    def _take(self, record: TopicRecord, now: datetime) -> None:
        if not self._trusted(record.key, record.value, record.headers, now):
            return
        if record.value is None:
            broker_id = broker_id_from_key(record.key)
            if broker_id is None:
                self._refusals.labels(reason=RejectionReason.INVALID_KEY.value).inc()
            else:
                self.summaries.pop(broker_id, None)
                self.topic_sizes.pop(broker_id, None)
            return
        decoded = decode_usage(record.value, record.key)
        if isinstance(decoded, TopicUsageDocument):
            self.summaries[decoded.broker_id] = summarize_usage(decoded)
            self.topic_sizes[decoded.broker_id] = topic_sizes(decoded)
            self.newest_configs = newest(self.newest_configs, decoded.topic_configs)
        else:
            self._refusals.labels(reason=decoded.reason.value).inc()

    def _trusted(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
        now: datetime,
    ) -> bool:
        if self._mode is SignatureMode.ACCEPT or self._trust is None:
            return True
        check = check_signature(key, value, headers, self._trust, now)
        if check.trusted:
            return True
        if self._mode is SignatureMode.REQUIRE:
            self._refusals.labels(reason=f"signature_{check.outcome.value}").inc()
            return False
        return True
