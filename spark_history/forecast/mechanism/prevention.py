"""What would keep a volume under its hard limit: the largest retention of one topic that
holds the projected path under the limit until the horizon, all else as it is (pure).

Every rate is >= 0, so the path is highest at the horizon. With the other topics' paths
fixed, the path stays under ``limit`` iff topic ``T`` holds at most ``room = limit - (path at
the horizon without T's growth) + T's bytes now`` at the horizon. Solving the bound for the cap:

- ``retention.ms``: ``rate x retention.ms + partitions x segment.bytes <= room``;
- ``retention.bytes`` (per partition): ``partitions x (retention.bytes + segment.bytes) <=
  room``.

Each answer is checked by projecting again with the topic's config changed and its bound taken
from ``consumer.retention_outlook`` (which never puts a time bound below the bytes the topic
holds now): an answer that does not keep the path under is dropped. Only topics that delete or
could (a compacted topic would need ``delete`` added to its ``cleanup.policy``) are tried.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from consumer.retention_outlook import RetentionConfig
from spark_history.forecast.mechanism.topic_path import TopicState, topic_path
from spark_history.forecast.mechanism.volume_path import VolumePath, crossing_seconds

MARGIN = 0.99
"""Aim the cap 1% under the room, so the answer holds with rounding."""


@dataclass(frozen=True, slots=True)
class Prevention:
    topic: str
    setting: str
    """``retention.ms`` or ``retention.bytes`` (``local.`` ones for a tiered topic)."""
    value: int
    """The largest value found that keeps the volume under the limit until the horizon."""
    current: int
    """The topic's effective value now (-1: unlimited)."""
    needs_delete_policy: bool
    """The topic is compacted without ``delete``: the value works only with ``delete`` added."""

    def describe(self) -> str:
        value = str(self.value)
        if self.setting.endswith("ms"):
            value += f" ({self.value / 86_400_000:.3g} days)"
        text = f"{self.setting}={value} on {self.topic} (now {self.current})"
        if self.needs_delete_policy:
            text += " with cleanup.policy including delete"
        return text


def _changed(config: RetentionConfig, *, ms: int | None, size: int | None) -> RetentionConfig:
    policy = config.cleanup_policy | {"delete"}
    if config.remote_storage:
        if ms is not None:
            config = replace(config, local_retention_ms=ms)
        if size is not None:
            config = replace(config, local_retention_bytes=size)
        return replace(config, cleanup_policy=policy)
    if ms is not None:
        config = replace(config, retention_ms=ms)
    if size is not None:
        config = replace(config, retention_bytes=size)
    return replace(config, cleanup_policy=policy)


def _keeps_under(
    path: VolumePath, index: int, state: TopicState, limit: float, horizon: float
) -> bool:
    topics = list(path.topics)
    topics[index] = topic_path(state)
    return crossing_seconds(path.with_topics(topics), limit, horizon) is None


def preventions(
    path: VolumePath,
    states: dict[str, TopicState],
    limit: float,
    horizon: float,
) -> list[Prevention]:
    """For each topic that can grow, the largest retention.ms and retention.bytes that keep the
    volume under ``limit`` until ``horizon`` (seconds), when such a value exists."""
    if crossing_seconds(path, limit, horizon) is None:
        return []
    found: list[Prevention] = []
    for index, topic in enumerate(path.topics):
        state = states.get(topic.topic)
        if state is None or state.config is None or not topic.can_grow:
            continue
        found.extend(_for_topic(path, index, state, state.config, limit=limit, horizon=horizon))
    return found


def _for_topic(
    path: VolumePath,
    index: int,
    state: TopicState,
    config: RetentionConfig,
    *,
    limit: float,
    horizon: float,
) -> list[Prevention]:
    topic = path.topics[index]
    others = path.at(horizon) - topic.growth(horizon)
    room = (limit - others + topic.bytes) * MARGIN
    segments = state.partitions * config.segment_bytes
    prefix = "local." if config.remote_storage else ""
    needs_delete = "delete" not in config.cleanup_policy
    answers: list[Prevention] = []
    if state.rate > 0 and room > segments:
        ms = math.floor((room - segments) / state.rate * 1000)
        if ms >= 1:
            candidate = replace(state, config=_changed(config, ms=ms, size=None))
            if _keeps_under(path, index, candidate, limit, horizon):
                answers.append(
                    Prevention(
                        topic.topic,
                        f"{prefix}retention.ms",
                        ms,
                        config.effective_ms,
                        needs_delete,
                    )
                )
    if state.partitions > 0:
        size = math.floor(room / state.partitions - config.segment_bytes)
        if size >= 0:
            candidate = replace(state, config=_changed(config, ms=None, size=size))
            if _keeps_under(path, index, candidate, limit, horizon):
                answers.append(
                    Prevention(
                        topic.topic,
                        f"{prefix}retention.bytes",
                        size,
                        config.effective_bytes,
                        needs_delete,
                    )
                )
    return answers
