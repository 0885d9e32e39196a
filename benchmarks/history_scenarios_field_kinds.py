"""One design per base kind of the field scenarios, built from ``history_scenarios_field_model``.

A design is the topic groups and events of a volume and what it is calibrated to: fill about
``FillAt.hours`` after the forecast instant, be full since ``FullSince.hours``, or peak at
``PeakAt.fraction`` of its data area over the whole window.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from benchmarks.history_scenarios_field_model import (
    DAY,
    WARMUP_H,
    Clock,
    Compacted,
    Component,
    Constant,
    DeleteLog,
    FloatArray,
    MovedIn,
    MovedOut,
    Profile,
    Temporary,
    Unbounded,
    decay_trend,
    exponential_trend,
    make_traffic,
    ramp_trend,
    stop_trend,
)


@dataclass(frozen=True)
class FillAt:
    hours: float


@dataclass(frozen=True)
class FullSince:
    hours: float


@dataclass(frozen=True)
class PeakAt:
    fraction: float


@dataclass(frozen=True)
class Design:
    components: list[Component]
    target: FillAt | FullSince | PeakAt
    replaced_at: float | None = None
    resize_factor: float | None = None


@dataclass(frozen=True)
class Context:
    rng: np.random.Generator
    clock: Clock
    history_h: float
    horizon_h: float
    silences: tuple[tuple[float, float], ...] = ()
    """The broker's outages: events are placed where its publisher can see them."""

    def uniform(self, low: float, high: float) -> float:
        return float(self.rng.uniform(low, high))

    def moment(self, earliest: float, latest: float, after_start_h: float = 36.0) -> float:
        """An instant in [earliest, latest] hours, after the history's start, seen by the broker."""
        earliest = max(earliest, -self.history_h + after_start_h)
        instant = self.uniform(earliest, latest)
        for _ in range(50):
            if not any(start - 6.0 <= instant <= end + 2.0 for start, end in self.silences):
                break
            instant = self.uniform(earliest, latest)
        return instant

    def fill_target(self) -> float:
        if self.rng.random() < 0.2:
            return math.exp(self.uniform(math.log(2.0), math.log(min(48.0, self.horizon_h / 4))))
        return self.uniform(self.horizon_h / 30.0, self.horizon_h * 0.985)


def _background(ctx: Context, level: float, trend: FloatArray | None = None) -> DeleteLog:
    """Delete-policy topics at a retention-bounded plateau of about ``level``."""
    rng = ctx.rng
    retention = float(rng.choice([24.0, 48.0, 72.0, 168.0, 168.0, 168.0]))  # 7 d: default
    partitions = int(rng.integers(3, 25))
    shares = rng.dirichlet(np.full(partitions, rng.uniform(2.0, 20.0)))
    traffic = make_traffic(ctx.clock, rng, Profile.draw(rng), level / retention, trend)
    segment = level / partitions / ctx.uniform(3.0, 40.0)
    return DeleteLog(traffic, shares, rng.uniform(0.0, segment, partitions), segment, retention)


def _grower(
    ctx: Context,
    already: float,
    fill_h: float,
    trend: FloatArray | None = None,
    pronounced_week: bool = False,
) -> Unbounded:
    """Infinite-retention topics that take the volume from ``already`` to 1.0 in ``fill_h``."""
    profile = Profile.draw(ctx.rng, pronounced_week=pronounced_week)
    unit = make_traffic(ctx.clock, ctx.rng, profile, 1.0, trend)
    before = unit.at(0.0)
    ahead = max(unit.at(fill_h) - before, 1e-9)
    ratio = before / ahead
    drawn = ctx.uniform(0.3, 0.85) if fill_h > 240 else ctx.uniform(0.75, 0.95)
    fraction = max(drawn, (already + 0.03 + ratio) / (1.0 + ratio))
    growth = (1.0 - fraction) / ahead
    return Unbounded(unit.scaled(growth), fraction - already - growth * before)


def _growing(ctx: Context, trend: FloatArray | None = None, fill_h: float | None = None) -> Design:
    fill_h = ctx.fill_target() if fill_h is None else fill_h
    already = ctx.uniform(0.05, 0.25)
    parts: list[Component] = [_background(ctx, already), _grower(ctx, already, fill_h, trend)]
    return Design(parts, FillAt(fill_h))


def steady(ctx: Context) -> Design:
    return _growing(ctx)


