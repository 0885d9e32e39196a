"""A volume's projected consumed bytes: the sum of its topics' paths plus the rest, and when it
crosses the hard limit (pure).

``consumed(t) = consumed now + sum of each topic's growth(t) + rest rate x t``. The volume's
other bytes (the OS, other files; what the snapshot counts and the usage document does not) are
held at their level; the rest of the log dirs (``other`` topics and ``unattributedBytes``) grows
at its own rate. Every rate is >= 0, so the path is piecewise linear and never falls after the
origin (at the origin a topic already past its bound is cut down to it): the crossing is found
exactly, segment by segment between the topics' break points (where a topic reaches its bound).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from spark_history.forecast.mechanism.topic_path import TopicPath


@dataclass(frozen=True, slots=True)
class VolumePath:
    consumed: float
    """Bytes consumed on the volume at the origin (the snapshot)."""
    topics: tuple[TopicPath, ...]
    rest_rate: float
    """Bytes per second of ``other`` and ``unattributedBytes`` together (>= 0)."""

    def at(self, seconds: float) -> float:
        """Projected consumed bytes ``seconds`` after the origin."""
        grown = sum(topic.growth(seconds) for topic in self.topics)
        return self.consumed + grown + self.rest_rate * seconds

    def break_points(self, horizon: float) -> list[float]:
        """0, the instants in (0, horizon) where a topic reaches its bound, and ``horizon``."""
        points = {0.0, horizon}
        for topic in self.topics:
            if topic.bound is not None and topic.rate > 0 and topic.bound > topic.bytes:
                reached = (topic.bound - topic.bytes) / topic.rate
                if 0 < reached < horizon:
                    points.add(reached)
        return sorted(points)

    def with_topics(self, topics: Sequence[TopicPath]) -> VolumePath:
        return VolumePath(self.consumed, tuple(topics), self.rest_rate)


def crossing_seconds(path: VolumePath, limit: float, horizon: float) -> float | None:
    """The first instant in [0, horizon] the path reaches ``limit``; 0 when the volume is at or
    past it now; None when it stays under until ``horizon``."""
    if path.consumed >= limit:
        return 0.0
    points = path.break_points(horizon)
    for start, end in pairwise(points):
        low, high = path.at(start), path.at(end)
        if low >= limit:
            return start
        if high >= limit:
            # Linear between break points: interpolate.
            return start + (limit - low) / (high - low) * (end - start)
    return None
