"""One topic's projected bytes on a volume: its bytes now plus its write rate, capped at what
retention keeps (pure).

The cap is ``consumer.retention_outlook``'s bound, fed the *write* rate
(``spark_history.forecast.mechanism.ingest_rate``) rather than the net growth: by size
``partitions x (retention.bytes + segment.bytes)``, by time ``rate x retention.ms + partitions x
segment.bytes``, the smaller when both, none when the topic is compacted without delete or both
limits are -1. A tiered topic is capped by its *local* retention, as long as uploads keep up:
when its bytes are already past the local bound (``consumer.upload_backlog``: the backlog of a
stuck upload), nothing local retention says is deleting, and the topic is projected unbounded
until uploads resume. A topic with no config read is projected unbounded too (nothing known
stops it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from consumer.retention_outlook import (
    OutlookKind,
    RetentionConfig,
    TopicOnVolume,
    retention_outlook,
)
from consumer.upload_backlog import upload_backlog_bytes


@dataclass(frozen=True, slots=True)
class TopicState:
    """One topic on one volume at the origin, with its write rate and its configs."""

    topic: str
    bytes: int
    partitions: int
    active_segment_bytes: int
    transient_bytes: int
    rate: float
    """Write rate, bytes per second (>= 0)."""
    config: RetentionConfig | None
    """None: no config was read for the topic."""


@dataclass(frozen=True, slots=True)
class TopicPath:
    topic: str
    bytes: float
    rate: float
    """Bytes per second."""
    bound: float | None
    """The most retention keeps on the volume; None when nothing bounds the topic."""
    detail: str

    def at(self, seconds: float) -> float:
        """Projected bytes ``seconds`` after the origin."""
        grown = self.bytes + self.rate * seconds
        return grown if self.bound is None else min(grown, self.bound)

    def growth(self, seconds: float) -> float:
        """Projected bytes minus bytes now (negative when retention cuts the topic down)."""
        return self.at(seconds) - self.bytes

    @property
    def can_grow(self) -> bool:
        """A driver candidate: unbounded, or bounded above its bytes now, and written."""
        return self.rate > 0 and (self.bound is None or self.bound > self.bytes)


def topic_path(state: TopicState) -> TopicPath:
    """The projection of ``state`` (see the module docstring)."""
    if state.config is None:
        return TopicPath(state.topic, state.bytes, state.rate, None, "no config read")
    outlook = retention_outlook(
        TopicOnVolume(
            bytes=state.bytes,
            partitions=state.partitions,
            growth_bytes_per_second=state.rate,
            active_segment_bytes=state.active_segment_bytes,
        ),
        state.config,
    )
    backlog = upload_backlog_bytes(
        state.config,
        bytes_on_volume=state.bytes,
        transient_bytes=state.transient_bytes,
        partitions=state.partitions,
        growth_bytes_per_second=state.rate,
        active_segment_bytes=state.active_segment_bytes,
    )
    if backlog:
        return TopicPath(
            state.topic,
            state.bytes,
            state.rate,
            None,
            f"upload backlog of {backlog} bytes past local retention: uploads stuck, "
            "nothing deleted locally",
        )
    if outlook.kind is OutlookKind.UNBOUNDED or outlook.bound_bytes is None:
        return TopicPath(state.topic, state.bytes, state.rate, None, outlook.detail)
    return TopicPath(
        state.topic, state.bytes, state.rate, float(outlook.bound_bytes), outlook.detail
    )


def with_config(state: TopicState, config: RetentionConfig) -> TopicState:
    return replace(state, config=config)
