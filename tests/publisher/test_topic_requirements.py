from __future__ import annotations

from publisher.topic_requirements import (
    TopicRequirements,
    topic_config_problem,
    topic_config_warnings,
)


def test_creation_config_is_compacted_with_a_day_of_history() -> None:
    config = TopicRequirements().creation_config()
    assert config == {
        "cleanup.policy": "compact",
        "min.compaction.lag.ms": "86400000",
        "segment.ms": "3600000",
        "delete.retention.ms": "86400000",
        # 1 MiB, the largest document a reader accepts, and 32 KiB for key, headers, framing.
        "max.message.bytes": str(1024 * 1024 + 32 * 1024),
    }


def test_only_pure_compaction_is_accepted() -> None:
    assert topic_config_problem("t", {"cleanup.policy": "compact"}) is None
    for bad in ("delete", "compact,delete", "delete, compact", ""):
        problem = topic_config_problem("t", {"cleanup.policy": bad})
        assert problem is not None
        assert "cleanup.policy" in problem
        assert "kafka-configs.sh" in problem
    assert topic_config_problem("t", {}) is not None  # Kafka's default is delete


def test_short_compaction_lag_is_a_warning() -> None:
    requirements = TopicRequirements(min_compaction_lag_seconds=3600)
    assert topic_config_warnings(requirements, {"min.compaction.lag.ms": "3600000"}) == []
    warnings = topic_config_warnings(requirements, {"min.compaction.lag.ms": "0"})
    assert len(warnings) == 1
    assert "history job" in warnings[0]
