"""The disk-usage process behind one Kafka log volume, for the SRE scenario generator.

Time is in hours relative to the forecast instant AT (negative = history) on a fixed
10-minute grid that starts with a warm-up long enough for every retention window to be
full at the start of the history and ends 2.5 horizons after AT.

A volume holds a mix of topic groups, all fed by the same producer traffic (UTC-offset
daily cycle, weekends at 30-50 %, AR(1) noise in log-rate shared by the broker plus a
volume-specific part):

* a hot group: size-rolled segments deleted whole once their newest record is older
  than the time retention, or once the partition exceeds its retention.bytes;
* a cold group: low-traffic topics rolling by time, a weekly sawtooth;
* a compacted group: the cleaner keeps a fraction of what was written (dirty-ratio
  sawtooth), so it only grows while producers write;
* static bytes of topics nobody writes to any more.

Each kind changes the traffic (growth, acceleration, decline, a stop, a backfill burst) or
applies an event (retention change, partition reassignment in or out, disk replacement,
online resize). The unit-free shape is scaled to bytes so that its running maximum reaches
the capacity at the aimed-at hour (or peaks at a fraction of it); the truth is read off
the scaled path itself (first crossing), never off the aim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

STEP_HOURS = 1.0 / 6.0
WARMUP_HOURS = 720.0
HISTORY_HOURS_MAX = 20 * 24.0
AT_HOUR_OF_WEEK = 4 * 24 + 16.0  # AT is a Friday, 16:00 UTC; Monday 00:00 = 0
URGENT_HOURS = 48.0
BLOCK = 4096
GIB = 1 << 30

BOUNDED_KINDS: tuple[str, ...] = ("plateau", "plateau_high", "reassign_out", "retention_lowered")
BOUNDED_KINDS += ("growth_stopped", "shrinking")
GROWING_KINDS: tuple[str, ...] = (
    "compacted",
    "accelerating",
    "burst",
    "reassign_in",
    "retention_raised",
)
GROWING_KINDS += ("disk_replaced", "resized")


def make_grid(future_hours: float) -> FloatArray:
    """The shared simulation grid, from warm-up start to `future_hours` after AT."""
    start = -(HISTORY_HOURS_MAX + WARMUP_HOURS)
    steps = int(np.ceil((future_hours + 1.0 - start) / STEP_HOURS)) + 1
    return start + STEP_HOURS * np.arange(steps, dtype=np.float64)


def ar1_log_noise(rng: np.random.Generator, hours: FloatArray, sigma: float) -> FloatArray:
    """Hourly AR(1) (phi 0.9-0.97) with stationary std `sigma`, interpolated onto the grid."""
    phi = float(rng.uniform(0.9, 0.97))
    hourly_points = np.arange(hours[0], hours[-1] + 2.0)
    shocks = rng.normal(0.0, sigma * np.sqrt(1.0 - phi * phi), hourly_points.size + 200)
    kernel = phi ** np.arange(200, dtype=np.float64)
    series = np.convolve(shocks, kernel)[200 : 200 + hourly_points.size]
    return np.interp(hours, hourly_points, series)


@dataclass(frozen=True)
class TrafficProfile:
    """Producer traffic seasonality of one cluster, in its users' local time."""

    utc_offset_hours: float
    daily_amplitude: float
    peak_local_hour: float
    weekend_factor: float

    def seasonal(self, hours: FloatArray) -> FloatArray:
        local = hours + AT_HOUR_OF_WEEK + self.utc_offset_hours
        hour_of_day = np.mod(local, 24.0)
        day_of_week = np.mod(np.floor(local / 24.0), 7.0)
        daily = 1.0 + self.daily_amplitude * np.cos(
            2.0 * np.pi * (hour_of_day - self.peak_local_hour) / 24.0
        )
        weekly = np.where(day_of_week >= 5.0, self.weekend_factor, 1.0)
        result: FloatArray = daily * weekly
        return result


