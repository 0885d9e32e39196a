"""Publishing the topic usage document on its own timer, beside the snapshot loop.

Every ``interval`` it walks the log dirs (``survey``), builds the document, signs it like a
snapshot and sends it with its own producer to the usage topic, waiting for the delivery report
at most the delivery timeout. It shares nothing with the snapshot path but the process: its own
thread, producer and topic check, so a slow walk, a missing ACL or an unreachable usage topic
never delays a snapshot nor fails ``/readyz``. It keeps the history of its surveys in memory
(``publisher.usage_history``) to publish each topic's growth: a restart starts it again, and the
documents then state the shorter span they measured. Every failure is logged and counted
(``volume_quota_usage_failures_total{stage}``); the thread never dies of one.

With ``topic_configs`` (``publisher.topic_config_share``: the cluster's topic configs, read by
one process per cluster) it also exports the upload backlog of each tiered topic
(``publisher.upload_backlogs``), and the document carries the configs section when this process
read it; topics without known configs are counted (stage ``configs``) and left out of the
backlog series.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog

from consumer.clock import Clock
from consumer.topic_config_reads import fit_document
from consumer.topic_status import TopicConfigs
from publisher.kafka_sink import SendError, SnapshotSink
from publisher.publication_core import ClientIssue
from publisher.publication_loop import Credentials
from publisher.publisher_metrics import PublisherMetrics
from publisher.topic_config_share import SharedTopicConfigs
from publisher.topic_usage import VolumeTopicUsage
from publisher.upload_backlogs import document_topics, document_upload_backlogs
from publisher.usage_document import build_usage_document, measured_topics
from publisher.usage_history import UsageHistory
from schemas.snapshot import snapshot_key
from schemas.usage import TopicConfigsSection, TopicUsageDocument

log = structlog.get_logger(logger_name="volume_quota.publisher")

Survey = Callable[[], Sequence[VolumeTopicUsage]]
"""Walks the log dirs and summarizes each volume (top N topics and the rest)."""
UsageSinkFactory = Callable[[Callable[[ClientIssue], None]], SnapshotSink]

POLL_SLICE_SECONDS = 0.25
TOPIC_WAIT_SLICE_SECONDS = 0.5


def wait_for_usage_topic(
    ready: Callable[[], bool],
    stop: threading.Event,
    clock: Clock,
    deadline: float,
    metrics: PublisherMetrics,
) -> bool:
    """True once ``ready``; False on stop, or (counted and logged) at the monotonic
    ``deadline``: the usage publishers of a sidecar and of the cluster agent wait alike."""
    while not ready():
        if stop.is_set():
            return False
        if clock.monotonic() >= deadline:
            metrics.usage_failures.labels("topic").inc()
            log.warning("usage topic not ready", detail="topic usage not published")
            return False
        stop.wait(TOPIC_WAIT_SLICE_SECONDS)
    return True


@dataclass(frozen=True, slots=True)
class UsageSchedule:
    broker_id: int
    interval_seconds: float = 60.0
    delivery_timeout_seconds: float = 15.0


class UsagePublisher:
    def __init__(
        self,
        schedule: UsageSchedule,
        *,
        survey: Survey,
        sink_factory: UsageSinkFactory,
        clock: Clock,
        metrics: PublisherMetrics,
        topic_ready: Callable[[], bool] = lambda: True,
        credentials: Credentials | None = None,
        topic_configs: SharedTopicConfigs | None = None,
    ) -> None:
        self._schedule = schedule
        self._topic_configs = topic_configs
        self._configs_warned = False
        self._survey = survey
        self._sink_factory = sink_factory
        self._clock = clock
        self._metrics = metrics
        self._topic_ready = topic_ready
        self._credentials = credentials
        self._sink: SnapshotSink | None = None
        self._history = UsageHistory.empty()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="volume-quota-usage", daemon=True)

    def start(self) -> UsagePublisher:
        self._thread.start()
        return self

    def stop(self, wait_seconds: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=wait_seconds)
        if self._sink is not None:
            self._sink.flush(min(wait_seconds, 1.0))

    def _run(self) -> None:
        while not self._stop.is_set():
            started = self._clock.monotonic()
            if self._wait_for_topic():
                self.publish_once()
            elapsed = self._clock.monotonic() - started
            self._stop.wait(max(0.0, self._schedule.interval_seconds - elapsed))

    def _wait_for_topic(self) -> bool:
        """True once the usage topic is verified; False (counted) after one interval without."""
        deadline = self._clock.monotonic() + self._schedule.interval_seconds
        return wait_for_usage_topic(
            self._topic_ready, self._stop, self._clock, deadline, self._metrics
        )

    def publish_once(self) -> bool:
        """One walk and one publication; True when the document was delivered. Never raises."""
        surveyed_at = self._clock.wall()
        started = self._clock.monotonic()
        try:
            summaries = self._survey()
            seconds = self._clock.monotonic() - started
            self._history = self._history.record(started, measured_topics(summaries))
            document = build_usage_document(
                self._schedule.broker_id, surveyed_at, seconds, summaries, self._history
            )
        except Exception as error:
            self._metrics.usage_failures.labels("survey").inc()
            log.warning("topic usage survey failed", error=f"{type(error).__name__}: {error}")
            return False
        self._metrics.usage_survey_duration.set(seconds)
        configs, section = self._configs(document)
        document = fit_document(document, section)
        problem = self._deliver(snapshot_key(self._schedule.broker_id), document.to_json_bytes())
        if problem is not None:
            self._metrics.usage_failures.labels("publish").inc()
            log.warning("topic usage not published", error=problem)
            return False
        self._metrics.usage_last_success.set(self._clock.wall().timestamp())
        self._metrics.record_topic_usage(document, self._upload_backlogs(document, configs))
        log.debug("topic usage published", survey_seconds=round(seconds, 3))
        return True

    def _configs(
        self, document: TopicUsageDocument
    ) -> tuple[TopicConfigs | None, TopicConfigsSection | None]:
        """The configs known for the document's topics (None: this publisher has no configs
        share), and the section the document carries."""
        if self._topic_configs is None:
            return None, None
        try:
            return self._topic_configs.configs_for(
                self._schedule.broker_id, document_topics(document)
            )
        except Exception as error:  # a bad section must not stop the usage document
            log.warning("topic configs not known", error=f"{type(error).__name__}: {error}")
            return {}, None

    def _upload_backlogs(
        self, document: TopicUsageDocument, configs: TopicConfigs | None
    ) -> dict[tuple[str, str], int] | None:
        """The tiered topics' upload backlogs; None (counted) when no topic's configs are
        known."""
        if configs is None:
            return None
        names = document_topics(document)
        unknown = sorted(name for name in names if not isinstance(configs.get(name), Mapping))
        if unknown:
            self._metrics.usage_failures.labels("configs").inc()
            report = log.debug if self._configs_warned else log.warning
            self._configs_warned = True
            report("topic configs not known", topics=unknown[:5])
        if names and len(unknown) == len(names):
            return None
        return document_upload_backlogs(document, configs)

    def _deliver(self, key: bytes, value: bytes) -> str | None:
        """Send and wait for the delivery report; None when delivered, else why not."""
        try:
            sink = self._current_sink()
            headers = self._credentials.sign(key, value) if self._credentials else []
        except Exception as error:
            return f"{type(error).__name__}: {error}"
        results: list[str | None] = []
        try:
            sink.send(key, value, results.append, headers)
        except SendError as error:
            return str(error)
        deadline = self._clock.monotonic() + self._schedule.delivery_timeout_seconds
        while not results and self._clock.monotonic() < deadline and not self._stop.is_set():
            sink.poll(POLL_SLICE_SECONDS)
        if not results:
            return "no delivery report within the delivery timeout"
        return results[0]

    def _current_sink(self) -> SnapshotSink:
        if self._sink is None:
            self._sink = self._sink_factory(self._client_issue)
            return self._sink
        rotated = self._credentials.rotated(self._clock.wall()) if self._credentials else None
        if rotated is not None or self._sink.needs_rebuild:
            self._sink.rebuild(1.0)
        return self._sink

    def _client_issue(self, issue: ClientIssue) -> None:
        log.debug("usage producer client issue", code=issue.name, detail=issue.detail)
