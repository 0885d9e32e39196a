"""The cluster decision rule replayed over history: what the *cluster* did, hour by hour.

The consumer decides for the whole cluster (``consumer.ClusterState``): the smallest throttle
factor of any volume anywhere wins, any volume at its hard limit pauses every producer, and a
live broker without a fresh snapshot pauses the cluster when ``on_missing`` is PAUSE. A
per-volume replay sums volume-hours, which is not what producers saw. This module applies
the same rule at a grid of instants:

- per broker, its newest sample at or before the instant counts (older ones are ignored);
- a breach counts until a newer sample clears it or a tombstone retires the broker, whether
  the broker is live and fresh or not;
- a broker is *live* from its first sample until it is retired (a tombstone after its last
  sample, or silent for longer than ``retired_after_seconds``); a live broker whose newest
  sample is older than ``stale_after_seconds`` (strictly), or that has none yet, is unknown;
- a snapshot dated more than ``max_clock_skew_seconds`` after its Kafka record timestamp is
  refused, as the consumer refuses it on arrival: it counts for nothing, and its broker is
  unknown (``future``) from its arrival until a snapshot that is not too far ahead arrives;
- unknown brokers PAUSE the cluster when ``on_missing`` is PAUSE (``caused_by_missing_data``
  when the limits alone would not have paused it);
- an operator's override in force at the instant (``override_history``) replaces the state:
  OPEN with factor 1 or PAUSE with factor 0, for the limits in force and every candidate
  alike, never for missing data (``ClusterState.decide(now, override=...)``).

``tests/spark/test_cluster_replay.py`` checks, instant by instant, that this gives the state
and factor ``ClusterState.decide`` gives on the same snapshots.

A sample is one broker at one time, reduced to its worst volume. For MinFreePercentage
candidates the worst volume is the one with the least free fraction whatever the limits (the
factor rises with free / capacity), so one (free, capacity) pair per sample serves every
candidate; the limits in force (any types, per-volume overrides) come as a precomputed factor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from consumer.policy import DEFAULT_MAX_CLOCK_SKEW_SECONDS
from spark_history.decision_replay import (
    OPEN,
    PAUSE,
    THROTTLE,
    Candidate,
    FloatArray,
    IntArray,
    judge_free_space_array,
)

NO_BREACH = 2.0
"""The factor of a sample with no volume past a limit: above any real factor (at most 1; a
volume exactly at its soft threshold THROTTLEs with factor 1)."""


@dataclass(frozen=True, slots=True)
class BrokerSamples:
    """One broker's samples, sorted by time (seconds since the epoch)."""

    broker_id: int
    times: FloatArray
    worst_free: FloatArray
    """Free bytes of the volume with the least free fraction."""
    worst_capacity: FloatArray
    in_force_factor: FloatArray
    """The smallest factor of its breaching volumes under the limits in force (0 = PAUSE),
    :data:`NO_BREACH` when none breaches."""
    retired_at: float | None = None
    """Its newest tombstone, if any."""
    refused_at: FloatArray = field(default_factory=lambda: np.empty(0))
    """Arrival times (record timestamps) of its snapshots refused as dated too far ahead,
    sorted; ``times`` holds only the snapshots taken."""


@dataclass(frozen=True, slots=True)
class ReplayPolicy:
    """The consumer's knobs, with defaults suited to a history sampled every few minutes."""

    stale_after_seconds: float = 1800.0
    on_missing_pause: bool = True
    retired_after_seconds: float = 24 * 3600.0
    max_clock_skew_seconds: float = DEFAULT_MAX_CLOCK_SKEW_SECONDS
    """A snapshot dated further than this after its record timestamp is refused (the
    consumer's ``max_clock_skew``)."""


@dataclass(frozen=True, slots=True)
class ClusterTimeline:
    """The cluster's state at each grid instant, for one set of limits."""

    times: FloatArray
    states: IntArray
    factors: FloatArray
    missing_data: npt.NDArray[np.bool_]
    """PAUSE only because some live broker was unknown."""
    driver: npt.NDArray[np.int64]
    """The broker with the smallest factor (-1 when none breaches)."""
    forced: IntArray | None = None
    """The state an operator's override forced (``override_history.NO_OVERRIDE``: none);
    None: no override was in force at any instant."""

    def hours(self, step_seconds: float) -> dict[str, float]:
        """Hours the rule throttled and paused (the limits' cost), and apart from them the
        hours an override decided (the same for every set of limits)."""
        step = step_seconds / 3600.0
        forced = self.forced if self.forced is not None else np.full(self.states.size, -1)
        by_rule = forced < 0
        return {
            "throttledHours": float(np.count_nonzero(by_rule & (self.states == THROTTLE))) * step,
            "pausedHours": float(np.count_nonzero(by_rule & (self.states == PAUSE))) * step,
            "missingDataPausedHours": float(np.count_nonzero(self.missing_data)) * step,
            "overrideOpenHours": float(np.count_nonzero(forced == OPEN)) * step,
            "overridePausedHours": float(np.count_nonzero(forced == PAUSE)) * step,
            "flips": float(np.count_nonzero(self.states[1:] != self.states[:-1])),
        }