@dataclass
class ShapeContext:
    """What a kind builder gets: the grid, the base traffic and the outcome to aim at."""

    rng: np.random.Generator
    hours: FloatArray
    rate: FloatArray  # base producer rate, mean about 1 unit per hour
    history_start: float  # first history hour of the broker (negative)
    fill_target: float | None  # hours after AT the volume should fill at, None: never
    resize_hour: float | None = None


def _ramp(hours: FloatArray, start: float, duration: float) -> FloatArray:
    return np.clip((hours - start) / max(duration, 1e-6), 0.0, 1.0)


def _cumulative(rate: FloatArray) -> FloatArray:
    return np.cumsum(rate) * STEP_HOURS


def retained_by_time(
    cumulative: FloatArray, hours: FloatArray, cutoff: FloatArray, segment_bytes: float
) -> FloatArray:
    """Bytes kept when size-rolled segments whose newest record is before `cutoff` go."""
    bytes_at_cutoff = np.interp(cutoff, hours, cumulative)
    first_kept = np.floor(bytes_at_cutoff / segment_bytes) * segment_bytes
    return np.maximum(cumulative - first_kept, 0.0)


def retained_by_size(cumulative: FloatArray, limit: float, segment_bytes: float) -> FloatArray:
    """Bytes kept under retention.bytes: whole segments go once the log exceeds `limit`."""
    over = np.maximum(cumulative - limit, 0.0)
    first_kept = np.floor(over / segment_bytes) * segment_bytes
    return cumulative - first_kept


def time_rolled(
    hours: FloatArray, cumulative: FloatArray, retention: float, phase: float
) -> FloatArray:
    """Low-traffic topics rolling a segment every `retention` hours: a tall sawtooth."""
    cutoff = hours - retention
    first_kept_start = np.floor((cutoff - phase) / retention) * retention + phase
    return cumulative - np.interp(first_kept_start, hours, cumulative)


def compacted(cumulative: FloatArray, keep: float, cycle: float) -> FloatArray:
    """Compacted topics: a cleaner pass every `cycle` written units keeps `keep` of them."""
    cleaned = np.floor(cumulative / cycle) * cycle
    return keep * cleaned + (cumulative - cleaned)


def retention_cutoff(hours: FloatArray, before: float, after: float, change: float) -> FloatArray:
    """Deletion cutoff when retention goes from `before` to `after` hours at `change`."""
    return np.where(hours < change, hours - before, np.maximum(change - before, hours - after))


def standard_mix(
    ctx: ShapeContext,
    rate: FloatArray,
    compacted_weight: float,
    size_retention: bool = False,
    retention: float | None = None,
) -> FloatArray:
    """Hot + cold + compacted + static bytes, fed by `rate`."""
    rng, hours = ctx.rng, ctx.hours
    if retention is None:
        retention = float(rng.choice([24.0, 48.0, 72.0, 168.0]))
    cumulative = _cumulative(rate)
    segment = float(rng.uniform(0.3, 3.0))
    if size_retention:
        hot = retained_by_size(cumulative, retention, segment)
    else:
        hot = retained_by_time(cumulative, hours, hours - retention, segment)
    cold_rate = rate * rng.uniform(0.02, 0.15)
    cold = time_rolled(hours, _cumulative(cold_rate), 168.0, float(rng.uniform(0.0, 168.0)))
    keep = float(rng.uniform(0.3, 0.7))
    kept = compacted(_cumulative(rate * compacted_weight), keep, float(rng.uniform(5.0, 40.0)))
    static = float(rng.uniform(0.0, 1.0)) * retention
    result: FloatArray = hot + cold + kept + static
    return result


def _growth(ctx: ShapeContext, per_day: float) -> FloatArray:
    return ctx.rate * np.exp(per_day * ctx.hours / 24.0)


