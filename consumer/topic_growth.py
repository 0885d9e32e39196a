"""Which topics fill a volume past a limit, named in the decision's reasons (pure).

Every sidecar publishes a usage document (``schemas.usage``) per broker; the decider keeps, per
broker, only a summary of the latest (``summarize_usage``: per volume, the ``MAX_REASON_TOPICS``
topics growing fastest over 15 minutes) and ``with_top_topics`` joins it to the decision: the
reason of every volume in THROTTLE or PAUSE gets ``topTopics`` and its detail ends with, e.g.,
``: top growth orders +1.2 GiB/15m (4.0 GiB), clicks +300.0 MiB/15m (2.0 GiB)``.

Topics are ranked by growth rate (bytes over the span the sidecar states), so a topic measured
over a shorter span is not put behind one measured longer; only topics that grew are named. A
missing usage document, one older than ``stale_after_seconds``, a volume it does not list, or a
volume where no topic grew adds nothing: the decision is the rule's alone, only better
explained.

Bound: at most ``MAX_REASON_TOPICS`` (3) topics per reason, each name at most 249 characters,
named twice (``topTopics`` and the detail): under 2 KiB per reason, so under 40 KiB for the
default 20 reasons (``max_reasons``), far below the callback's 1 MiB decision file limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from consumer.reasons import human_bytes
from schemas.decision import (
    MAX_REASON_TOPICS,
    DecisionReason,
    QuotaDecision,
    QuotaState,
    ReasonKind,
    ReasonTopic,
)
from schemas.usage import TopicUsage, TopicUsageDocument

__all__ = [
    "MAX_REASON_TOPICS",
    "TOPICS_INTRO",
    "BrokerTopics",
    "summarize_usage",
    "topics_text",
    "with_top_topics",
]

NAMED_STATES = frozenset({QuotaState.THROTTLE, QuotaState.PAUSE})
TOPICS_INTRO = ": top growth "
"""What the topics follow in a reason's detail."""


@dataclass(frozen=True, slots=True)
class BrokerTopics:
    """What the decider keeps of a broker's latest usage document."""

    surveyed_at: datetime
    volumes: Mapping[str, tuple[ReasonTopic, ...]]
    """Per volume name, its fastest growing topics, fastest first (possibly none)."""


def _rate(topic: TopicUsage) -> float:
    growth = topic.growth_15m
    assert growth is not None
    return growth.bytes / growth.seconds


def _growing(topic: TopicUsage) -> bool:
    growth = topic.growth_15m
    return growth is not None and growth.bytes > 0 and growth.seconds > 0


def summarize_usage(document: TopicUsageDocument) -> BrokerTopics:
    volumes: dict[str, tuple[ReasonTopic, ...]] = {}
    for volume in document.volumes:
        growing = sorted(
            (topic for topic in volume.topics if _growing(topic)),
            key=lambda topic: (-_rate(topic), topic.topic),
        )
        volumes[volume.volume_name] = tuple(
            ReasonTopic(
                topic=topic.topic,
                growth_bytes=topic.growth_15m.bytes,
                growth_seconds=topic.growth_15m.seconds,
                bytes=topic.bytes,
            )
            for topic in growing[:MAX_REASON_TOPICS]
            if topic.growth_15m is not None
        )
    return BrokerTopics(surveyed_at=document.surveyed_at, volumes=volumes)


def span_text(seconds: float) -> str:
    """900 -> '15m', 3600 -> '1h', 40 -> '40s'."""
    whole = round(seconds)
    if whole >= 3600 and whole % 3600 == 0:
        return f"{whole // 3600}h"
    if whole >= 60 and whole % 60 == 0:
        return f"{whole // 60}m"
    if whole >= 60:
        return f"{seconds / 60:.1f}m"
    return f"{whole}s"


def topics_text(topics: tuple[ReasonTopic, ...] | list[ReasonTopic]) -> str:
    """'orders +1.2 GiB/15m (4.0 GiB), clicks ...': for people, never parsed."""
    return ", ".join(
        f"{topic.topic} +{human_bytes(topic.growth_bytes)}/{span_text(topic.growth_seconds)} "
        f"({human_bytes(topic.bytes)})"
        for topic in topics
    )


def _named(
    reason: DecisionReason,
    usage: Mapping[int, BrokerTopics],
    now: datetime,
    stale_after_seconds: float,
) -> DecisionReason:
    if (
        reason.kind is not ReasonKind.LIMIT
        or reason.state not in NAMED_STATES
        or reason.broker_id is None
        or reason.volume_name is None
    ):
        return reason
    summary = usage.get(reason.broker_id)
    if summary is None or (now - summary.surveyed_at).total_seconds() > stale_after_seconds:
        return reason
    topics = summary.volumes.get(reason.volume_name)
    if not topics:
        return reason
    return reason.model_copy(
        update={
            "top_topics": list(topics),
            "detail": f"{reason.detail}{TOPICS_INTRO}{topics_text(topics)}",
        }
    )


def with_top_topics(
    decision: QuotaDecision,
    usage: Mapping[int, BrokerTopics],
    now: datetime,
    stale_after_seconds: float,
) -> QuotaDecision:
    """``decision`` with the fastest growing topics named in each reason of a volume in
    THROTTLE or PAUSE whose broker's usage is fresh; the same object when nothing is added."""
    reasons = [_named(reason, usage, now, stale_after_seconds) for reason in decision.reasons]
    if all(new is old for new, old in zip(reasons, decision.reasons, strict=True)):
        return decision
    return decision.model_copy(update={"reasons": reasons})
