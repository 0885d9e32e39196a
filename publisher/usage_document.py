"""The topic usage document from the summaries of a survey (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from publisher.topic_usage import TopicTotals, VolumeTopicUsage
from publisher.usage_history import Growth, SeriesKey, TopicGrowth, UsageHistory
from schemas.usage import (
    MAX_USAGE_VOLUME_NAME_LENGTH,
    MAX_USAGE_VOLUMES,
    USAGE_SCHEMA_VERSION,
    OtherTopicsUsage,
    TopicUsage,
    TopicUsageDocument,
    VolumeTopics,
)
from schemas.usage import (
    Growth as WireGrowth,
)
from schemas.wire_types import INSTANT_RANGE


def _instant(seconds: float | None) -> datetime | None:
    if seconds is None:
        return None
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment if INSTANT_RANGE[0] <= moment < INSTANT_RANGE[1] else None


def _growth(growth: Growth | None) -> WireGrowth | None:
    if growth is None:
        return None
    return WireGrowth(bytes=growth.bytes, seconds=growth.seconds)


def _topic(total: TopicTotals, growth: TopicGrowth | None) -> TopicUsage:
    return TopicUsage(
        topic=total.topic,
        bytes=total.bytes,
        partitions=total.partitions,
        active_segment_bytes=total.active_segment_bytes,
        transient_bytes=total.transient_bytes,
        oldest_segment_at=_instant(total.oldest_segment_modified),
        growth_15m=None if growth is None else _growth(growth.last_15m),
        growth_24h=None if growth is None else _growth(growth.last_24h),
    )


def _volume(summary: VolumeTopicUsage, history: UsageHistory | None) -> VolumeTopics:
    other = summary.other
    return VolumeTopics(
        volume_name=summary.volume_name,
        total_bytes=summary.total_bytes,
        topics=[
            _topic(
                total,
                None if history is None else history.growth((summary.volume_name, total.topic)),
            )
            for total in summary.topics
        ],
        other=OtherTopicsUsage(
            topics=other.topics,
            bytes=other.bytes,
            partitions=other.partitions,
            active_segment_bytes=other.active_segment_bytes,
            transient_bytes=other.transient_bytes,
        ),
        unattributed_bytes=summary.unattributed_bytes,
    )


def publishable_volumes(summaries: Sequence[VolumeTopicUsage]) -> list[VolumeTopicUsage]:
    """The volumes the document can hold: names within the limit, at most
    ``MAX_USAGE_VOLUMES`` of them, by name."""
    fitting = [s for s in summaries if len(s.volume_name) <= MAX_USAGE_VOLUME_NAME_LENGTH]
    return sorted(fitting, key=lambda summary: summary.volume_name)[:MAX_USAGE_VOLUMES]


def measured_topics(summaries: Sequence[VolumeTopicUsage]) -> Mapping[SeriesKey, int]:
    """The bytes of every named topic of every volume: what the growth history records."""
    return {
        (summary.volume_name, total.topic): total.bytes
        for summary in summaries
        for total in summary.topics
    }


def build_usage_document(
    broker_id: int,
    surveyed_at: datetime,
    survey_seconds: float,
    summaries: Sequence[VolumeTopicUsage],
    history: UsageHistory | None = None,
) -> TopicUsageDocument:
    """The document of a survey; with the growth of each topic when ``history`` (already holding
    this survey) is given."""
    return TopicUsageDocument(
        schema_version=USAGE_SCHEMA_VERSION,
        broker_id=broker_id,
        surveyed_at=surveyed_at,
        survey_seconds=min(max(survey_seconds, 0.0), 86400.0),
        volumes=[_volume(summary, history) for summary in publishable_volumes(summaries)],
    )