def _hot_group(ctx: ShapeContext, rate: FloatArray, cutoff: FloatArray) -> FloatArray:
    return retained_by_time(_cumulative(rate), ctx.hours, cutoff, float(ctx.rng.uniform(0.3, 3.0)))


def _event_start(ctx: ShapeContext, urgent_window: bool) -> tuple[float, bool]:
    """When a history event happens; ongoing at AT when the volume is to fill urgently."""
    target = ctx.fill_target
    if urgent_window and target is not None and 0.0 < target <= URGENT_HOURS:
        return -float(ctx.rng.uniform(0.3, 6.0)), True
    return float(ctx.rng.uniform(ctx.history_start + 12.0, -6.0)), False


def build_plateau(ctx: ShapeContext) -> FloatArray:
    return standard_mix(ctx, ctx.rate, 0.0, size_retention=bool(ctx.rng.random() < 0.3))


def build_plateau_high(ctx: ShapeContext) -> FloatArray:
    """Run close to full on purpose: mostly bounded by retention.bytes."""
    by_size = bool(ctx.rng.random() < 0.5)
    return standard_mix(ctx, ctx.rate, 0.0, size_retention=by_size, retention=168.0)


def build_compacted(ctx: ShapeContext) -> FloatArray:
    rate = _growth(ctx, float(ctx.rng.uniform(0.0, 0.01)))
    return standard_mix(ctx, rate, float(ctx.rng.uniform(0.3, 1.0)))


def build_accelerating(ctx: ShapeContext) -> FloatArray:
    launch = float(ctx.rng.uniform(ctx.history_start, -24.0))
    per_hour = np.log(2.0) / (24.0 * float(ctx.rng.uniform(6.0, 30.0)))
    trend = np.minimum(np.exp(per_hour * np.maximum(ctx.hours - launch, 0.0)), 40.0)
    return standard_mix(ctx, ctx.rate * trend, float(ctx.rng.uniform(0.1, 0.4)))


def build_burst(ctx: ShapeContext) -> FloatArray:
    """A backfill or replay writing hours of data fast into a retention topic."""
    start, ongoing = _event_start(ctx, urgent_window=True)
    if ongoing and ctx.fill_target is not None:
        duration = -start + ctx.fill_target + float(ctx.rng.uniform(0.5, 6.0))
    else:
        duration = float(ctx.rng.uniform(1.0, 12.0))
    in_burst = (ctx.hours >= start) & (ctx.hours < start + duration)
    extra = np.where(in_burst, float(ctx.rng.uniform(4.0, 25.0)), 0.0)
    retention = float(ctx.rng.choice([72.0, 168.0, 336.0]))
    backfill = _hot_group(ctx, extra, ctx.hours - retention)
    return standard_mix(ctx, _growth(ctx, 0.003), float(ctx.rng.uniform(0.2, 0.6))) + backfill


def build_reassign_in(ctx: ShapeContext) -> FloatArray:
    """Partitions moved onto the volume: their logs re-replicate over hours, then grow."""
    start, ongoing = _event_start(ctx, urgent_window=True)
    if ongoing and ctx.fill_target is not None:
        duration = -start + ctx.fill_target + float(ctx.rng.uniform(1.0, 12.0))
    else:
        duration = float(ctx.rng.uniform(1.0, 12.0))
    moved_rate = ctx.rate * float(ctx.rng.uniform(0.3, 1.5))
    moved = _hot_group(ctx, moved_rate, ctx.hours - float(ctx.rng.choice([72.0, 168.0])))
    base = standard_mix(ctx, ctx.rate, float(ctx.rng.uniform(0.2, 0.6)))
    result: FloatArray = base + moved * _ramp(ctx.hours, start, duration)
    return result


