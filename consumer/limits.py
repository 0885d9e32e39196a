"""Limit maths: every limit type becomes a threshold in free bytes, and a volume gets a verdict.

Pure functions on values. A volume is judged on free = capacity - consumed:
- free <= hard threshold                      -> PAUSE, factor 0
- hard < free <= soft threshold (soft > hard) -> THROTTLE, factor (free - hard) / (soft - hard)
- otherwise                                   -> OPEN, factor 1
A volume's own limits override the broker-wide limits carried in the same snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from schemas.decision import QuotaState
from schemas.snapshot import (
    ConsumedSpaceLimit,
    Limit,
    MinFreeBytesLimit,
    MinFreePercentageLimit,
    VolumeUsage,
)


def free_bytes_threshold(limit: Limit, capacity: int) -> float:
    """The free space (bytes) at or below which ``limit`` triggers on a volume of ``capacity``."""
    # Dispatch on the exact class: pydantic's isinstance() is slow on the hot path.
    return _THRESHOLD_BY_LIMIT_CLASS[type(limit)](limit.level, capacity)


_THRESHOLD_BY_LIMIT_CLASS: dict[type, Callable[[float, int], float]] = {
    MinFreeBytesLimit: lambda level, capacity: float(level),
    ConsumedSpaceLimit: lambda level, capacity: float(capacity - level),
    MinFreePercentageLimit: lambda level, capacity: capacity * level / 100.0,
}


@dataclass(frozen=True, slots=True)
class VolumeVerdict:
    """How one volume stands against its limits."""

    volume: VolumeUsage
    state: QuotaState
    throttle_factor: float
    soft_threshold: float
    hard_threshold: float


def judge_free_space(
    free: float, soft_threshold: float, hard_threshold: float
) -> tuple[QuotaState, float]:
    """The state and throttle factor for ``free`` bytes given the two thresholds."""
    if free <= hard_threshold:
        return QuotaState.PAUSE, 0.0
    if soft_threshold > hard_threshold and free <= soft_threshold:
        return QuotaState.THROTTLE, (free - hard_threshold) / (soft_threshold - hard_threshold)
    return QuotaState.OPEN, 1.0


def judge_volume(volume: VolumeUsage, broker_soft: Limit, broker_hard: Limit) -> VolumeVerdict:
    """Judge ``volume`` with its own limits where it has them, else the broker-wide ones."""
    capacity = volume.capacity
    soft = free_bytes_threshold(volume.soft_limit or broker_soft, capacity)
    hard = free_bytes_threshold(volume.hard_limit or broker_hard, capacity)
    state, factor = judge_free_space(capacity - volume.consumed, soft, hard)
    return VolumeVerdict(volume, state, factor, soft, hard)


ResolvedVolume = tuple[float, float, float]
"""(free bytes, soft threshold, hard threshold): a volume with its limits already resolved."""


def resolve_volume(volume: VolumeUsage, broker_soft: Limit, broker_hard: Limit) -> ResolvedVolume:
    """Resolve a volume's limits once, when its snapshot arrives, so judging is plain arithmetic."""
    capacity = volume.capacity
    return (
        float(capacity - volume.consumed),  # all floats: mixed int/float compares are 3x slower
        free_bytes_threshold(volume.soft_limit or broker_soft, capacity),
        free_bytes_threshold(volume.hard_limit or broker_hard, capacity),
    )


def is_open(free: float, soft_threshold: float, hard_threshold: float) -> bool:
    """The fast test behind ``judge_free_space``: True exactly when it would say OPEN."""
    return free > hard_threshold and (free > soft_threshold or soft_threshold <= hard_threshold)
