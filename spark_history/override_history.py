"""Which operator override was in force when, from the override topic's records (pure).

The consumer follows the override topic (``consumer.override_follower``): it judges every record
as it arrives (``consumer.overrides.judge_override_record``: decodes, is signed by an operator
when the policy asks, ``setAt`` within the allowed skew of its arrival), keeps the last believed
one, and lets it decide while it is in force (``consumer.overrides.in_force``: from ``setAt``
until ``expiresAt``). A refused record changes nothing; a tombstone clears the override.

:func:`fold_overrides` does the same over the history, in order of arrival (the Kafka record
timestamp, then partition and offset), with the reader's clock at each record's arrival, and
returns the intervals in which an override decided the cluster's state.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from consumer.overrides import OverridePolicy, RefusedOverride, judge_override_record
from schemas.decision import QuotaState
from schemas.override import QuotaOverride
from spark_history.decision_replay import OPEN, PAUSE, IntArray

NO_OVERRIDE = -1
"""The state code of an instant no override decided."""


@dataclass(frozen=True, slots=True)
class OverrideRecord:
    """One record of the override topic as Kafka kept it."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    arrived_at: datetime
    """Its Kafka record timestamp."""
    partition: int = 0
    offset: int = 0


@dataclass(frozen=True, slots=True)
class OverrideInterval:
    """``state`` forced from ``start`` (inclusive) to ``end`` (exclusive), seconds since the
    epoch."""

    start: float
    end: float
    state: QuotaState


@dataclass(frozen=True, slots=True)
class OverrideHistory:
    intervals: tuple[OverrideInterval, ...]
    """In time order, not overlapping."""
    refused: tuple[RefusedOverride, ...]
    """The records that did not take effect, in order of arrival."""


def fold_overrides(records: Iterable[OverrideRecord], policy: OverridePolicy) -> OverrideHistory:
    """The overrides in force over time, as the consumer's follower keeps them."""
    ordered = sorted(records, key=lambda one: (one.arrived_at, one.partition, one.offset))
    intervals: list[OverrideInterval] = []
    refused: list[RefusedOverride] = []
    held: QuotaOverride | None = None
    since = -math.inf
    for record in ordered:
        verdict = judge_override_record(
            record.key,
            record.value,
            record.headers,
            arrived_at=record.arrived_at,
            now=record.arrived_at,
            policy=policy,
        )
        if verdict.refusal is not None:
            refused.append(verdict.refusal)
            continue
        arrival = record.arrived_at.timestamp()
        intervals.extend(_held_interval(held, since, arrival))
        held, since = verdict.override, arrival
    intervals.extend(_held_interval(held, since, math.inf))
    return OverrideHistory(tuple(intervals), tuple(refused))


def _held_interval(
    override: QuotaOverride | None, since: float, until: float
) -> list[OverrideInterval]:
    """When ``override``, held from ``since`` until ``until``, was in force."""
    if override is None:
        return []
    start = max(since, override.set_at.timestamp())
    end = min(until, override.expires_at.timestamp())
    return [OverrideInterval(start, end, override.state)] if start < end else []


def whole_buckets(
    intervals: Sequence[OverrideInterval], bucket_seconds: float
) -> tuple[OverrideInterval, ...]:
    """The bucket ends whose whole bucket an override decided: a bucket of the hourly replay
    stands for its worst moment, and in a bucket an override covered only in part the rule
    decided the rest."""
    shrunk = (
        OverrideInterval(interval.start + bucket_seconds, interval.end, interval.state)
        for interval in intervals
    )
    return tuple(interval for interval in shrunk if interval.start < interval.end)


def forced_states(intervals: Sequence[OverrideInterval], grid: np.ndarray) -> IntArray:
    """The state code an override forced at each instant of ``grid``, :data:`NO_OVERRIDE`
    where none was in force."""
    forced = np.full(grid.size, NO_OVERRIDE, dtype=np.int8)
    for interval in intervals:
        inside = (grid >= interval.start) & (grid < interval.end)
        forced[inside] = OPEN if interval.state is QuotaState.OPEN else PAUSE
    return forced
