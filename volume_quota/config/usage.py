"""The settings of the topic usage document (``schemas.usage``): how often the sidecar walks
its log dirs, how many topics it names per volume, and where it publishes them."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from consumer.topic_config_reads import DEFAULT_TOPIC_CONFIGS_INTERVAL_SECONDS
from schemas.usage import DEFAULT_TOP_TOPICS, DEFAULT_USAGE_TOPIC, MAX_TOPICS_PER_VOLUME
from volume_quota.config.concerns import Seconds, help_text
from volume_quota.config.sources import ENV_PREFIX, SettingsBase

DEFAULT_USAGE_INTERVAL_SECONDS = 60.0


class UsageTopicSettings(SettingsBase):
    """Where topic usage documents are: published by sidecars and the agent, read by the
    decider, ``status`` and ``history ingest``."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    usage_topic: str = Field(
        DEFAULT_USAGE_TOPIC,
        min_length=1,
        **help_text(
            "the compacted topic of topic usage documents (which topic fills each volume)",
            "NAME",
        ),
    )


class UsageSettings(UsageTopicSettings):
    """Which topic fills a volume: the per-topic survey of a sidecar (``--source volumes``)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    publish_usage: bool = Field(
        True,
        **help_text(
            "publish the largest topics of each volume: a sidecar walks its broker's log dirs, the "
            "cluster agent asks every broker (DescribeLogDirs)"
        ),
    )
    usage_interval: Seconds = Field(
        DEFAULT_USAGE_INTERVAL_SECONDS,
        **help_text("walk the log dirs and publish topic usage this often", "DURATION"),
    )
    topic_configs_interval: Seconds = Field(
        DEFAULT_TOPIC_CONFIGS_INTERVAL_SECONDS,
        **help_text(
            "read the cluster's topic configs (retention) this often: one process per cluster "
            "reads them (the sidecar of the lowest live broker id, or the cluster agent) and "
            "publishes them in its usage document; the others read only when those grow old",
            "DURATION",
        ),
    )
    usage_top_topics: int = Field(
        DEFAULT_TOP_TOPICS,
        ge=1,
        le=MAX_TOPICS_PER_VOLUME,
        **help_text(
            f"name this many largest topics per volume, the rest summed (at most "
            f"{MAX_TOPICS_PER_VOLUME})",
            "N",
        ),
    )
