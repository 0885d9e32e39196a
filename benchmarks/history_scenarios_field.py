"""Field scenarios: Kafka log volumes as an operator sees them, with the instant each one fills.

``generate(seed, volumes, horizon_hours)`` simulates a cluster of brokers with 2-8 JBOD log
volumes each and returns the rows their volume-usage publishers wrote, the tombstones of
retired brokers and, per volume, the truth: when the *same* process, continued past ``AT``
with the same seed (traffic noise, weekly cycle, trends) and without measurement noise, first
makes ``consumed`` reach ``capacity``.

A volume holds topic groups (``history_scenarios_field_model``; one design per kind in
``history_scenarios_field_kinds``): delete-policy topics whose
closed segments retention drops by time and/or size (a sawtooth), infinite-retention and
compacted topics that only grow, static files, partitions moved in or out by reassignments.
Producer traffic has a daily cycle and weekends at 30-50 % (weekend days by region) in the
broker's time zone, AR(1) noise in log-rate, and per kind a trend. Each volume is designed in
nominal bytes, then scaled so that it fills about a drawn number of hours after ``AT``
(fill kinds), was full some hours before ``AT`` (``full``) or peaks over the whole simulated
window at a drawn fraction of its capacity (never-fill kinds); the truth is then read from
the scaled process itself, so it may differ from the drawn target.

Base kinds (weight; F fills within the horizon, L fills after it, N never, 0 already full):
steady .11 F, weekly .07 F, accelerating .07 F, new_tenant .06 F, sawtooth_rising .05 F,
replaced .05 (70 % F; disk swapped, re-replicated), resized .05 (75 % F; grown online),
reassigned_in .05 (60 % F; partitions moved in), full .04 0, slow .06 L, plateau .11 N,
size_capped .05 N, stopped .06 N, shrinking .07 N (retention cut, partitions moved out or a
draining tenant), compacted .04 N, idle .03 N, stray_files .03 N (a heap dump on the disk).

Broker flaws, appended to the kind: ``gap`` (publisher outages of 2 h to 2 days, one ending
in the last day before ``AT``), ``dup`` (snapshots published twice), ``skew`` (the broker's
clock is off, one ahead and, with 12+ brokers, one behind), ``retired`` (silent for more than
a day before ``AT``, drained first for some, a tombstone for some). Every broker also shares
one cluster-wide ingest outage (30-90 min) and a rolling restart (minutes each); neither is
labelled. Filesystems report 4 KiB blocks, ``free`` lacks the ext4 reserved blocks (<= 1 %).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import pandas as pd

from benchmarks.history_scenario_truth import ROW_COLUMNS, TOMBSTONE_COLUMNS, Truth
from benchmarks.history_scenarios_field_kinds import (
    KINDS,
    Context,
    Design,
    FillAt,
    FullSince,
)
from benchmarks.history_scenarios_field_model import (
    DAY,
    REGIONS,
    WARMUP_H,
    Component,
    FloatArray,
    make_clock,
    total_usage,
)

AT = datetime(2026, 9, 15, 9, 0, tzinfo=UTC)
"""The forecast instant, a Tuesday."""
BLOCK = 4096
DISK_SIZES = (480e9, 960e9, 1.92e12, 3.84e12, 7.68e12, 500 * 2**30, 2**40, 2**41, 2**42)
FLAW_ORDER = ("gap", "dup", "skew", "retired")


def _blocks(size: float) -> float:
    return float(math.floor(size / BLOCK) * BLOCK)


@dataclass(frozen=True)
class Volume:
    """One volume's true process: its scaled topic groups, its disk's events, its capacity."""

    components: list[Component]
    scale: float
    overhead: float
    capacity: float
    capacity_before: float
    resized_at: float = -math.inf
    swap: tuple[float, float, float, float] | None = None
    """(failed at, back at, bytes at once, re-replication bytes/hour) of a replaced disk."""
    drain: tuple[float, float] | None = None
    full_since: float = math.inf

    def capacity_at(self, hours: FloatArray) -> FloatArray:
        return np.where(hours < self.resized_at, self.capacity_before, self.capacity)

    def unbounded(self, hours: FloatArray) -> FloatArray:
        """Usage as if the disk had no end."""
        data = self.scale * total_usage(self.components, hours)
        if self.swap is not None:
            failed, back, initial, rate = self.swap
            copied = initial + rate * np.clip(hours - back, 0.0, None)
            data = np.where(hours < failed, data, np.minimum(data, copied))
        if self.drain is not None:
            data = data * np.interp(hours, self.drain, (1.0, 0.03))
        return self.overhead + data

    def consumed(self, hours: FloatArray) -> FloatArray:
        """True usage: a full log directory goes offline, so nothing changes on it any more."""
        capacity = self.capacity_at(hours)
        filling = np.minimum(self.unbounded(hours), capacity)
        return np.where(hours >= self.full_since, capacity, filling)

    def present(self, hours: FloatArray) -> npt.NDArray[np.bool_]:
        if self.swap is None:
            return np.ones_like(hours, dtype=bool)
        return (hours < self.swap[0]) | (hours >= self.swap[1])

    def first_full(self, grid: FloatArray) -> float:
        over = np.flatnonzero(self.unbounded(grid) >= self.capacity_at(grid))
        if len(over) == 0:
            return math.inf
        if over[0] == 0:
            return float(grid[0])
        fine = np.linspace(grid[over[0] - 1], grid[over[0]], 121)[1:]
        return float(fine[np.flatnonzero(self.unbounded(fine) >= self.capacity_at(fine))[0]])


def _calibrated(
    ctx: Context, design: Design, disk: float, drain: tuple[float, float] | None
) -> Volume:
    grid = ctx.clock.grid
    usage = total_usage(design.components, grid)
    capacity = disk if design.resize_factor is None else _blocks(disk * design.resize_factor)
    overhead = _blocks(disk * ctx.uniform(0.002, 0.012))
    target = design.target
    if isinstance(target, FillAt):
        level = usage[(grid >= 0) & (grid <= target.hours)].max()
        level = max(level, usage[grid < 0].max() * 1.005)
    elif isinstance(target, FullSince):
        level = usage[grid <= target.hours].max()
    else:
        level = usage.max() / target.fraction
    scale = (capacity - overhead) / level * (1.0 + 1e-9)  # reaches the level despite rounding
    volume = Volume(design.components, scale, overhead, capacity, disk)
    volume = replace(volume, drain=drain)
    if design.replaced_at is not None:
        back = design.replaced_at + ctx.uniform(0.3, 4.0)
        initial, copy_h = capacity * ctx.uniform(0.0, 0.015), ctx.uniform(2.0, 12.0)
        goal = volume.scale * float(total_usage(design.components, np.array([back + copy_h]))[0])
        swap = (design.replaced_at, back, initial, max(goal - initial, 0.0) / copy_h)
        volume = replace(volume, swap=swap)
    if design.resize_factor is not None:
        volume = _resize(ctx, volume)
    return replace(volume, full_since=volume.first_full(grid))


def _resize(ctx: Context, volume: Volume) -> Volume:
    """The disk was grown online some hours after usage crossed the operator's alert."""
    grid = ctx.clock.grid
    usage = volume.unbounded(grid)
    alert = ctx.uniform(0.8, 0.93)
    over = np.flatnonzero(usage >= alert * volume.capacity_before)
    if len(over) and -ctx.history_h + DAY <= grid[over[0]] <= -3.0:
        crossed = float(grid[over[0]])
        grown = min(crossed + ctx.uniform(0.25, 6.0), -1.0)
        if usage[grid <= grown].max() >= volume.capacity_before:
            grown = crossed
        return replace(volume, resized_at=grown)
    # the alert fired before the history began: the old disk's size follows from the usage
    grown = ctx.moment(-10 * DAY, -6.0)
    before = _blocks(usage[grid <= grown].max() / alert) + BLOCK
    capacity = max(volume.capacity, _blocks(before * 1.25))
    return replace(volume, capacity_before=before, capacity=capacity, resized_at=grown)