def weekly(ctx: Context) -> Design:
    fill_h = ctx.fill_target()
    already = ctx.uniform(0.02, 0.15)
    grower = _grower(ctx, already, fill_h, pronounced_week=True)
    return Design([Constant(already), grower], FillAt(fill_h))


def accelerating(ctx: Context) -> Design:
    fill_h = ctx.fill_target()
    doubling = min(max(fill_h / ctx.uniform(1.5, 4.0), 3 * DAY), 20 * DAY)
    return _growing(ctx, exponential_trend(ctx.clock.grid, doubling), fill_h)


def new_tenant(ctx: Context) -> Design:
    middle = ctx.moment(-6 * DAY, 0.0, after_start_h=72.0)
    trend = ramp_trend(ctx.clock.grid, middle, ctx.uniform(8.0, 36.0), ctx.uniform(0.0, 0.05))
    return _growing(ctx, trend)


def sawtooth_rising(ctx: Context) -> Design:
    fill_h = ctx.fill_target()
    rng = ctx.rng
    at_forecast = ctx.uniform(0.35, 0.85)
    doubling = min(max(fill_h * math.log(2.0) / -math.log(at_forecast), 5 * DAY), 60 * DAY)
    retention = float(rng.choice([24.0, 48.0, 72.0]))
    partitions = int(rng.integers(1, 5))
    trend = exponential_trend(ctx.clock.grid, doubling)
    traffic = make_traffic(ctx.clock, rng, Profile.draw(rng), 0.8 / retention, trend)
    segment = 0.8 / partitions / ctx.uniform(2.5, 6.0)
    offsets = rng.uniform(0.0, segment, partitions)
    shares = rng.dirichlet(np.full(partitions, 8.0))
    log = DeleteLog(traffic, shares, offsets, segment, retention)
    return Design([log, Constant(ctx.uniform(0.02, 0.15))], FillAt(fill_h))


def _level(ctx: Context, low: float, high: float) -> PeakAt:
    return PeakAt(ctx.uniform(low, high))


def plateau(ctx: Context) -> Design:
    parts: list[Component] = [_background(ctx, ctx.uniform(0.3, 1.0))]
    if ctx.rng.random() < 0.5:
        parts.append(_background(ctx, ctx.uniform(0.1, 0.5)))
    if ctx.rng.random() < 0.5:
        parts.append(Constant(ctx.uniform(0.05, 0.4)))
    return Design(parts, _level(ctx, 0.3, 0.88))


def replaced(ctx: Context) -> Design:
    design = _growing(ctx) if ctx.rng.random() < 0.7 else plateau(ctx)
    return replace(design, replaced_at=ctx.moment(-10 * DAY, -DAY))


def resized(ctx: Context) -> Design:
    design = _growing(ctx) if ctx.rng.random() < 0.75 else plateau(ctx)
    return replace(design, resize_factor=float(ctx.rng.choice([1.5, 2.0, 2.5])))


def reassigned_in(ctx: Context) -> Design:
    design = _growing(ctx) if ctx.rng.random() < 0.6 else plateau(ctx)
    moved = MovedIn(
        _background(ctx, ctx.uniform(0.15, 0.4)),
        ctx.moment(-10 * DAY, -1.0),
        ctx.uniform(0.7, 2.0),
    )
    return replace(design, components=[*design.components, moved])


def full(ctx: Context) -> Design:
    design = _growing(ctx, fill_h=ctx.uniform(24.0, 300.0))
    return replace(design, target=FullSince(-ctx.uniform(1.0, 36.0)))


def slow(ctx: Context) -> Design:
    return _growing(ctx, fill_h=ctx.uniform(1.1, 2.4) * ctx.horizon_h)


def size_capped(ctx: Context) -> Design:
    rng = ctx.rng
    partitions = int(rng.integers(2, 13))
    cap = ctx.uniform(0.5, 0.9) / partitions
    segment = cap / ctx.uniform(3.0, 20.0)
    grows = rng.random() < 0.5
    trend = exponential_trend(ctx.clock.grid, ctx.uniform(10, 40) * DAY) if grows else None
    rate = cap * partitions / ctx.uniform(0.5 * DAY, 4 * DAY)
    traffic = make_traffic(ctx.clock, rng, Profile.draw(rng), rate, trend)
    shares = rng.dirichlet(np.full(partitions, 10.0))
    offsets = cap + rng.uniform(0.0, segment, partitions)
    log = DeleteLog(traffic, shares, offsets, segment, retention_bytes=cap)
    parts: list[Component] = [log, _background(ctx, ctx.uniform(0.02, 0.2))]
    return Design(parts, _level(ctx, 0.45, 0.9))


