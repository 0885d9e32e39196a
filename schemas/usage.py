"""The topic usage document: which topics fill each of one broker's log volumes.

A second, slower document beside the volume snapshot (``schemas.snapshot``): the sidecar walks
its log dirs every ``usage_interval`` and publishes, per volume, the largest topics (at most
``MAX_TOPICS_PER_VOLUME``, ``usage_top_topics`` of them) and the rest summed as ``other``, on
its own compacted topic (``__volume_quota_usage``), keyed like a snapshot by the broker id
(``schemas.snapshot.snapshot_key``) and signed like one (``schemas.signature``).

The document is bounded: ``MAX_USAGE_DOCUMENT_BYTES`` is the largest legal document, computed
and checked by a test, and it fits ``schemas.decode.MAX_MESSAGE_BYTES`` and Kafka's default
``max.message.bytes``. Its fields are as strict as a snapshot's; unknown fields are ignored
(additive changes keep the major version). For every volume,
``sum(topics[].bytes) + other.bytes + unattributedBytes == totalBytes``. Each topic may state its
growth over the last 15 minutes and 24 hours (``growth15m``, ``growth24h``: bytes and the span
in seconds the sidecar measured it over, see ``publisher.usage_history``).

One broker's document at a time also carries ``topicConfigs``: the retention configs of the
cluster's largest topics, read with one DescribeConfigs call every few minutes by one process per
cluster (``consumer.topic_config_reads`` says which), so that no other sidecar has to ask. Its
publisher leaves out the smallest topics' configs until the document fits
``MAX_USAGE_DOCUMENT_BYTES``; a reader refuses a larger document.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import ConfigDict, Field, field_validator, model_validator

from schemas.snapshot import MAX_BROKER_ID, MAX_BYTES, ByteCount
from schemas.wire_types import Instant, WireModel

USAGE_SCHEMA_VERSION: Final = 1
DEFAULT_USAGE_TOPIC: Final = "__volume_quota_usage"
DEFAULT_TOP_TOPICS: Final = 20
MAX_TOPICS_PER_VOLUME: Final = 40
"""The largest ``usage_top_topics``: what bounds the document."""
MAX_USAGE_VOLUMES: Final = 32
"""A broker with more log volumes publishes the first 32 by name (their sizes still count in
the snapshot)."""
MAX_TOPIC_NAME_LENGTH: Final = 249
"""Kafka's own limit on a topic name."""
TOPIC_NAME_PATTERN: Final = r"^[a-zA-Z0-9._-]+$"
MAX_USAGE_VOLUME_NAME_LENGTH: Final = 1024
"""Shorter than a snapshot's volume name may be (4096): a volume with a longer name is left out
of the document, which keeps the document bounded."""
MAX_PARTITIONS: Final = 2**31 - 1
MAX_USAGE_DOCUMENT_BYTES: Final = 1_000_000
"""No legal document is larger (``tests/schemas/test_usage.py`` builds the largest)."""

Count = Annotated[int, Field(ge=0, le=MAX_PARTITIONS, strict=True)]
TopicName = Annotated[
    str,
    Field(
        strict=True,
        min_length=1,
        max_length=MAX_TOPIC_NAME_LENGTH,
        pattern=TOPIC_NAME_PATTERN,
        description="The topic name, as Kafka allows it (ASCII letters, digits, '.', '_', '-').",
    ),
]
MAX_GROWTH_SECONDS: Final = 86400.0
MAX_CONFIG_TOPICS: Final = 2000
"""The most topics one ``topicConfigs`` section names (it is also trimmed to fit the document
bound)."""
MAX_KAFKA_LONG: Final = 2**63 - 1


class Growth(WireModel):
    """How much a topic grew on the volume over a stated span, as the sidecar measured it."""

    bytes: int = Field(
        ge=-MAX_BYTES,
        le=MAX_BYTES,
        strict=True,
        description="Bytes now minus bytes at the start of the span (negative: the topic shrank).",
    )
    seconds: Annotated[float, Field(ge=0, le=MAX_GROWTH_SECONDS, strict=True)] = Field(
        description="The span the growth covers: the window asked for, or less when the "
        "sidecar has not surveyed that long (it keeps its history in memory)."
    )


class TopicUsage(WireModel):
    """One topic's bytes on one volume."""

    topic: TopicName
    bytes: ByteCount = Field(
        description="Allocated bytes of the topic's partition dirs on this volume, transient "
        "ones included."
    )
    partitions: Count = Field(description="Partitions of the topic this volume hosts.")
    active_segment_bytes: ByteCount = Field(
        alias="activeSegmentBytes",
        description="Bytes in the partitions' newest (active) segments: what retention cannot "
        "delete yet.",
    )
    transient_bytes: ByteCount = Field(
        alias="transientBytes",
        description="Bytes in -future, -delete and -stray dirs (part of bytes).",
    )
    oldest_segment_at: Instant | None = Field(
        default=None,
        alias="oldestSegmentAt",
        description="Modification time of the oldest segment of the topic on this volume.",
    )
    growth_15m: Growth | None = Field(
        default=None,
        alias="growth15m",
        description="Growth over the last 15 minutes (or the shorter span stated); absent "
        "before the second survey that names the topic.",
    )
    growth_24h: Growth | None = Field(
        default=None,
        alias="growth24h",
        description="Growth over the last 24 hours (or the shorter span stated).",
    )


class OtherTopicsUsage(WireModel):
    """The topics of a volume outside the top N, summed."""

    topics: Count
    bytes: ByteCount
    partitions: Count
    active_segment_bytes: ByteCount = Field(alias="activeSegmentBytes")
    transient_bytes: ByteCount = Field(alias="transientBytes")