@dataclass
class Broker:
    broker_id: int
    kinds: list[str]
    history_h: float
    flaws: list[str] = field(default_factory=list)
    silences: list[tuple[float, float]] = field(default_factory=list)
    skew_h: float = 0.0
    retired_at: float | None = None
    tombstone: bool = False


def _broker_sizes(rng: np.random.Generator, volumes: int) -> list[int]:
    sizes, left = [], volumes
    while left:
        size = int(rng.integers(2, 9))
        if size >= left:
            size = left
        elif left - size == 1:
            size = size + 1 if size < 8 else size - 1
        sizes.append(size)
        left -= size
    return sizes


def _kind_list(rng: np.random.Generator, volumes: int) -> list[str]:
    """Each kind's share of the volumes by largest remainder, in random order."""
    names = list(KINDS)
    quotas = (
        np.array([KINDS[name][0] for name in names]) * volumes / sum(w for w, _ in KINDS.values())
    )
    counts = np.floor(quotas).astype(int)
    for index in np.argsort(-(quotas - counts), kind="stable")[: volumes - counts.sum()]:
        counts[index] += 1
    kinds = [name for name, count in zip(names, counts, strict=True) for _ in range(count)]
    return [kinds[i] for i in rng.permutation(len(kinds))]


def _plan(rng: np.random.Generator, volumes: int) -> list[Broker]:
    sizes = _broker_sizes(rng, volumes)
    kinds, count = _kind_list(rng, volumes), len(sizes)
    first_id = int(rng.choice([0, 1, 100, 1001]))
    ids = np.sort(rng.choice(3 * count + 3, count, replace=False)) + first_id
    cuts = np.cumsum([0, *sizes])
    brokers = [
        Broker(int(ids[b]), kinds[cuts[b] : cuts[b + 1]], float(rng.uniform(7, 21)) * DAY)
        for b in range(count)
    ]
    order = [brokers[i] for i in rng.permutation(count)]
    if count >= 4:
        calm = [b for b in order if "full" not in b.kinds] or order
        for number, broker in enumerate(calm[: max(1, round(0.08 * count))]):
            broker.retired_at = -float(rng.uniform(1.2 * DAY, min(6 * DAY, broker.history_h - 72)))
            broker.tombstone = number % 2 == 0
    active = [b for b in order if b.retired_at is None]
    for number, broker in enumerate(
        active[:2] if count >= 12 else active[:1] if count >= 3 else []
    ):
        broker.skew_h = (
            float(rng.uniform(0.25, 3.0)) if number == 0 else -float(rng.uniform(0.05, 1.5))
        )
    if count >= 2:
        gapped = rng.choice(len(active), max(1, round(0.25 * len(active))), replace=False)
        for number, index in enumerate(gapped):
            _add_gaps(rng, active[int(index)], recent=number == 0)
        for index in rng.choice(count, max(1, round(0.15 * count)), replace=False):
            brokers[int(index)].flaws.append("dup")
    outage = float(rng.uniform(-6 * DAY, -12.0))
    outage_end = outage + float(rng.uniform(0.5, 1.5))
    restarts = float(rng.uniform(-5 * DAY, -DAY))
    for number, broker in enumerate(brokers):
        restart = restarts + number * 10 / 60
        broker.silences += [(outage, outage_end), (restart, restart + rng.uniform(2, 8) / 60)]
        broker.flaws += ["skew"] * (broker.skew_h != 0.0) + ["retired"] * (
            broker.retired_at is not None
        )
        broker.flaws.sort(key=FLAW_ORDER.index)
    return brokers