def _newest(broker: BrokerSamples, grid: FloatArray) -> npt.NDArray[np.int64]:
    """Index of the broker's newest sample at or before each instant (-1: none yet)."""
    found: npt.NDArray[np.int64] = np.searchsorted(broker.times, grid, side="right") - 1
    return found


def _presence(
    broker: BrokerSamples, grid: FloatArray, newest: npt.NDArray[np.int64], policy: ReplayPolicy
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(counts: its newest sample's breach counts, unknown: live without a fresh sample)."""
    has = newest >= 0
    sample_time = _time_at(broker.times, newest)
    refused_time = _time_at(
        broker.refused_at, np.searchsorted(broker.refused_at, grid, side="right") - 1
    )
    retired = np.zeros(grid.size, dtype=bool)
    if broker.retired_at is not None:
        retired = (broker.retired_at >= np.maximum(sample_time, refused_time)) & (
            broker.retired_at <= grid
        )
    silent = grid - np.maximum(sample_time, refused_time) > policy.retired_after_seconds
    live = (grid >= _first_heard(broker)) & ~retired & ~silent
    stale = ~has | (sample_time < grid - policy.stale_after_seconds)
    future = refused_time > sample_time
    return has & ~retired, live & (stale | future)


def _time_at(times: FloatArray, index: npt.NDArray[np.int64]) -> FloatArray:
    """``times[index]``, -inf where ``index`` is -1 (nothing yet)."""
    if not times.size:
        return np.full(index.size, -np.inf)
    found: FloatArray = np.where(index >= 0, times[np.maximum(index, 0)], -np.inf)
    return found


def _first_heard(broker: BrokerSamples) -> float:
    firsts = [float(values[0]) for values in (broker.times, broker.refused_at) if values.size]
    return min(firsts) if firsts else math.inf


def replay_cluster(
    brokers: Sequence[BrokerSamples],
    grid: FloatArray,
    policy: ReplayPolicy,
    candidate: Candidate | None,
    forced: IntArray | None = None,
) -> ClusterTimeline:
    """The cluster's state at every instant of ``grid`` under ``candidate`` (None: the limits
    in force); ``forced``: the state an operator's override forced at each instant
    (``override_history.forced_states``), negative where none did."""
    factor = np.full(grid.size, NO_BREACH)
    driver = np.full(grid.size, -1, dtype=np.int64)
    unknown = np.zeros(grid.size, dtype=bool)
    for broker in brokers:
        newest = _newest(broker, grid)
        counts, broker_unknown = _presence(broker, grid, newest, policy)
        unknown |= broker_unknown
        sample_factor = _sample_factors(broker, candidate)
        at_instant = np.where(counts, sample_factor[np.maximum(newest, 0)], NO_BREACH)
        worse = at_instant < factor
        factor = np.where(worse, at_instant, factor)
        driver = np.where(worse, broker.broker_id, driver)
    breach = factor < NO_BREACH
    states = np.where(factor == 0.0, PAUSE, np.where(breach, THROTTLE, OPEN)).astype(np.int8)
    missing = unknown & (states != PAUSE) if policy.on_missing_pause else np.zeros_like(unknown)
    states = np.where(missing, PAUSE, states).astype(np.int8)
    factors = np.where(missing, 0.0, np.where(breach, factor, 1.0))
    if forced is None or not (forced >= 0).any():
        return ClusterTimeline(grid, states, factors, missing, driver)
    overridden = forced >= 0
    states = np.where(overridden, forced, states).astype(np.int8)
    factors = np.where(overridden, np.where(forced == OPEN, 1.0, 0.0), factors)
    return ClusterTimeline(grid, states, factors, missing & ~overridden, driver, forced)


def _sample_factors(broker: BrokerSamples, candidate: Candidate | None) -> FloatArray:
    if candidate is None:
        return broker.in_force_factor
    soft = np.empty(broker.times.size)
    hard = np.empty(broker.times.size)
    for capacity in np.unique(broker.worst_capacity):
        mask = broker.worst_capacity == capacity
        soft[mask], hard[mask] = candidate.thresholds(int(capacity))
    states, factors = judge_free_space_array(broker.worst_free, soft, hard)
    marked: FloatArray = np.where(states == OPEN, NO_BREACH, factors)
    return marked