def build_retention_raised(ctx: ShapeContext) -> FloatArray:
    before = float(ctx.rng.choice([24.0, 48.0, 72.0, 168.0]))
    after = before * float(ctx.rng.choice([2.0, 3.0, 4.0]))
    change, ongoing = _event_start(ctx, urgent_window=True)
    if ongoing:
        change = -float(ctx.rng.uniform(1.0, 0.5 * (after - before)))
    hot = _hot_group(ctx, ctx.rate, retention_cutoff(ctx.hours, before, after, change))
    return hot + standard_mix(ctx, ctx.rate * 0.2, float(ctx.rng.uniform(0.5, 2.0)))


def build_retention_lowered(ctx: ShapeContext) -> FloatArray:
    before = float(ctx.rng.choice([72.0, 168.0, 336.0]))
    after = before * float(ctx.rng.uniform(0.2, 0.6))
    change = float(ctx.rng.uniform(ctx.history_start + 12.0, -6.0))
    hot = _hot_group(ctx, ctx.rate, retention_cutoff(ctx.hours, before, after, change))
    return hot + standard_mix(ctx, ctx.rate * 0.2, 0.0)


def build_disk_replaced(ctx: ShapeContext) -> FloatArray:
    """A failed disk swapped: ~0-3 % used, replicas refetched over hours, growth resumes."""
    change = float(ctx.rng.uniform(ctx.history_start + 24.0, -6.0))
    left = float(ctx.rng.uniform(0.0, 0.03))
    refill = left + (1.0 - left) * _ramp(ctx.hours, change, float(ctx.rng.uniform(2.0, 16.0)))
    factor = np.where(ctx.hours < change, 1.0, refill)
    mix = standard_mix(ctx, _growth(ctx, 0.004), float(ctx.rng.uniform(0.2, 0.6)))
    result: FloatArray = mix * factor
    return result


def build_resized(ctx: ShapeContext) -> FloatArray:
    ctx.resize_hour = float(ctx.rng.uniform(ctx.history_start + 24.0, -12.0))
    return standard_mix(ctx, _growth(ctx, 0.005), float(ctx.rng.uniform(0.3, 0.8)))


def build_reassign_out(ctx: ShapeContext) -> FloatArray:
    change = float(ctx.rng.uniform(ctx.history_start + 12.0, -6.0))
    gone = 1.0 - _ramp(ctx.hours, change, float(ctx.rng.uniform(0.05, 0.5)))
    moved = _hot_group(ctx, ctx.rate * float(ctx.rng.uniform(0.3, 1.5)), ctx.hours - 168.0)
    result: FloatArray = standard_mix(ctx, ctx.rate, 0.0) + moved * gone
    return result


def build_growth_stopped(ctx: ShapeContext) -> FloatArray:
    stop = float(ctx.rng.uniform(ctx.history_start + 24.0, -24.0))
    rate = ctx.rate * (1.0 - 0.97 * _ramp(ctx.hours, stop, 0.5))
    return standard_mix(ctx, rate, float(ctx.rng.uniform(0.5, 1.5)))


def build_shrinking(ctx: ShapeContext) -> FloatArray:
    since = ctx.history_start - float(ctx.rng.uniform(0.0, 240.0))
    per_hour = np.log(2.0) / (24.0 * float(ctx.rng.uniform(10.0, 40.0)))
    rate = ctx.rate * np.exp(-per_hour * np.maximum(ctx.hours - since, 0.0))
    return standard_mix(ctx, rate, 0.0)


BUILDERS: dict[str, Callable[[ShapeContext], FloatArray]] = {
    "plateau": build_plateau,
    "plateau_high": build_plateau_high,
    "compacted": build_compacted,
    "accelerating": build_accelerating,
    "burst": build_burst,
    "reassign_in": build_reassign_in,
    "retention_raised": build_retention_raised,
    "retention_lowered": build_retention_lowered,
    "disk_replaced": build_disk_replaced,
    "resized": build_resized,
    "reassign_out": build_reassign_out,
    "growth_stopped": build_growth_stopped,
    "shrinking": build_shrinking,
    "full": build_compacted,
    "retired": build_plateau,
}


