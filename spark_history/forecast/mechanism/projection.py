"""One volume's mechanism forecast at an origin: fill time, drivers, prevention (pure).

From the usage history of the volume (each topic's bytes over the lookback window, ``other``
and ``unattributedBytes``), the topics' configs, and the volume's snapshot at the origin
(capacity, consumed, the hard limit's threshold in free bytes):

1. each topic of the latest survey gets its write rate (``ingest_rate``) and its path, capped
   at its retention bound (``topic_path``); a topic compacted without delete has no bound and
   grows at its net growth (``net_growth_rate``: compaction reclaims what is rewritten);
2. the rest (``other`` plus ``unattributedBytes``) grows at the Theil-Sen slope of its own
   series, 0 when that falls (``net_growth_rate``);

   both rates read the last ``rate_window_seconds`` of the series only (the history job uses
   the trend's 72 h window: three daily cycles, and a step in a topic's rate counts fully once
   it is 72 h old, as it does for the line; over the whole lookback a step up is still half
   counted days later, and the real-broker backtest missed a fill 6 h ahead for it);
3. the volume fills when ``consumed now + the growth of every path`` reaches ``capacity - hard
   threshold`` (``volume_path``), within the horizon;
4. the drivers are the topics that can grow (unbounded, or bounded above their bytes now), by
   their growth until the fill (or the horizon); the rest is one driver when it grows;
5. the preventions are the largest retention values that keep the volume under (``prevention``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from spark_history.forecast.mechanism.ingest_rate import ingest_rate, net_growth_rate
from spark_history.forecast.mechanism.prevention import Prevention, preventions
from spark_history.forecast.mechanism.topic_config import config_from_values
from spark_history.forecast.mechanism.topic_path import TopicPath, TopicState, topic_path
from spark_history.forecast.mechanism.volume_path import VolumePath, crossing_seconds

FloatArray = npt.NDArray[np.float64]

REST = "(other topics and unattributed)"
"""The driver name of the bytes outside the listed topics."""


@dataclass(frozen=True, slots=True)
class TopicHistory:
    """One topic's surveys of the volume; the last point is its latest survey."""

    topic: str
    seconds: FloatArray
    """Survey instants, seconds relative to the origin (<= 0), increasing."""
    bytes: FloatArray
    transient_bytes: FloatArray
    partitions: int
    active_segment_bytes: int
    config: Mapping[str, object] | None = None
    """The topic's ``topicConfigs`` values by JSON name; None when none was read."""


@dataclass(frozen=True, slots=True)
class VolumeHistory:
    capacity: float
    consumed: float
    """Bytes consumed at the origin (the latest snapshot)."""
    hard_threshold_bytes: float
    """The hard limit as free bytes (the snapshot dataset's ``hardThresholdBytes``)."""
    topics: Sequence[TopicHistory]
    """Topics of the latest survey."""
    rest_seconds: FloatArray
    rest_bytes: FloatArray
    """``other.bytes + unattributedBytes`` of every survey."""


@dataclass(frozen=True, slots=True)
class Driver:
    topic: str
    growth_bytes: float
    """Growth until the fill (or the horizon)."""
    detail: str


@dataclass(frozen=True, slots=True)
class MechanismForecast:
    fill_seconds: float | None
    """Seconds from the origin until the hard limit is reached; None: not within the horizon."""
    limit_bytes: float
    path: VolumePath
    drivers: list[Driver] = field(default_factory=list)
    preventions: list[Prevention] = field(default_factory=list)
    unknown_configs: list[str] = field(default_factory=list)
    """Topics with no config read (projected unbounded)."""


def topic_state(history: TopicHistory, rate_window_seconds: float = math.inf) -> TopicState:
    """The topic at the origin, with the rate its bytes accumulate at, from its own series over
    the last ``rate_window_seconds`` (bytes outside the transient dirs), and its configs.

    That rate is the write rate (``ingest_rate``: the falls are retention's deletions, which
    the bound accounts for), except for a topic compacted without delete: the cleaner's falls
    are space reclaimed for good, and only new keys accumulate, so its rate is the net growth of
    its bytes (``net_growth_rate``), about 0 for a topic that rewrites the same keys."""
    recent = history.seconds >= -rate_window_seconds
    seconds, written = history.seconds[recent], (history.bytes - history.transient_bytes)[recent]
    config = None if history.config is None else config_from_values(history.config)
    if config is not None and "delete" not in config.cleanup_policy:
        rate = net_growth_rate(seconds, written)
    else:
        rate = ingest_rate(seconds, written).bytes_per_second
    return TopicState(
        topic=history.topic,
        bytes=int(history.bytes[-1]),
        partitions=history.partitions,
        active_segment_bytes=history.active_segment_bytes,
        transient_bytes=int(history.transient_bytes[-1]),
        rate=rate,
        config=config,
    )


def project_volume(
    volume: VolumeHistory, horizon_seconds: float, rate_window_seconds: float = math.inf
) -> MechanismForecast:
    """The mechanism forecast of ``volume`` (see the module docstring)."""
    states = {history.topic: topic_state(history, rate_window_seconds) for history in volume.topics}
    paths = tuple(topic_path(state) for state in states.values())
    recent = volume.rest_seconds >= -rate_window_seconds
    rest = net_growth_rate(volume.rest_seconds[recent], volume.rest_bytes[recent])
    path = VolumePath(volume.consumed, paths, rest)
    limit = volume.capacity - volume.hard_threshold_bytes
    fill = crossing_seconds(path, limit, horizon_seconds)
    until = horizon_seconds if fill is None else fill
    return MechanismForecast(
        fill_seconds=fill,
        limit_bytes=limit,
        path=path,
        drivers=drivers(path, until),
        preventions=preventions(path, states, limit, horizon_seconds),
        unknown_configs=sorted(name for name, state in states.items() if state.config is None),
    )


def drivers(path: VolumePath, until: float) -> list[Driver]:
    """The topics (and the rest) that grow the volume until ``until``, largest growth first."""
    found = [
        Driver(topic.topic, topic.growth(until), _driver_detail(topic))
        for topic in path.topics
        if topic.can_grow and topic.growth(until) > 0
    ]
    if path.rest_rate > 0:
        found.append(Driver(REST, path.rest_rate * until, "its own trend"))
    return sorted(found, key=lambda driver: (-driver.growth_bytes, driver.topic))


def _driver_detail(topic: TopicPath) -> str:
    if topic.bound is None:
        return f"unbounded ({topic.detail})"
    return f"bounded at {topic.bound:.0f} bytes ({topic.detail})"
