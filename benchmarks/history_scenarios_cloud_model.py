"""Process model behind ``history_scenarios_cloud``: what one managed-Kafka log volume does.

Units.  A volume is simulated in *units*, one unit being about one hour of its customer's
average weekday producer traffic; the scenario scales the shape to bytes at the end, so a
kind describes only how the volume behaves and the capacity decides how close to full it
runs (a fill date is hit by choosing that scale, never by bending the process).

Traffic.  rate(t) = diurnal(customer's local hour) x weekly(local weekday, weekends at
30-50 %) x exp(AR(1) log-noise on an hourly grid, correlation time 2-12 h) x the kind's
own multiplier (steady growth, a launch, a decline, a batch calendar, ...).  The bytes
written, W(t), are its integral.

Storage.  Time retention keeps W(t) - W(cut(t)): cut is the end of the newest closed
segment older than retention.ms, segments roll every segment.ms in a few phase-shifted
partition groups, and deletion never moves back, which gives the retention sawtooth, the
plateau, the slow climb after a customer raises retention and the cliff when they lower it.
Size retention keeps between retention.bytes and one segment more.  Compacted topics keep
their unique keys plus a dirty tail that the cleaner removes; infinite retention keeps
everything.  Events (disk swap, reassignment, migration, resize) act on these pieces.

Time.  The grid runs in 5-minute steps from a 10-day warm-up before the longest history to
2.5 horizons after AT; every random draw is made up front from the scenario's generator,
so the truth is the same process continued past AT, not an extrapolation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

STEPS_PER_HOUR = 12
STEP_HOURS = 1.0 / STEPS_PER_HOUR
WARMUP_HOURS = 240.0
MAX_HISTORY_HOURS = 14 * 24.0
FILL_LIMIT_FACTOR = 2.5
HOURS_PER_WEEK = 168.0
URGENT_SHARE = 0.27  # share of filling volumes that fill within 48 h
RETENTION_HOURS = (24.0, 48.0, 72.0, 96.0, 168.0)
SEGMENT_ROLL_HOURS = (1.0, 4.0, 6.0, 12.0, 24.0)


@dataclass(frozen=True)
class Timeline:
    """The simulation grid, in hours relative to AT."""

    hours: FloatArray
    at_index: int
    at_hour_of_week: float  # hours since Monday 00:00 UTC of AT's week
    at_epoch_minutes: int

    def index_of(self, hours: float) -> int:
        index = round(hours * STEPS_PER_HOUR) + self.at_index
        return int(min(max(index, 0), len(self.hours) - 1))


def make_timeline(at: datetime, horizon_hours: float) -> Timeline:
    past = int((WARMUP_HOURS + MAX_HISTORY_HOURS) * STEPS_PER_HOUR)
    future = math.ceil(FILL_LIMIT_FACTOR * horizon_hours * STEPS_PER_HOUR)
    hours = np.arange(-past, future + 1, dtype=np.float64) / STEPS_PER_HOUR
    hour_of_week = at.weekday() * 24 + at.hour + at.minute / 60
    return Timeline(hours, past, hour_of_week, int(at.timestamp() // 60))


@dataclass(frozen=True)
class Customer:
    """The tenant owning a cluster: where its users live and how its week looks."""

    tz_hours: float
    peak_local_hour: float
    diurnal_amplitude: float
    weekend_factor: float


def draw_customer(rng: np.random.Generator) -> Customer:
    zones = (-8.0, -7.0, -5.0, -3.0, 0.0, 1.0, 2.0, 5.5, 8.0, 9.0, 10.0)
    return Customer(
        tz_hours=float(rng.choice(zones)),
        peak_local_hour=float(rng.uniform(11, 21)),
        diurnal_amplitude=float(rng.uniform(0.25, 0.7)),
        weekend_factor=float(rng.uniform(0.3, 0.5)),
    )


@dataclass(frozen=True)
class Shape:
    """A volume's usage in units on the grid, plus an online capacity grow if any."""

    values: FloatArray
    resize_at_hours: float | None = None


Builder = Callable[[np.random.Generator, Timeline, Customer], Shape]


def ar1_log_noise(
    rng: np.random.Generator, tl: Timeline, sigma: float, correlation_hours: float
) -> FloatArray:
    knots = np.arange(math.floor(tl.hours[0]), math.ceil(tl.hours[-1]) + 1, dtype=np.float64)
    phi = math.exp(-1.0 / correlation_hours)
    shocks = rng.normal(0.0, sigma * math.sqrt(1 - phi * phi), len(knots)).tolist()
    level = float(rng.normal(0.0, sigma))
    series: list[float] = []
    for shock in shocks:
        level = phi * level + shock
        series.append(level)
    noise: FloatArray = np.exp(np.interp(tl.hours, knots, np.asarray(series)) - sigma * sigma / 2)
    return noise


