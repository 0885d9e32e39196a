"""Replaying the decision rule over one volume's history for a candidate pair of limits.

The rule is ``consumer.limits``: thresholds come from ``free_bytes_threshold`` itself (called
once per distinct capacity), and states from :func:`judge_free_space_array`, the vectorised
form of ``judge_free_space`` (a per-row Python call would cost minutes on a long history).
``tests/spark_history_pure/test_decision_replay.py`` checks the two agree on every boundary
case, so the replay cannot drift from what a consumer decides.

What is measured, per candidate:
- hours THROTTLE and hours PAUSE (each snapshot's state lasts until the next snapshot, at
  most ``max_gap_hours``: a hole in the history is not counted as time in any state);
- flips: changes of state between consecutive snapshots;
- episodes: a run of non-OPEN states; OPEN interludes shorter than ``merge_gap_hours`` do not
  end an episode (a noisy volume hovering at the soft threshold is one episode, not fifty);
- warning hours: per episode that reaches PAUSE, the time from its first soft breach to its
  first hard breach. An episode already under way when the history starts has no known
  start, so it gives no warning figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from consumer.limits import free_bytes_threshold, judge_free_space
from schemas.decision import QuotaState
from schemas.snapshot import LimitType, MinFreePercentageLimit

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int8]

STATE_CODES: dict[QuotaState, int] = {
    QuotaState.OPEN: 0,
    QuotaState.THROTTLE: 1,
    QuotaState.PAUSE: 2,
}
OPEN, THROTTLE, PAUSE = (
    STATE_CODES[state] for state in (QuotaState.OPEN, QuotaState.THROTTLE, QuotaState.PAUSE)
)

__all__ = [
    "Candidate",
    "ReplayStats",
    "judge_free_space",
    "judge_free_space_array",
    "replay_candidates",
    "replay_volume",
]


def judge_free_space_array(
    free: FloatArray, soft: FloatArray, hard: FloatArray
) -> tuple[IntArray, FloatArray]:
    """``judge_free_space`` elementwise: (state codes, throttle factors)."""
    free, soft, hard = np.broadcast_arrays(
        np.asarray(free, dtype=np.float64),
        np.asarray(soft, dtype=np.float64),
        np.asarray(hard, dtype=np.float64),
    )
    paused = free <= hard
    throttled = ~paused & (soft > hard) & (free <= soft)
    states = np.where(paused, PAUSE, np.where(throttled, THROTTLE, OPEN)).astype(np.int8)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(throttled, (free - hard) / (soft - hard), 1.0)
    factors: FloatArray = np.where(paused, 0.0, factor)
    return states, factors


@dataclass(frozen=True, slots=True, order=True)
class Candidate:
    """A soft and a hard limit, both MinFreePercentage (percent of capacity kept free)."""

    soft_percent: float
    hard_percent: float

    def thresholds(self, capacity: int) -> tuple[float, float]:
        """(soft, hard) thresholds in free bytes, through ``free_bytes_threshold``."""
        soft = MinFreePercentageLimit(type=LimitType.MIN_FREE_PERCENTAGE, level=self.soft_percent)
        hard = MinFreePercentageLimit(type=LimitType.MIN_FREE_PERCENTAGE, level=self.hard_percent)
        return free_bytes_threshold(soft, capacity), free_bytes_threshold(hard, capacity)


@dataclass(slots=True)
class ReplayStats:
    throttled_hours: float = 0.0
    paused_hours: float = 0.0
    flips: int = 0
    episodes: int = 0
    hard_episodes: int = 0
    warning_hours: list[float] = field(default_factory=list)


def replay_volume(
    times_s: FloatArray,
    free: FloatArray,
    capacity: npt.NDArray[np.int64],
    candidate: Candidate,
    *,
    max_gap_hours: float = 0.25,
    merge_gap_hours: float = 1.0,
) -> ReplayStats:
    """Replay ``candidate`` over one volume's snapshots (sorted by time)."""
    gaps = (max_gap_hours, merge_gap_hours)
    return replay_candidates(times_s, free, capacity, (candidate,), gaps)[0]


