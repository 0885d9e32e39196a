"""This process's share of reading the cluster's topic configs (shell around
``consumer.topic_config_reads``, which says who reads when).

A usage publisher asks ``configs_for`` before each document: it gets the configs to judge its
topics' upload backlogs by (the newest section known) and the section its document should carry
(its own read, while that is the newest known; else None). The DescribeConfigs call happens here,
only when the rule says this process's turn has come; it is counted in
``volume_quota_topic_config_reads_total``.

What the process knows of the others comes from a ``ClusterView``: in a sidecar, the decider's
(the live brokers it learned, the sections and topic sizes on the usage topic); in the cluster
agent, which publishes every broker's document itself, ``OwnView`` (no other reader exists).
Until a sidecar's decider knows the live brokers, it does not read: a cluster restart does not
make every sidecar read at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

import structlog

from consumer.clock import Clock
from consumer.topic_config_reads import (
    configs_from_section,
    newest,
    read_due,
    reader_rank,
    section_from_configs,
)
from consumer.topic_status import TopicConfigs
from publisher.publisher_metrics import PublisherMetrics
from schemas.usage import MAX_CONFIG_TOPICS, TopicConfigsSection

log = structlog.get_logger(logger_name="volume_quota.publisher")

TopicConfigReader = Callable[[Sequence[str]], TopicConfigs]
"""The configs of these topics (one DescribeConfigs call), or per topic why not."""


class ClusterView(Protocol):
    def live_brokers(self) -> frozenset[int] | None:
        """The live broker ids; None while not known yet."""

    def newest_section(self) -> TopicConfigsSection | None:
        """The newest ``topicConfigs`` section seen on the usage topic."""

    def cluster_topics(self) -> list[str]:
        """The cluster's largest topics as the usage documents name them, largest first."""


class OwnView:
    """The view of a process that publishes without a decider (the cluster agent, ``publish``
    alone): the live brokers are the ones it publishes for (``live``; none: it reads as rank 0),
    and no other process's section is seen."""

    def __init__(self, live: Callable[[], frozenset[int]] = frozenset) -> None:
        self._live = live

    def live_brokers(self) -> frozenset[int] | None:
        return self._live()

    def newest_section(self) -> TopicConfigsSection | None:
        return None

    def cluster_topics(self) -> list[str]:
        return []


class SharedTopicConfigs:
    def __init__(
        self,
        read: TopicConfigReader,
        interval_seconds: float,
        *,
        clock: Clock,
        metrics: PublisherMetrics,
        view: ClusterView | None = None,
    ) -> None:
        self._read = read
        self._interval_seconds = interval_seconds
        self._clock = clock
        self._metrics = metrics
        self._view: ClusterView = view or OwnView()
        self._own: TopicConfigsSection | None = None
        self._own_for = -1
        self._asked: dict[int, Sequence[str]] = {}
        """Per broker published for, the topics of its last document (the agent's many)."""
        """The broker whose document carries ``_own``: the one whose turn it was to read."""
        self._last_attempt: datetime | None = None
        self._since: datetime | None = None
        """When the view first knew the live brokers."""
        self._lock = threading.Lock()  # the agent's publishers share one instance

    def attach(self, view: ClusterView) -> None:
        """Learn the cluster from ``view`` from now on (a sidecar's decider, once it exists)."""
        self._view = view

    def configs_for(
        self, broker_id: int, own_topics: Sequence[str]
    ) -> tuple[TopicConfigs, TopicConfigsSection | None]:
        """The configs to judge ``own_topics`` by, and the section broker ``broker_id``'s next
        document carries (None: none). Reads first when this process's turn has come."""
        with self._lock:
            self._asked[broker_id] = own_topics
            now = self._clock.wall()
            known = newest(self._own, self._view.newest_section())
            live = self._view.live_brokers()
            if live is not None and self._since is None:
                self._since = now
            if (
                live is not None
                and self._since is not None
                and read_due(
                    reader_rank(broker_id, live),
                    newest_read_at=None if known is None else known.read_at,
                    last_attempt_at=self._last_attempt,
                    now=now,
                    interval_seconds=self._interval_seconds,
                    started_at=self._since,
                )
            ):
                self._last_attempt = now
                self._read_now(broker_id, now)
                known = newest(self._own, known)
            self._metrics.topic_configs_age.set(
                float("nan") if known is None else (now - known.read_at).total_seconds()
            )
            carried = self._own is not None and self._own is known and self._own_for == broker_id
            return configs_from_section(known), self._own if carried else None

    def _read_now(self, broker_id: int, now: datetime) -> None:
        own = [topic for broker in sorted(self._asked) for topic in self._asked[broker]]
        names = list(dict.fromkeys([*self._view.cluster_topics(), *own]))
        names = names[:MAX_CONFIG_TOPICS]
        if not names:
            return
        self._metrics.topic_config_reads.inc()
        try:
            answer = self._read(names)
        except Exception as error:
            answer = dict.fromkeys(names, f"{type(error).__name__}: {error}")
        section = section_from_configs(answer, now, names)
        if section is None:  # counted by the publisher, whose topics are then without configs
            log.warning("topic configs not read", detail=next(iter(answer.values()), None))
            return
        self._own, self._own_for = section, broker_id
        log.debug("topic configs read", topics=len(section.topics))