def local_hours(tl: Timeline, customer: Customer) -> FloatArray:
    """Hours since the customer's local Monday 00:00, modulo a week."""
    return np.mod(tl.hours + tl.at_hour_of_week + customer.tz_hours, HOURS_PER_WEEK)


def traffic(rng: np.random.Generator, tl: Timeline, customer: Customer) -> FloatArray:
    week_hours = local_hours(tl, customer)
    hour_of_day = np.mod(week_hours, 24.0)
    phase = 2 * np.pi * (hour_of_day - customer.peak_local_hour) / 24
    diurnal = 1.0 + customer.diurnal_amplitude * np.cos(phase)
    weekly = np.where(week_hours >= 120.0, customer.weekend_factor, 1.0)
    noise = ar1_log_noise(rng, tl, float(rng.uniform(0.08, 0.3)), float(rng.uniform(2, 12)))
    return diurnal * weekly * noise


def cumulative(rate: FloatArray) -> FloatArray:
    written: FloatArray = np.cumsum(rate) * STEP_HOURS
    return written


def value_at(tl: Timeline, series: FloatArray, times: FloatArray) -> FloatArray:
    index = np.rint((times - tl.hours[0]) * STEPS_PER_HOUR)
    picked: FloatArray = series[np.clip(index, 0, len(series) - 1).astype(np.intp)]
    return picked


def time_retained(
    rng: np.random.Generator,
    tl: Timeline,
    rate: FloatArray,
    retention: FloatArray | float | None = None,
) -> FloatArray:
    """Bytes kept by time retention: segments deleted whole once older than retention."""
    written = cumulative(rate)
    hours = float(rng.choice(RETENTION_HOURS)) if retention is None else retention
    segment = min(float(rng.choice(SEGMENT_ROLL_HOURS)), float(np.min(hours)) / 2)
    phases = rng.uniform(0.0, segment, int(rng.integers(1, 4)))
    kept = np.zeros_like(written)
    for phase in phases:
        cut = np.floor((tl.hours - hours - phase) / segment) * segment + phase
        kept += written - value_at(tl, written, np.maximum.accumulate(cut))
    return kept / len(phases)


def size_retained(written: FloatArray, limit: float, segment: float) -> FloatArray:
    over = written > limit + segment
    kept: FloatArray = np.where(over, limit + np.mod(written - limit, segment), written)
    return kept


def trend(tl: Timeline, per_day: float) -> FloatArray:
    multiplier: FloatArray = np.maximum(1.0 + per_day * (tl.hours - tl.hours[0]) / 24, 0.05)
    return multiplier


def ramp(tl: Timeline, start: float, hours: float) -> FloatArray:
    return np.clip((tl.hours - start) / hours, 0.0, 1.0)


def days_ago(rng: np.random.Generator, low: float, high: float) -> float:
    return -float(rng.uniform(low, high)) * 24


