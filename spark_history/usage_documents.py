"""Topic usage messages to rows of the usage history (pure: no Spark).

The usage topic (``schemas.usage``) is read with the consumer's own strict decoder,
``schemas.decode.decode_usage``: a refused message is skipped whole and counted by reason, a
record whose key is not the document's ``brokerId`` is refused (``key_mismatch``) as for
snapshots, and a null value (a retired broker's tombstone) is counted as ``tombstone``. A JSONL
line has no key: its value alone is judged.

Each accepted document becomes rows of :data:`USAGE_ROW_COLUMNS`, one kind per row:

- ``topic``: one per (broker, volume, topic, ``surveyedAt``), the topic's byte fields;
- ``other``: one per (broker, volume, ``surveyedAt``), the topics outside the top N summed
  (``topic`` null, ``otherTopics`` how many);
- ``config``: one per topic of the document's optional ``topicConfigs`` section (the effective
  retention configs the elected sidecar read with DescribeConfigs), ``volumeName`` null,
  ``configReadAt`` when they were read.

Every volume row (``topic`` and ``other``) carries the volume's ``totalBytes`` and
``unattributedBytes``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from schemas.decode import Rejection, RejectionReason, decode_usage
from schemas.json_text import MalformedJsonError, parse_json_text
from schemas.snapshot import MAX_BROKER_ID, snapshot_key
from schemas.usage import TopicConfigsSection, TopicUsageDocument

TOMBSTONE = "tombstone"
USAGE_REJECTION_LABELS: tuple[str, ...] = (TOMBSTONE, *(reason.value for reason in RejectionReason))

TOPIC, OTHER, CONFIG = "topic", "other", "config"
"""The values of the ``kind`` column."""

CONFIG_VALUE_COLUMNS: tuple[str, ...] = (
    "cleanupPolicy",
    "retentionMs",
    "retentionBytes",
    "segmentBytes",
    "segmentMs",
    "remoteStorageEnable",
    "localRetentionMs",
    "localRetentionBytes",
)
"""The eight values of a topic in ``topicConfigs``, named as in the document."""

USAGE_ROW_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "surveyedAt",
    "kind",
    "volumeName",
    "topic",
    "bytes",
    "partitions",
    "activeSegmentBytes",
    "transientBytes",
    "oldestSegmentAt",
    "growth15mBytes",
    "growth15mSeconds",
    "growth24hBytes",
    "growth24hSeconds",
    "otherTopics",
    "totalBytes",
    "unattributedBytes",
    "configReadAt",
    *CONFIG_VALUE_COLUMNS,
    "date",
)
"""The columns of the usage dataset, partitioned by ``date`` (UTC day of ``surveyedAt``)."""

USAGE_ROW_DDL = (
    "brokerId int, surveyedAt timestamp, kind string, volumeName string, topic string, "
    "bytes long, partitions int, activeSegmentBytes long, transientBytes long, "
    "oldestSegmentAt timestamp, growth15mBytes long, growth15mSeconds double, "
    "growth24hBytes long, growth24hSeconds double, otherTopics int, totalBytes long, "
    "unattributedBytes long, configReadAt timestamp, cleanupPolicy string, retentionMs long, "
    "retentionBytes long, segmentBytes long, segmentMs long, remoteStorageEnable boolean, "
    "localRetentionMs long, localRetentionBytes long"
)
"""Spark DDL of the columns without ``date`` (added from ``surveyedAt`` in Spark)."""

Row = dict[str, Any]


class UsageVerdict(NamedTuple):
    """``rejection``: None when accepted, else ``TOMBSTONE`` or a ``RejectionReason`` value."""

    rejection: str | None
    document: TopicUsageDocument | None


def usage_verdict(key: bytes | None, value: bytes | None, check_key: bool) -> UsageVerdict:
    """How the decider reads one usage message (``check_key``: a Kafka record, whose key must
    be the document's broker id); a JSONL value (``check_key`` false) is judged alone."""
    if value is None:
        return UsageVerdict(TOMBSTONE, None)
    if not check_key:
        key = _claimed_key(value)
    decoded = decode_usage(value, key)
    if isinstance(decoded, Rejection):
        return UsageVerdict(decoded.reason.value, None)
    return UsageVerdict(None, decoded)


def _claimed_key(value: bytes) -> bytes:
    """The key a JSONL value would have been published under: its own ``brokerId``. (A value
    whose ``brokerId`` is unreadable fails the decoder's text or field checks before the key
    is looked at, whatever the key.)"""
    try:
        raw = parse_json_text(value)
    except MalformedJsonError:
        return b"0"
    broker = raw.get("brokerId") if isinstance(raw, dict) else None
    if type(broker) is int and 0 <= broker <= MAX_BROKER_ID:
        return snapshot_key(broker)
    return b"0"


def usage_rows(document: TopicUsageDocument) -> list[Row]:
    """The rows of one accepted document (see the module docstring), without ``date``."""
    surveyed = document.surveyed_at
    rows: list[Row] = []
    for volume in document.volumes:
        shared: Row = {
            "brokerId": document.broker_id,
            "surveyedAt": surveyed,
            "volumeName": volume.volume_name,
            "totalBytes": volume.total_bytes,
            "unattributedBytes": volume.unattributed_bytes,
        }
        for topic in volume.topics:
            rows.append(
                {
                    **shared,
                    "kind": TOPIC,
                    "topic": topic.topic,
                    "bytes": topic.bytes,
                    "partitions": topic.partitions,
                    "activeSegmentBytes": topic.active_segment_bytes,
                    "transientBytes": topic.transient_bytes,
                    "oldestSegmentAt": topic.oldest_segment_at,
                    "growth15mBytes": None if topic.growth_15m is None else topic.growth_15m.bytes,
                    "growth15mSeconds": (
                        None if topic.growth_15m is None else topic.growth_15m.seconds
                    ),
                    "growth24hBytes": None if topic.growth_24h is None else topic.growth_24h.bytes,
                    "growth24hSeconds": (
                        None if topic.growth_24h is None else topic.growth_24h.seconds
                    ),
                }
            )
        other = volume.other
        rows.append(
            {
                **shared,
                "kind": OTHER,
                "bytes": other.bytes,
                "partitions": other.partitions,
                "activeSegmentBytes": other.active_segment_bytes,
                "transientBytes": other.transient_bytes,
                "otherTopics": other.topics,
            }
        )
    if document.topic_configs is not None:
        rows.extend(config_rows(document.broker_id, surveyed, document.topic_configs))
    return [{column: row.get(column) for column in USAGE_ROW_COLUMNS[:-1]} for row in rows]


def config_rows(broker_id: int, surveyed_at: datetime, section: TopicConfigsSection) -> list[Row]:
    """One ``config`` row per topic of a ``topicConfigs`` section."""
    rows: list[Row] = []
    for entry in section.topics:
        values = entry.model_dump(by_alias=True)
        rows.append(
            {
                "brokerId": broker_id,
                "surveyedAt": surveyed_at,
                "kind": CONFIG,
                "topic": entry.topic,
                "configReadAt": section.read_at,
                **{name: values[name] for name in CONFIG_VALUE_COLUMNS},
            }
        )
    return rows
