"""What the snapshot topic must look like, and what is wrong with an existing one (pure).

The topic is compacted: Kafka keeps at least the newest snapshot of every broker for as long as
the topic exists, so a consumer that starts (or restarts) learns every broker's last state, and a
full broker that stops publishing keeps its throttle in force until a tombstone retires it.
``cleanup.policy=compact,delete`` would let retention delete a silent broker's last snapshot,
so anything but ``compact`` is refused.

``min.compaction.lag.ms`` keeps every snapshot, not just the newest per broker, for at least that
long: the history job must read them all before the cleaner may drop the superseded ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from schemas.decode import MAX_RECORD_BYTES

DEFAULT_TOPIC = "__volume_quota_snapshots"
DEFAULT_MIN_COMPACTION_LAG_SECONDS = 24 * 3600.0
DEFAULT_SEGMENT_SECONDS = 3600.0
DEFAULT_DELETE_RETENTION_SECONDS = 24 * 3600.0
DEFAULT_TOPIC_RECHECK_SECONDS = 30.0
"""How often a running publisher checks the topic again (recreate it if deleted, report a
cleanup.policy changed from compact): one metadata and one DescribeConfigs request."""


def seconds_to_milliseconds(seconds: float) -> int:
    """Whole milliseconds for Kafka settings such as ``min.compaction.lag.ms``."""
    return round(seconds * 1000)


@dataclass(frozen=True, slots=True)
class TopicRequirements:
    name: str = DEFAULT_TOPIC
    partitions: int = 1
    replication_factor: int = -1
    """-1: the cluster's ``default.replication.factor``."""
    min_compaction_lag_seconds: float = DEFAULT_MIN_COMPACTION_LAG_SECONDS
    segment_seconds: float = DEFAULT_SEGMENT_SECONDS
    delete_retention_seconds: float = DEFAULT_DELETE_RETENTION_SECONDS
    single_partition: bool = False
    """Its readers read partition 0 only (the decisions topic): more partitions is an error."""

    def creation_config(self) -> dict[str, str]:
        """Topic configuration for a new topic."""
        return {
            "cleanup.policy": "compact",
            "min.compaction.lag.ms": str(seconds_to_milliseconds(self.min_compaction_lag_seconds)),
            "segment.ms": str(seconds_to_milliseconds(self.segment_seconds)),
            "delete.retention.ms": str(seconds_to_milliseconds(self.delete_retention_seconds)),
            "max.message.bytes": str(MAX_RECORD_BYTES),
        }


def topic_config_problem(name: str, config: Mapping[str, str]) -> str | None:
    """Why an existing topic cannot hold snapshots, or None when it can."""
    policy = config.get("cleanup.policy", "delete")
    policies = {part.strip() for part in policy.split(",") if part.strip()}
    if policies != {"compact"}:
        return (
            f"topic {name} has cleanup.policy={policy}; it must be exactly 'compact' (retention "
            "would delete a silent broker's last snapshot). Fix it with: kafka-configs.sh "
            f"--alter --entity-type topics --entity-name {name} "
            "--add-config cleanup.policy=compact"
        )
    return None


def topic_partition_problem(requirements: TopicRequirements, partition_count: int) -> str | None:
    """Why an existing topic has the wrong number of partitions, or None."""
    if not requirements.single_partition or partition_count == 1:
        return None
    return (
        f"topic {requirements.name} has {partition_count} partitions; its readers read "
        "partition 0 only, so records keyed elsewhere would never be seen: delete it and let it "
        "be created again with one partition"
    )


def topic_config_warnings(requirements: TopicRequirements, config: Mapping[str, str]) -> list[str]:
    """Settings that work but weaken a guarantee; logged, never fatal."""
    warnings = []
    lag_text = config.get("min.compaction.lag.ms")
    wanted = seconds_to_milliseconds(requirements.min_compaction_lag_seconds)
    if lag_text is not None and lag_text.isdigit() and int(lag_text) < wanted:
        warnings.append(
            f"topic {requirements.name} has min.compaction.lag.ms={lag_text}, below the "
            f"configured {wanted}: the history job may miss snapshots the cleaner removed"
        )
    return warnings