def growing_retention(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    rate = traffic(rng, tl, c) * trend(tl, float(rng.uniform(0.005, 0.04)))
    return Shape(time_retained(rng, tl, rate))


def infinite_retention(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    """Compacted or never-deleted topics: only grow; compaction trims a dirty tail."""
    written = cumulative(traffic(rng, tl, c) * trend(tl, float(rng.uniform(0.0, 0.02))))
    unique = float(rng.choice((1.0, rng.uniform(0.3, 0.9))))
    dirty_chunk = float(rng.uniform(2, 24))
    existing = float(rng.uniform(3, 90)) * 24 * unique
    kept = existing + unique * written + (1 - unique) * np.mod(written, dirty_chunk)
    side = time_retained(rng, tl, traffic(rng, tl, c)) * float(rng.uniform(0.0, 1.0))
    return Shape(kept + side)


def accelerating(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    """A launch or viral product: traffic climbs an S-curve to several times its level."""
    launch = days_ago(rng, -1, 6)
    width = float(rng.uniform(6, 72))
    lift = float(rng.uniform(1.5, 8))
    s_curve = 0.5 * (1 + np.tanh((tl.hours - launch) / (2 * width)))
    rate = traffic(rng, tl, c) * (1 + lift * s_curve)
    if rng.random() < 0.6:
        return Shape(time_retained(rng, tl, rate, float(rng.choice((72.0, 96.0, 168.0)))))
    return Shape(float(rng.uniform(3, 60)) * 24 + cumulative(rate))


def migration(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    """MirrorMaker copies a topic's backlog in at a throttled rate, then tails it live."""
    base = time_retained(rng, tl, traffic(rng, tl, c))
    start = days_ago(rng, 0.5, 8)
    catch_up_end = start + float(rng.uniform(1, 10)) * 24
    copying = (tl.hours >= start) & (tl.hours < catch_up_end)
    throttle_noise = ar1_log_noise(rng, tl, 0.08, 6.0)
    copied = cumulative(float(rng.uniform(3, 20)) * copying * throttle_noise)
    live = traffic(rng, tl, c) * float(rng.uniform(0.3, 1.5)) * (tl.hours >= catch_up_end)
    return Shape(base + copied + cumulative(live))


def local_calendar(tl: Timeline, customer: Customer) -> tuple[FloatArray, FloatArray]:
    """(day of month, days in that month) in the customer's local time."""
    minutes = np.rint((tl.hours + customer.tz_hours) * 60).astype(np.int64)
    stamps = (minutes + tl.at_epoch_minutes).astype("datetime64[m]")
    months = stamps.astype("datetime64[M]")
    month_start = months.astype("datetime64[D]")
    day = (stamps.astype("datetime64[D]") - month_start).astype(np.float64) + 1
    length = ((months + 1).astype("datetime64[D]") - month_start).astype(np.float64)
    return day, length


def month_end_batch(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    """Nightly ETL exports plus month-end closing runs into a kept-forever archive topic."""
    base = time_retained(rng, tl, traffic(rng, tl, c))
    day, length = local_calendar(tl, c)
    hour_of_day = np.mod(local_hours(tl, c), 24.0)
    month_end = (day >= length - 1) | (day == 1)
    nightly = (hour_of_day >= 1) & (hour_of_day < 3)
    batch = float(rng.uniform(2, 8)) * nightly + float(rng.uniform(4, 15)) * month_end
    noise = ar1_log_noise(rng, tl, 0.15, 4.0)
    archive = float(rng.uniform(5, 60)) * 24 + cumulative(batch * noise)
    return Shape(base + archive)


def _retention_change(
    rng: np.random.Generator, tl: Timeline, c: Customer, *, raised: bool
) -> Shape:
    change = days_ago(rng, 0.3, 6)
    if raised:
        before = float(rng.choice((24.0, 48.0, 72.0)))
        after = before * float(rng.choice((2.0, 3.0, 4.0)))
    else:
        before = float(rng.choice((120.0, 168.0)))
        after = float(rng.choice((24.0, 48.0, 72.0)))
    retention = np.where(tl.hours < change, before, after)
    rate = traffic(rng, tl, c) * trend(tl, float(rng.uniform(0.0, 0.03)))
    return Shape(time_retained(rng, tl, rate, retention))


def retention_raised(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    return _retention_change(rng, tl, c, raised=True)


def retention_lowered(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    return _retention_change(rng, tl, c, raised=False)


def disk_replaced(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    """A failed disk swapped for an empty one; replicas re-fetch over a few hours."""
    values = growing_retention(rng, tl, c).values
    swap = days_ago(rng, 0.2, 7)
    refill = ramp(tl, swap, float(rng.uniform(2, 12)))
    return Shape(np.where(tl.hours < swap, values, values * refill))


def capacity_resize(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    """An online volume grow (EBS modify + resize2fs) after a usage alert."""
    inner = growing_retention if rng.random() < 0.6 else infinite_retention
    return Shape(inner(rng, tl, c).values, resize_at_hours=days_ago(rng, 0.5, 7))


def _reassignment(rng: np.random.Generator, tl: Timeline, c: Customer, *, incoming: bool) -> Shape:
    staying_rate = traffic(rng, tl, c) * trend(tl, float(rng.uniform(0.0, 0.04)))
    staying = time_retained(rng, tl, staying_rate)
    moved = time_retained(rng, tl, traffic(rng, tl, c) * float(rng.uniform(0.3, 1.2)))
    done = days_ago(rng, 0.3, 7)
    copy_hours = float(rng.uniform(1, 8))
    if incoming:
        share = ramp(tl, done - copy_hours, copy_hours)
    else:  # the old replica is deleted once the new one has caught up
        share = (tl.hours < done).astype(np.float64)
    return Shape(staying + moved * share)


def reassign_in(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    return _reassignment(rng, tl, c, incoming=True)


def reassign_out(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    return _reassignment(rng, tl, c, incoming=False)


def retention_plateau(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    rate = traffic(rng, tl, c)
    if rng.random() < 0.6:
        return Shape(time_retained(rng, tl, rate))
    limit = float(rng.uniform(24, 120))
    return Shape(size_retained(cumulative(rate), limit, limit * float(rng.uniform(0.02, 0.15))))


def growth_stopped(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    """Growth that ended: a traffic ramp that levelled off, or a producer that went away."""
    stop = days_ago(rng, 1, 10)
    if rng.random() < 0.3:
        rate = traffic(rng, tl, c) * (tl.hours < stop)
        return Shape(float(rng.uniform(3, 60)) * 24 + cumulative(rate))
    grown = np.minimum(tl.hours, stop) - tl.hours[0]
    rate = traffic(rng, tl, c) * (1 + float(rng.uniform(0.01, 0.05)) * grown / 24)
    return Shape(time_retained(rng, tl, rate))


def shrinking(rng: np.random.Generator, tl: Timeline, c: Customer) -> Shape:
    """A customer winding a workload down (or moving it away): traffic decays."""
    since = days_ago(rng, 3, 30)
    half_life = float(rng.uniform(10, 60)) * 24
    decline = np.exp2(-np.maximum(tl.hours - since, 0.0) / half_life)
    return Shape(time_retained(rng, tl, traffic(rng, tl, c) * decline))


@dataclass(frozen=True)
class KindSpec:
    name: str
    weight: float
    fill_share: float  # share that fills within the horizon
    late_share: float  # share that fills after the horizon but within 2.5 horizons
    build: Builder
    often_near_full: bool = False  # never-filling ones often sit at 85-95 %


FULL = "full"
RETIRED = "retired"
KINDS: tuple[KindSpec, ...] = (
    KindSpec("retention_growth", 14, 0.8, 0.12, growing_retention),
    KindSpec("infinite_retention", 10, 0.8, 0.12, infinite_retention),
    KindSpec("accelerating", 6, 0.85, 0.05, accelerating),
    KindSpec("migration", 6, 0.7, 0.1, migration),
    KindSpec("month_end_batch", 5, 0.6, 0.2, month_end_batch),
    KindSpec("retention_raised", 5, 0.65, 0.1, retention_raised),
    KindSpec("retention_lowered", 4, 0.25, 0.15, retention_lowered),
    KindSpec("disk_replaced", 4, 0.6, 0.15, disk_replaced),
    KindSpec("capacity_resize", 4, 0.6, 0.2, capacity_resize),
    KindSpec("reassign_in", 4, 0.65, 0.1, reassign_in),
    KindSpec("reassign_out", 3, 0.3, 0.15, reassign_out),
    KindSpec("retention_plateau", 12, 0.0, 0.0, retention_plateau, often_near_full=True),
    KindSpec("growth_stopped", 6, 0.0, 0.0, growth_stopped, often_near_full=True),
    KindSpec("shrinking", 5, 0.0, 0.0, shrinking),
    KindSpec(FULL, 3, 0.0, 0.0, infinite_retention),
)
RETIRED_SPEC = KindSpec(RETIRED, 0, 0.0, 0.0, growing_retention)
KIND_BY_NAME = {spec.name: spec for spec in (*KINDS, RETIRED_SPEC)}


def draw_target(rng: np.random.Generator, spec: KindSpec, horizon_hours: float) -> float | None:
    """Hours after AT the volume should first reach capacity; None: never."""
    if spec.name == FULL:
        return -float(rng.uniform(2, 12))
    draw = rng.random()
    if draw < spec.fill_share:
        if rng.random() < URGENT_SHARE:
            return float(np.exp(rng.uniform(math.log(0.3), math.log(48.0))))
        return float(rng.uniform(48.0, horizon_hours))
    if draw < spec.fill_share + spec.late_share:
        return float(rng.uniform(horizon_hours, FILL_LIMIT_FACTOR * horizon_hours))
    return None


def capacity_threshold(
    rng: np.random.Generator, tl: Timeline, spec: KindSpec, shape: Shape, target: float | None
) -> float:
    """The shape value that becomes the capacity, so the volume fills about at ``target``."""
    values = shape.values
    history_peak = float(values[: tl.at_index + 1].max())
    if target is None:
        used_at_at = (
            rng.uniform(0.85, 0.95)
            if spec.often_near_full and rng.random() < 0.45
            else rng.uniform(0.2, 0.85)
        )
        threshold = max(
            float(values.max()) * rng.uniform(1.01, 1.2), values[tl.at_index] / used_at_at
        )
    elif target <= 0:
        threshold = float(values[: tl.index_of(target) + 1].max())
    else:
        reached = float(values[: tl.index_of(target) + 1].max())
        threshold = max(reached, history_peak * 1.002)
    if shape.resize_at_hours is not None:  # the old disk must have been large enough
        threshold = max(threshold, float(values[: tl.index_of(shape.resize_at_hours)].max()) / 0.7)
    return float(threshold)