def stopped(ctx: Context) -> Design:
    stop = ctx.moment(-8 * DAY, -1.5 * DAY, after_start_h=72.0)
    trend = stop_trend(ctx.clock.grid, stop, ctx.uniform(0.0, 0.03))
    history_growth = ctx.uniform(0.1, 0.4) / (ctx.history_h + WARMUP_H)
    traffic = make_traffic(ctx.clock, ctx.rng, Profile.draw(ctx.rng), history_growth, trend)
    parts: list[Component] = [Unbounded(traffic, ctx.uniform(0.2, 0.6))]
    if ctx.rng.random() < 0.5:
        parts.append(_background(ctx, ctx.uniform(0.1, 0.3)))
    return Design(parts, _level(ctx, 0.5, 0.93))


def shrinking(ctx: Context) -> Design:
    rng = ctx.rng
    variant = int(rng.integers(3))
    parts: list[Component] = [_background(ctx, ctx.uniform(0.05, 0.3))]
    if variant == 0:  # retention.ms lowered from 7 days: the old segments go at the next check
        log = _background(ctx, ctx.uniform(0.6, 1.0))
        cut = (ctx.moment(-6 * DAY, -6.0, after_start_h=48.0), float(rng.choice([24.0, 48.0])))
        parts.append(replace(log, retention_h=168.0, retention_cut=cut))
    elif variant == 1:  # partitions reassigned to other brokers
        moved = _background(ctx, ctx.uniform(0.4, 0.8))
        parts.append(MovedOut(moved, ctx.moment(-6 * DAY, -2.0)))
    else:  # a tenant draining away
        start = ctx.moment(-10 * DAY, -2 * DAY)
        trend = decay_trend(ctx.clock.grid, start, ctx.uniform(2 * DAY, 10 * DAY))
        parts.append(_background(ctx, ctx.uniform(0.5, 1.0), trend))
    return Design(parts, _level(ctx, 0.45, 0.92))


def compacted(ctx: Context) -> Design:
    rng = ctx.rng
    partitions = int(rng.integers(1, 7))
    shares = rng.dirichlet(np.full(partitions, 5.0))
    live = ctx.uniform(0.2, 0.6) * shares
    rate = float(live.sum()) * ctx.uniform(0.05, 0.6) / DAY
    traffic = make_traffic(ctx.clock, rng, Profile.draw(rng), rate)
    log = Compacted(traffic, shares, live, ctx.uniform(0.002, 0.03), live * rng.uniform(0, 1))
    return Design([log, _background(ctx, ctx.uniform(0.1, 0.3))], _level(ctx, 0.3, 0.85))


def idle(ctx: Context) -> Design:
    return Design([_background(ctx, 1.0)], _level(ctx, 0.003, 0.06))


def stray_files(ctx: Context) -> Design:
    written = ctx.moment(-10 * DAY, -1.0)
    removed = written + ctx.uniform(2.0, 96.0) if ctx.rng.random() < 0.7 else math.inf
    dump = Temporary(ctx.uniform(0.05, 0.25), written, ctx.uniform(0.05, 0.5), removed)
    return Design([_background(ctx, ctx.uniform(0.4, 1.0)), dump], _level(ctx, 0.4, 0.85))


KINDS: dict[str, tuple[float, Callable[[Context], Design]]] = {
    "steady": (0.11, steady),
    "weekly": (0.07, weekly),
    "accelerating": (0.07, accelerating),
    "new_tenant": (0.06, new_tenant),
    "sawtooth_rising": (0.05, sawtooth_rising),
    "replaced": (0.05, replaced),
    "resized": (0.05, resized),
    "reassigned_in": (0.05, reassigned_in),
    "full": (0.04, full),
    "slow": (0.06, slow),
    "plateau": (0.11, plateau),
    "size_capped": (0.05, size_capped),
    "stopped": (0.06, stopped),
    "shrinking": (0.07, shrinking),
    "compacted": (0.04, compacted),
    "idle": (0.03, idle),
    "stray_files": (0.03, stray_files),
}