class VolumeTopics(WireModel):
    volume_name: str = Field(
        alias="volumeName",
        strict=True,
        min_length=1,
        max_length=MAX_USAGE_VOLUME_NAME_LENGTH,
        description="The volume as the snapshot names it.",
    )
    total_bytes: ByteCount = Field(
        alias="totalBytes", description="Allocated bytes under the volume's log dirs."
    )
    topics: list[TopicUsage] = Field(
        max_length=MAX_TOPICS_PER_VOLUME, description="The largest topics, largest first."
    )
    other: OtherTopicsUsage
    unattributed_bytes: ByteCount = Field(
        alias="unattributedBytes",
        description="Bytes under the log dirs in no partition dir (checkpoints, caches).",
    )


class TopicRetentionConfig(WireModel):
    """What Kafka's DescribeConfigs said of one topic's retention (effective values)."""

    topic: TopicName
    cleanup_policy: str = Field(
        alias="cleanupPolicy",
        strict=True,
        max_length=32,
        pattern=r"^(delete|compact)(,(delete|compact))?$",
        description='cleanup.policy, as Kafka lists it ("delete", "compact", "compact,delete").',
    )
    retention_ms: int = Field(
        alias="retentionMs", ge=-1, le=MAX_KAFKA_LONG, strict=True, description="-1: no limit."
    )
    retention_bytes: int = Field(
        alias="retentionBytes",
        ge=-1,
        le=MAX_KAFKA_LONG,
        strict=True,
        description="Per partition; -1: no limit.",
    )
    segment_bytes: int = Field(alias="segmentBytes", ge=1, le=2**31 - 1, strict=True)
    segment_ms: int = Field(alias="segmentMs", ge=1, le=MAX_KAFKA_LONG, strict=True)
    remote_storage_enable: bool = Field(alias="remoteStorageEnable", strict=True)
    local_retention_ms: int = Field(
        alias="localRetentionMs",
        ge=-2,
        le=MAX_KAFKA_LONG,
        strict=True,
        description="-2: as retentionMs; -1: no limit.",
    )
    local_retention_bytes: int = Field(
        alias="localRetentionBytes",
        ge=-2,
        le=MAX_KAFKA_LONG,
        strict=True,
        description="-2: as retentionBytes; -1: no limit.",
    )


class TopicConfigsSection(WireModel):
    """The retention configs of the cluster's largest topics, read at one instant."""

    read_at: Instant = Field(alias="readAt", description="When DescribeConfigs answered.")
    topics: list[TopicRetentionConfig] = Field(
        max_length=MAX_CONFIG_TOPICS, description="Largest topics first; names are unique."
    )

    @model_validator(mode="after")
    def _unique(self) -> TopicConfigsSection:
        if len({entry.topic for entry in self.topics}) != len(self.topics):
            raise ValueError("topicConfigs: topic names must be unique")
        return self


USAGE_SCHEMA_COMMENT = (
    "Integers are JSON integer literals. Rules JSON Schema cannot state: in every volume, "
    "the topics' bytes, other.bytes and unattributedBytes add up to totalBytes, topic names "
    "are unique, and volumeName values are unique within a document; topicConfigs names each "
    f"topic once; the document is at most {MAX_USAGE_DOCUMENT_BYTES} bytes. The JSON text "
    "follows the snapshot's text rules (UTF-8, no duplicate names, no NaN, nesting at most 32)."
)


class TopicUsageDocument(WireModel):
    """One broker's log volumes, per topic, at one instant."""

    model_config = ConfigDict(json_schema_extra={"$comment": USAGE_SCHEMA_COMMENT})

    schema_version: int = Field(
        alias="schemaVersion",
        ge=1,
        strict=True,
        description=f"Major version of this format; {USAGE_SCHEMA_VERSION} is understood.",
        json_schema_extra={"const": USAGE_SCHEMA_VERSION},
    )
    broker_id: int = Field(alias="brokerId", ge=0, le=MAX_BROKER_ID, strict=True)
    surveyed_at: Instant = Field(
        alias="surveyedAt", description="When the walk of the log dirs started."
    )
    survey_seconds: Annotated[float, Field(ge=0, le=86400, strict=True)] = Field(
        alias="surveySeconds", description="How long the walk took (wall time)."
    )
    volumes: list[VolumeTopics] = Field(max_length=MAX_USAGE_VOLUMES)
    topic_configs: TopicConfigsSection | None = Field(
        default=None,
        alias="topicConfigs",
        description="Retention configs of the cluster's largest topics: in one broker's "
        "document at a time (the one whose process reads them for the cluster).",
    )

    @field_validator("schema_version")
    @classmethod
    def _known_major_version(cls, version: int) -> int:
        if version != USAGE_SCHEMA_VERSION:
            raise ValueError(
                f"unsupported schemaVersion {version}: this reader understands "
                f"{USAGE_SCHEMA_VERSION}"
            )
        return version

    @model_validator(mode="after")
    def _consistent(self) -> TopicUsageDocument:
        names = set()
        for index, volume in enumerate(self.volumes):
            parts = sum(topic.bytes for topic in volume.topics)
            parts += volume.other.bytes + volume.unattributed_bytes
            if parts != volume.total_bytes:
                raise ValueError(
                    f"volumes.{index}: topics, other and unattributed bytes add up to {parts}, "
                    f"not totalBytes ({volume.total_bytes})"
                )
            if len({topic.topic for topic in volume.topics}) != len(volume.topics):
                raise ValueError(f"volumes.{index}: topic names must be unique")
            names.add(volume.volume_name)
        if len(names) != len(self.volumes):
            raise ValueError("volumeName values must be unique within a document")
        return self

    def to_json_bytes(self) -> bytes:
        """The record value as published."""
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()