def replay_candidates(
    times_s: FloatArray,
    free: FloatArray,
    capacity: npt.NDArray[np.int64],
    candidates: Sequence[Candidate],
    gap_hours: tuple[float, float] = (0.25, 1.0),
) -> list[ReplayStats]:
    """Replay each of ``candidates`` over one volume's snapshots (sorted by time), judged all
    at once (a row of states per candidate); ``gap_hours``: the longest gap a snapshot's state
    lasts over, and the longest OPEN interlude that still merges two breaches."""
    stats = [ReplayStats() for _ in candidates]
    if times_s.size == 0 or not candidates:
        return stats
    soft = np.empty((len(candidates), times_s.size))
    hard = np.empty((len(candidates), times_s.size))
    for value in np.unique(capacity):
        mask = capacity == value
        limits = np.array([candidate.thresholds(int(value)) for candidate in candidates])
        soft[:, mask], hard[:, mask] = limits[:, :1], limits[:, 1:]
    states, _ = judge_free_space_array(free[np.newaxis, :], soft, hard)
    hours = times_s / 3600.0
    durations = np.minimum(np.diff(hours, append=hours[-1]), gap_hours[0])
    throttled = (states == THROTTLE) @ durations
    paused = (states == PAUSE) @ durations
    flips = np.count_nonzero(states[:, 1:] != states[:, :-1], axis=1)
    for row in np.nonzero((states != OPEN).any(axis=1))[0]:
        stats[row].throttled_hours = float(throttled[row])
        stats[row].paused_hours = float(paused[row])
        stats[row].flips = int(flips[row])
        _episodes(hours, states[row], gap_hours[1], stats[row])
    return stats


def _episodes(
    hours: FloatArray, states: IntArray, merge_gap_hours: float, stats: ReplayStats
) -> None:
    breached = np.nonzero(states != OPEN)[0]
    if breached.size == 0:
        return
    # Split the breached snapshots where the OPEN interlude between two is long enough.
    gaps = hours[breached[1:]] - hours[breached[:-1]]
    interlude = np.zeros(breached.size - 1, dtype=bool)
    open_between = breached[1:] - breached[:-1] > 1
    interlude[open_between] = gaps[open_between] > merge_gap_hours
    starts = np.concatenate(([0], np.nonzero(interlude)[0] + 1))
    ends = np.concatenate((starts[1:], [breached.size]))
    for start, end in zip(starts, ends, strict=True):
        members = breached[start:end]
        stats.episodes += 1
        paused = members[states[members] == PAUSE]
        if paused.size == 0:
            continue
        stats.hard_episodes += 1
        if members[0] == 0:
            continue  # under way when the history starts: its first soft breach is unknown
        stats.warning_hours.append(float(hours[paused[0]] - hours[members[0]]))


def largest_climb_percent(
    buckets: npt.NDArray[np.int64], used_percent: FloatArray, window_buckets: int
) -> float:
    """The most a volume's used share (percent of capacity) rose within ``window_buckets``:
    over every bucket b, the highest use in buckets b .. b + window_buckets minus the use in b.
    ``buckets`` are whole bucket numbers (sorted, gaps allowed: a missing bucket is no data,
    not a value); 0 when the volume never rose."""
    if used_percent.size == 0:
        return 0.0
    grid = np.full(int(buckets[-1] - buckets[0]) + 1 + window_buckets, np.nan)
    grid[buckets - buckets[0]] = used_percent
    ahead = np.lib.stride_tricks.sliding_window_view(grid, window_buckets + 1)
    with np.errstate(all="ignore"):
        highest = np.fmax.reduce(ahead, axis=1)
    rises = highest - grid[: highest.size]
    rises = rises[~np.isnan(rises)]
    return float(max(rises.max(initial=0.0), 0.0))


_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def _binary_size(power_of_two: int) -> str:
    """2**k bytes in the largest binary unit that keeps it whole: ``2**40`` -> ``1 TiB``."""
    unit = min(power_of_two // 10, len(_BINARY_UNITS) - 1)
    return f"{2 ** (power_of_two - 10 * unit)} {_BINARY_UNITS[unit]}"


def capacity_class(capacity_bytes: int) -> str:
    """The volume class: volumes within the same power-of-two band of capacity (``256 GiB-512
    GiB``). Limits are shares of capacity, so a small disk climbs more points for the same
    bytes: its class's climb is judged apart from the big disks'."""
    power = max(int(capacity_bytes), 1).bit_length() - 1
    return f"{_binary_size(power)}-{_binary_size(power + 1)}"


@dataclass(frozen=True, slots=True)
class ClassClimb:
    volume_class: str
    volumes: int
    climb_percent: float
    """The ``quantile`` over the class's volumes of each volume's largest climb."""


def class_climbs(
    classes: list[str], climbs: list[float], quantile: float
) -> tuple[ClassClimb, ...]:
    """Per volume class, the ``quantile`` of its volumes' climbs (linear interpolation, as
    Spark's ``percentile``), the steepest class first."""
    by_class: dict[str, list[float]] = {}
    for volume_class, climb in zip(classes, climbs, strict=True):
        by_class.setdefault(volume_class, []).append(climb)
    found = [
        ClassClimb(name, len(values), float(np.quantile(np.asarray(values), quantile)))
        for name, values in by_class.items()
    ]
    return tuple(sorted(found, key=lambda entry: (-entry.climb_percent, entry.volume_class)))
