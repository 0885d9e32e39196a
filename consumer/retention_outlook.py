"""What retention will do to a topic's bytes on one volume (pure).

Kafka's delete retention works per partition, on whole closed segments (never the active one):

- ``retention.bytes`` (per partition; ``-1``: no limit) deletes the oldest segments while the
  partition without them would still hold at least ``retention.bytes``: a partition stays below
  ``retention.bytes`` plus one segment (``segment.bytes``). On a volume that is
  ``partitions x (retention.bytes + segment.bytes)``: **bounded**.
- ``retention.ms`` (``-1``: no limit) deletes a segment once its newest record is older than
  that: a partition holds about ``retention.ms`` of writes plus the segment being filled. With
  the topic's write rate on the volume that is ``rate x retention.ms + partitions x
  segment.bytes``: **steady**. The rate here is the net growth the sidecar measured: equal to
  the write rate until retention starts deleting, about 0 once the topic sits at its plateau,
  which is why the estimate is never below what the topic holds now.
- Both set: the smaller of the two.
- ``cleanup.policy`` without ``delete`` (``compact`` only) deletes nothing by age or size, and
  neither does ``delete`` with both limits ``-1``: **unbounded**.
- Tiered topics (``remote.storage.enable=true``) keep locally what ``local.retention.ms`` and
  ``local.retention.bytes`` say, ``-2`` meaning "the same as ``retention.ms`` /
  ``retention.bytes``"; for other topics the local values mean nothing. (A tiered segment is
  deleted locally only once it is copied to the remote store: a failing remote store lets the
  volume grow past the bound.)

No estimate is below the topic's active segments on the volume: retention cannot delete them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000
DEFAULT_SEGMENT_BYTES = 1024**3
INHERIT = -2
"""``local.retention.*``: use the non-local value."""
UNLIMITED = -1


class OutlookKind(StrEnum):
    BOUNDED = "bounded"
    """Held by ``retention.bytes``."""
    STEADY = "steady"
    """Held by ``retention.ms`` at about the write rate times the retention."""
    UNBOUNDED = "unbounded"
    """Retention never deletes: the topic grows as long as it is written."""


@dataclass(frozen=True, slots=True)
class RetentionConfig:
    cleanup_policy: frozenset[str]
    retention_ms: int
    retention_bytes: int
    segment_bytes: int
    remote_storage: bool
    local_retention_ms: int
    local_retention_bytes: int

    @property
    def effective_ms(self) -> int:
        """The time limit on this broker's disk."""
        if self.remote_storage and self.local_retention_ms != INHERIT:
            return self.local_retention_ms
        return self.retention_ms

    @property
    def effective_bytes(self) -> int:
        """The per-partition size limit on this broker's disk."""
        if self.remote_storage and self.local_retention_bytes != INHERIT:
            return self.local_retention_bytes
        return self.retention_bytes


def _integer(configs: Mapping[str, str | None], name: str, default: int) -> int:
    value = configs.get(name)
    if value is None or value.strip() == "":
        return default
    return int(value.strip())


def retention_config(configs: Mapping[str, str | None]) -> RetentionConfig:
    """The retention configs of a topic from DescribeConfigs' name -> value (Kafka's defaults
    for any missing). Raises ``ValueError`` for a value that is no integer."""
    policy = configs.get("cleanup.policy")
    policies = (
        frozenset({"delete"})
        if policy is None
        else frozenset(part.strip() for part in policy.split(",") if part.strip())
    )
    remote = (configs.get("remote.storage.enable") or "false").strip().lower() == "true"
    return RetentionConfig(
        cleanup_policy=policies,
        retention_ms=_integer(configs, "retention.ms", DEFAULT_RETENTION_MS),
        retention_bytes=_integer(configs, "retention.bytes", UNLIMITED),
        segment_bytes=_integer(configs, "segment.bytes", DEFAULT_SEGMENT_BYTES),
        remote_storage=remote,
        local_retention_ms=_integer(configs, "local.retention.ms", INHERIT),
        local_retention_bytes=_integer(configs, "local.retention.bytes", INHERIT),
    )


@dataclass(frozen=True, slots=True)
class TopicOnVolume:
    bytes: int
    partitions: int
    growth_bytes_per_second: float | None
    """Net growth measured on the volume; None when not measured yet."""
    active_segment_bytes: int


@dataclass(frozen=True, slots=True)
class RetentionOutlook:
    kind: OutlookKind
    bound_bytes: int | None
    """About the most the topic will hold on the volume; None when unbounded or not known."""
    detail: str


def _duration(milliseconds: int) -> str:
    seconds = milliseconds / 1000
    if seconds >= 86400:
        return f"{seconds / 86400:g}d"
    if seconds >= 3600:
        return f"{seconds / 3600:g}h"
    if seconds >= 60:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def retention_outlook(topic: TopicOnVolume, config: RetentionConfig) -> RetentionOutlook:
    """What retention will do to ``topic``'s bytes on its volume (see the module docstring)."""
    scope = "local " if config.remote_storage else ""
    if "delete" not in config.cleanup_policy:
        policy = ",".join(sorted(config.cleanup_policy)) or "none"
        return RetentionOutlook(
            OutlookKind.UNBOUNDED, None, f"cleanup.policy={policy}: nothing deleted by age or size"
        )
    ms, size = config.effective_ms, config.effective_bytes
    if ms == UNLIMITED and size == UNLIMITED:
        return RetentionOutlook(
            OutlookKind.UNBOUNDED, None, f"{scope}retention.ms and {scope}retention.bytes are -1"
        )
    floor = topic.active_segment_bytes
    segments = topic.partitions * config.segment_bytes
    by_size = None if size == UNLIMITED else max(topic.partitions * size + segments, floor)
    by_time: int | None = None
    if ms != UNLIMITED and topic.growth_bytes_per_second is not None:
        written = max(topic.growth_bytes_per_second, 0.0) * ms / 1000
        by_time = max(int(written) + segments, topic.bytes, floor)
    if by_size is not None and (by_time is None or by_size <= by_time):
        return RetentionOutlook(
            OutlookKind.BOUNDED,
            by_size,
            f"{scope}retention.bytes={size} x {topic.partitions} partitions + a segment each",
        )
    detail = f"{scope}retention.ms={ms} ({_duration(ms)})"
    if by_time is None:
        return RetentionOutlook(OutlookKind.STEADY, None, detail + ", growth not measured yet")
    return RetentionOutlook(OutlookKind.STEADY, by_time, detail + " of growth + a segment each")
