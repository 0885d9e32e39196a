"""The KafkaTopics (deploy/strimzi/topics.yaml) configure each topic as volume-quota itself
would create it, so the Topic Operator and the agent never disagree and the agent's topic check
logs no warning. Strimzi's model checks their shape (deploy/strimzi/validation)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from publisher.topic_requirements import TopicRequirements, topic_config_warnings
from tests.strimzi.recipe import TOPICS, documents
from volume_quota.config.commands import ClusterAgentSettings
from volume_quota.one_shot import OverrideTopicRequirements


@pytest.fixture(autouse=True)
def _defaults_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings' defaults, whatever the developer's environment sets."""
    for name in list(os.environ):
        if name.startswith("VOLUME_QUOTA_"):
            monkeypatch.delenv(name)


def topic_config(name: str) -> dict[str, str]:
    matches = [doc for doc in documents(TOPICS) if doc["spec"]["topicName"] == name]
    assert len(matches) == 1, name
    config: dict[str, Any] = matches[0]["spec"]["config"]
    return {key: str(value) for key, value in config.items()}


def test_the_snapshot_topic_is_configured_as_the_agent_creates_it() -> None:
    settings = ClusterAgentSettings(source="admin")
    requirements = settings.topic_requirements()
    config = topic_config(requirements.name)
    assert requirements.creation_config().items() <= config.items()
    assert topic_config_warnings(requirements, config) == []


def test_the_decisions_topic_is_configured_as_the_agent_creates_it() -> None:
    settings = ClusterAgentSettings(source="admin")
    # The requirements volume_quota/commands/cluster_agent.py passes to its topic guard.
    requirements = TopicRequirements(
        name=settings.decisions_topic, partitions=1, min_compaction_lag_seconds=3600.0
    )
    config = topic_config(requirements.name)
    assert requirements.creation_config().items() <= config.items()
    assert topic_config_warnings(requirements, config) == []


def test_the_overrides_topic_is_configured_as_volume_quota_override_creates_it() -> None:
    settings = ClusterAgentSettings(source="admin")
    # What volume_quota/one_shot.py's write_override checks and creates the topic with.
    requirements = OverrideTopicRequirements(name=settings.override_topic)
    config = topic_config(requirements.name)
    assert requirements.creation_config().items() <= config.items()
    assert config["message.timestamp.type"] == "LogAppendTime"