def _add_gaps(rng: np.random.Generator, broker: Broker, recent: bool) -> None:
    earliest = -broker.history_h + 12.0
    if recent:
        end = -float(rng.uniform(0.5, 24.0))
        broker.silences.append(
            (max(end - math.exp(rng.uniform(math.log(2), math.log(30))), earliest), end)
        )
    for _ in range(int(rng.integers(0 if recent else 1, 3))):
        length = math.exp(float(rng.uniform(math.log(2.0), math.log(48.0))))
        start = float(rng.uniform(earliest, -length - 1.0))
        broker.silences.append((start, start + length))
    broker.flaws.append("gap")


def _volume_name(family: int, index: int) -> str:
    if family == 0:
        return f"/dev/nvme{index + 1}n1"
    return ("/dev/sd", "/dev/xvd")[family - 1] + "bcdefghij"[index]


def _simulate(
    broker: Broker, rng: np.random.Generator, horizon_h: float
) -> tuple[dict[str, list[np.ndarray]], list[Truth], int | None]:
    """One broker's rows (as column pieces), its volumes' truths and its tombstone (ms)."""
    region = REGIONS[int(rng.integers(len(REGIONS)))]
    clock = make_clock(AT, -broker.history_h - WARMUP_H, 2.5 * horizon_h, region)
    interval_ms, end_ms = rng.uniform(60.0, 300.0) * 1000.0, (broker.retired_at or 0.0) * 3.6e6
    start_ms = -broker.history_h * 3.6e6
    first_ms = end_ms - rng.uniform(0.0, interval_ms)
    steps = np.arange(int((first_ms - start_ms) // interval_ms), -1, -1)
    true_ms = np.round(first_ms - steps * interval_ms + rng.normal(0.0, 400.0, len(steps)))
    true_ms = true_ms[(true_ms >= start_ms) & (true_ms <= end_ms)].astype(np.int64)
    hours = true_ms / 3.6e6
    quiet = np.zeros(len(hours), dtype=bool)
    for start, end in broker.silences:
        quiet |= (hours >= start) & (hours < end)
    true_ms, hours = true_ms[~quiet], hours[~quiet]
    twice = np.sort(rng.choice(len(hours), max(1, int(len(hours) * rng.uniform(0.005, 0.04)))))
    twice = twice if "dup" in broker.flaws else np.zeros(0, dtype=np.int64)
    disk = _blocks(float(rng.choice(DISK_SIZES)) * rng.uniform(0.975, 0.99))
    reserved_fraction = float(rng.choice([0.0, 0.0, 0.002, 0.005, 0.01]))
    family = int(rng.integers(3))
    drain = None
    if broker.retired_at is not None and rng.random() < 0.5:
        drain = (broker.retired_at - float(rng.uniform(2.0, 24.0)), broker.retired_at)
    drift_ms_per_h = rng.uniform(0.0, 30_000.0) / DAY if broker.skew_h else 0.0
    reported_ms = true_ms + np.round(broker.skew_h * 3.6e6 + drift_ms_per_h * hours).astype(
        np.int64
    )
    columns: dict[str, list[np.ndarray]] = {name: [] for name in ("ms", "volume", *ROW_COLUMNS[4:])}
    truths = []
    for index, kind in enumerate(broker.kinds):
        ctx = Context(rng, clock, broker.history_h, horizon_h, tuple(broker.silences))
        volume = _calibrated(ctx, KINDS[kind][1](ctx), disk, drain)
        true_bytes, capacity = volume.consumed(hours), volume.capacity_at(hours)
        noisy = true_bytes + rng.normal(0.0, disk * rng.uniform(2e-6, 3e-5), len(hours))
        consumed = np.clip(np.floor(noisy / BLOCK) * BLOCK, 0.0, capacity - BLOCK)
        consumed = np.where(true_bytes >= capacity, capacity, consumed)
        reserved = np.floor(capacity * reserved_fraction / BLOCK) * BLOCK
        free = np.maximum(capacity - consumed - reserved, 0.0)
        present = volume.present(hours)
        rows = np.concatenate((np.flatnonzero(present), twice[present[twice]]))
        for name, values in (("capacity", capacity), ("consumed", consumed), ("free", free)):
            columns[name].append(values[rows].astype(np.int64))
        columns["ms"].append(reported_ms[rows])
        columns["volume"].append(np.full(len(rows), index, dtype=np.int64))
        full_since = volume.full_since
        fill = None if full_since > 2.5 * horizon_h else max(full_since, 0.0)
        name = _volume_name(family, index)
        label = "+".join([kind, *broker.flaws])
        retired = broker.retired_at is not None
        truths.append(Truth(broker.broker_id, name, label, None if retired else fill, retired))
    tombstone = None
    if broker.tombstone:
        tombstone = int(true_ms[-1] + rng.uniform(60_000.0, 20 * 3.6e6))
    return columns, truths, tombstone


def generate(
    seed: int, volumes: int, horizon_hours: float
) -> tuple[pd.DataFrame, pd.DataFrame, list[Truth]]:
    """(rows, tombstones, truths); deterministic in seed; one Truth per (broker, volume) in rows."""
    if volumes < 2:
        raise ValueError("a broker has at least two log volumes")
    brokers = _plan(np.random.default_rng(seed), volumes)
    streams = np.random.SeedSequence([seed, volumes]).spawn(len(brokers))
    at_ns = pd.Timestamp(AT).value
    pieces: dict[str, list[np.ndarray]] = {name: [] for name in ROW_COLUMNS}
    truths: list[Truth] = []
    tombstones: list[tuple[int, int]] = []
    for broker, stream in zip(brokers, streams, strict=True):
        columns, broker_truths, tombstone = _simulate(
            broker, np.random.default_rng(stream), horizon_hours
        )
        truths += broker_truths
        if tombstone is not None:
            tombstones.append((broker.broker_id, at_ns + tombstone * 1_000_000))
        for name in ("capacity", "consumed", "free"):
            pieces[name] += columns[name]
        names = np.array([t.volume_name for t in broker_truths], dtype=object)
        paths = np.array([f"/var/lib/kafka/data-{i}" for i in range(len(names))], dtype=object)
        for volume in columns["volume"]:
            pieces["brokerId"].append(np.full(len(volume), broker.broker_id, dtype=np.int64))
            pieces["volumeName"].append(names[volume])
            pieces["path"].append(paths[volume])
        pieces["snapshotAt"] += [at_ns + ms * 1_000_000 for ms in columns["ms"]]
    data = {name: np.concatenate(parts) for name, parts in pieces.items()}
    order = np.lexsort((data["volumeName"].astype(str), data["brokerId"], data["snapshotAt"]))
    rows = pd.DataFrame({name: values[order] for name, values in data.items()})
    rows["snapshotAt"] = pd.to_datetime(rows["snapshotAt"], utc=True)
    stones = pd.DataFrame(tombstones, columns=TOMBSTONE_COLUMNS, dtype=np.int64)
    stones["snapshotAt"] = pd.to_datetime(stones["snapshotAt"], utc=True)
    return rows, stones, truths