@dataclass(frozen=True)
class VolumePath:
    """A volume's noise-free bytes on the grid and its capacity over time."""

    values: FloatArray
    capacity: int
    capacity_before_resize: int
    resize_hour: float | None

    def capacity_at(self, hours: FloatArray) -> NDArray[np.int64]:
        if self.resize_hour is None:
            return np.full(hours.shape, self.capacity, dtype=np.int64)
        return np.where(
            hours < self.resize_hour, self.capacity_before_resize, self.capacity
        ).astype(np.int64)


def scale_for(
    shape: FloatArray, hours: FloatArray, capacity: int, target: float | None, peak: float
) -> float:
    """Bytes per shape unit so the path first reaches `capacity` near `target` hours.

    A target the path cannot reach without having been within 1 % of it in the history
    (a weekend dip, a retention sawtooth) moves to the first time the path is 1 % above
    its history peak; without one the volume does not fill.
    """
    if target is not None and target < 0.0:
        return capacity / float(shape[hours <= target].max()) * (1.0 + 1e-9)
    if target is not None:
        history_peak = float(shape[hours <= 0.0].max())
        later = np.flatnonzero((hours >= target) & (shape >= history_peak * 1.01))
        reach = float(shape[hours <= target].max())
        if reach < history_peak * 1.01 and later.size:
            reach = float(shape[later[0]])
        if reach >= history_peak * 1.01:
            return capacity / reach * (1.0 + 1e-9)
    return peak * capacity / float(shape.max())


def first_fill_hour(hours: FloatArray, path: VolumePath) -> float | None:
    """Hour (relative to AT) the noise-free path first reaches its capacity, if ever."""
    capacity = path.capacity_at(hours)
    reached = np.flatnonzero(path.values >= capacity)
    if reached.size == 0:
        return None
    index = int(reached[0])
    if index == 0:
        return float(hours[0])
    low, high = path.values[index - 1], path.values[index]
    fraction = (capacity[index] - low) / max(high - low, 1e-9)
    return float(hours[index - 1] + np.clip(fraction, 0.0, 1.0) * STEP_HOURS)


def resized_path(values: FloatArray, ctx: ShapeContext, capacity: int) -> VolumePath:
    """The old, smaller capacity: grown online when the volume was 85-95 % used.

    The resize happens at the planned hour, or else at the last history hour the volume
    was below 80 % of its new size (so the old size is at most 94 % of the new one).
    """
    hours, planned = ctx.hours, float(ctx.resize_hour or 0.0)
    running_peak = np.maximum.accumulate(values)
    valid = (hours >= ctx.history_start + 12.0) & (hours <= -6.0)
    valid &= running_peak <= 0.8 * capacity
    index = int(np.searchsorted(hours, planned))
    if not valid[index]:
        candidates = np.flatnonzero(valid)
        if candidates.size == 0:
            return VolumePath(values, capacity, capacity, None)
        index = int(candidates[-1])
    used = float(running_peak[index]) / float(ctx.rng.uniform(0.85, 0.95))
    before = int(np.ceil(used / GIB)) * GIB
    return VolumePath(values, capacity, before, float(hours[index]))


def simulate(kind: str, ctx: ShapeContext, capacity: int) -> VolumePath:
    """Build the kind's shape and scale it into bytes for a disk of `capacity` bytes."""
    shape = BUILDERS[kind](ctx)
    if kind == "plateau_high":
        peak = float(ctx.rng.uniform(0.88, 0.96))
    else:
        peak = float(ctx.rng.uniform(0.3, 0.8))
    values = shape * scale_for(shape, ctx.hours, capacity, ctx.fill_target, peak)
    if ctx.resize_hour is not None:
        return resized_path(values, ctx, capacity)
    return VolumePath(values, capacity, capacity, None)
