"""Blind capacity-forecast scenarios: a managed-Kafka provider's fleet of log volumes.

The fleet is a set of customer clusters (3-6 brokers each, the same disk size and number of
JBOD log volumes per broker, one customer time zone and weekly rhythm per cluster).  Each
volume follows one *kind* of process from ``history_scenarios_cloud_model`` (retention
sawtooth with growth, infinite/compacted growth, launches, migrations, month-end batches,
retention changes, disk swaps, online resizes, reassignments, plateaus, stopped growth,
shrinking, already full); a few brokers are retired.  The model is simulated on a 5-minute
grid up to 2.5 horizons past AT and scaled so that about half of the live, not-yet-full
volumes reach capacity within the horizon (a fifth of those within 48 h); the truth is the
first crossing of that same noise-free path, so it continues the process, weekly cycle and
all, rather than any fitted line.

Brokers publish a snapshot of all their log volumes every 30-300 s (jittered).  Rows add
the data flaws a real pipeline sees, named in the truth's kind after the base kind:
``gap`` (publisher down for 2-48 h; one gap ends within the last day), ``dup`` (whole
snapshots delivered twice), ``skew`` (broker clock off by 10 min to 4 h, at least one ahead
of AT) and, for retired brokers, ``tombstone`` (their key was deleted).  Byte values carry
a small measurement noise, are whole 4 KiB blocks, and ``free`` excludes the reserved blocks
(up to 1 % of capacity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from benchmarks.history_scenario_truth import ROW_COLUMNS, Truth
from benchmarks.history_scenarios_cloud_model import (
    FULL,
    KIND_BY_NAME,
    KINDS,
    RETIRED,
    STEP_HOURS,
    Customer,
    FloatArray,
    Timeline,
    capacity_threshold,
    draw_customer,
    draw_target,
    make_timeline,
)

AT = datetime(2026, 2, 2, 3, 0, tzinfo=UTC)  # a Monday, 03:00 UTC
GIB = 1 << 30
BLOCK = 4096
DISK_SIZES_GIB = (100, 250, 500, 1000, 1000, 1500, 2000, 4000, 8000)
VOLUMES_PER_BROKER = (1, 2, 3, 4, 5, 6)
VOLUMES_PER_BROKER_P = (0.12, 0.2, 0.18, 0.25, 0.1, 0.15)
MEASUREMENT_NOISE = 2e-6  # of capacity: writes landing while the filesystem is sampled
RETIRED_SHARE = 0.06
GAP_SHARE, DUP_SHARE, SKEW_SHARE = 0.1, 0.1, 0.05


@dataclass
class _Broker:
    broker_id: int
    customer: Customer
    capacity_gib: int
    volume_count: int
    history_hours: float
    interval_seconds: float
    reserved_fraction: float
    silent_hours: float | None = None  # retired: its last snapshot, hours before AT
    tombstone_hours: float | None = None  # hours before AT its key was deleted
    skew_hours: float = 0.0
    gaps: list[tuple[float, float]] = field(default_factory=list)
    dup_share: float = 0.0
    flaws: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Volume:
    name: str
    mount: str
    kind: str
    path: FloatArray  # bytes on the grid, noise-free
    capacity: int
    capacity_before_resize: int
    resize_at_hours: float | None
    fill_hours: float | None


def _layout(rng: np.random.Generator, volumes: int) -> list[_Broker]:
    brokers: list[_Broker] = []
    remaining, cluster = volumes, 0
    while remaining > 0:
        cluster += 1
        customer = draw_customer(rng)
        per_broker = int(rng.choice(VOLUMES_PER_BROKER, p=VOLUMES_PER_BROKER_P))
        capacity_gib = int(rng.choice(DISK_SIZES_GIB))
        reserved = float(rng.choice((0.0, 0.001, 0.005, 0.01)))
        for index in range(int(rng.integers(3, 7))):
            if remaining == 0:
                break
            count = min(per_broker, remaining)
            remaining -= count
            broker = _Broker(
                broker_id=cluster * 100 + index + 1,
                customer=customer,
                capacity_gib=capacity_gib,
                volume_count=count,
                history_hours=float(rng.uniform(6, 14)) * 24,
                interval_seconds=float(np.exp(rng.uniform(math.log(30), math.log(300)))),
                reserved_fraction=reserved,
            )
            brokers.append(broker)
    return brokers


def _gap(rng: np.random.Generator, broker: _Broker, *, recent: bool) -> tuple[float, float]:
    length = float(rng.uniform(2, 48))
    if recent:
        end = -float(rng.uniform(1, 20))
        return max(end - length, -broker.history_hours + 6), end
    start = float(rng.uniform(-broker.history_hours + 6, -length - 1))
    return start, start + length


def _assign_flaws(rng: np.random.Generator, brokers: list[_Broker]) -> None:
    order = [int(index) for index in rng.permutation(len(brokers))]
    retired_count = max(1, round(RETIRED_SHARE * len(brokers))) if len(brokers) >= 4 else 0
    for position, index in enumerate(order[:retired_count]):
        broker = brokers[index]
        broker.silent_hours = float(rng.uniform(26, 120))
        if position == 0 or rng.random() < 0.5:
            broker.tombstone_hours = float(rng.uniform(1, broker.silent_hours - 1))
            broker.flaws.append("tombstone")
    for position, index in enumerate(order[retired_count:]):
        broker = brokers[index]
        if position == 0 or rng.random() < GAP_SHARE:
            broker.gaps.append(_gap(rng, broker, recent=position == 0))
            extra_start, extra_end = _gap(rng, broker, recent=False)
            first_start, first_end = broker.gaps[0]
            if rng.random() < 0.3 and (extra_end < first_start - 1 or extra_start > first_end + 1):
                broker.gaps.append((extra_start, extra_end))
            broker.flaws.append("gap")
        if position == 1 or rng.random() < DUP_SHARE:
            broker.dup_share = float(rng.uniform(0.005, 0.03))
            broker.flaws.append("dup")
        if position == 2 or rng.random() < SKEW_SHARE:
            ahead = position == 2 or rng.random() < 0.5
            magnitude = float(np.exp(rng.uniform(math.log(1 / 6), math.log(4.0))))
            broker.skew_hours = magnitude if ahead else -magnitude
            broker.flaws.append("skew")


def _assign_kinds(rng: np.random.Generator, brokers: list[_Broker]) -> list[list[str]]:
    live_slots = sum(b.volume_count for b in brokers if b.silent_hours is None)
    names = [spec.name for spec in KINDS]
    weights = np.array([spec.weight for spec in KINDS])
    drawn = rng.choice(names, size=max(live_slots - len(names), 0), p=weights / weights.sum())
    chosen = [*names[:live_slots], *(str(name) for name in drawn)]
    rng.shuffle(chosen)
    kinds: list[list[str]] = []
    for broker in brokers:
        if broker.silent_hours is not None:
            kinds.append([RETIRED] * broker.volume_count)
        else:
            kinds.append([chosen.pop() for _ in range(broker.volume_count)])
    return kinds


def first_fill_hours(tl: Timeline, path: FloatArray, capacity: int) -> float | None:
    """Hours after AT at which the path first reaches capacity (linear between grid steps)."""
    future = path[tl.at_index :]
    hits = np.flatnonzero(future >= capacity)
    if len(hits) == 0:
        return None
    step = int(hits[0])
    if step == 0:
        return 0.0
    before, after = float(future[step - 1]), float(future[step])
    return (step - 1 + (capacity - before) / (after - before)) * STEP_HOURS


def _simulate_volume(
    rng: np.random.Generator,
    tl: Timeline,
    broker: _Broker,
    *,
    kind: str,
    slot: int,
    horizon_hours: float,
) -> _Volume:
    spec = KIND_BY_NAME[kind]
    shape = spec.build(rng, tl, broker.customer)
    target = None if kind == RETIRED else draw_target(rng, spec, horizon_hours)
    threshold = capacity_threshold(rng, tl, spec, shape, target)
    capacity = broker.capacity_gib * GIB
    overhead = float(rng.uniform(0.001, 0.008)) * capacity
    path = overhead + (capacity - overhead) * shape.values / threshold
    if kind == FULL:  # a full log dir goes offline: no more writes, no more deletion
        reached = np.flatnonzero(path >= capacity)
        path[int(reached[0]) if len(reached) else len(path) :] = capacity
    before_resize = capacity
    if shape.resize_at_hours is not None:
        peak = float(path[: tl.index_of(shape.resize_at_hours)].max())
        alerted = math.ceil(peak / float(rng.uniform(0.85, 0.95)) / GIB)  # resized at 85-95 %
        before_resize = max(alerted, round(broker.capacity_gib / rng.uniform(1.5, 3))) * GIB
    fill = None if kind == RETIRED else first_fill_hours(tl, path, capacity)
    return _Volume(
        name=f"/dev/xvd{chr(ord('f') + slot)}",
        mount=f"/kafka/data/d{slot + 1}",
        kind=kind,
        path=path,
        capacity=capacity,
        capacity_before_resize=before_resize,
        resize_at_hours=shape.resize_at_hours,
        fill_hours=fill,
    )


def _snapshot_hours(rng: np.random.Generator, broker: _Broker) -> FloatArray:
    """True-clock snapshot times (hours relative to AT), gaps removed, duplicates repeated."""
    interval = broker.interval_seconds / 3600
    end = -(broker.silent_hours or 0.0) - float(rng.uniform(0, interval))
    count = math.ceil((end + broker.history_hours) / (0.9 * interval)) + 2
    steps = interval * rng.uniform(0.9, 1.1, count)
    hours = (end - np.concatenate(([0.0], np.cumsum(steps))))[::-1]
    hours = hours[hours >= -broker.history_hours]
    for start, stop in broker.gaps:
        hours = hours[(hours < start) | (hours >= stop)]
    if broker.dup_share > 0:
        twice = rng.random(len(hours)) < broker.dup_share
        hours = np.repeat(hours, np.where(twice, 2, 1))
    return hours


def _measure(
    rng: np.random.Generator, broker: _Broker, volume: _Volume, tl: Timeline, hours: FloatArray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(capacity, consumed, free) in bytes as the broker's df would report them."""
    level = np.interp(hours, tl.hours, volume.path)
    capacity = np.full(len(hours), volume.capacity, dtype=np.int64)
    if volume.resize_at_hours is not None:
        capacity[hours < volume.resize_at_hours] = volume.capacity_before_resize
    noise = rng.normal(0.0, MEASUREMENT_NOISE, len(hours)) * capacity
    consumed = np.where(level >= capacity, capacity, np.clip(level + noise, 0, capacity))
    consumed = (consumed // BLOCK).astype(np.int64) * BLOCK
    reserved = (capacity * broker.reserved_fraction // BLOCK).astype(np.int64) * BLOCK
    free = np.maximum(capacity - consumed - reserved, 0)
    return capacity, consumed, free


def _broker_rows(
    rng: np.random.Generator, tl: Timeline, broker: _Broker, volumes: list[_Volume]
) -> pd.DataFrame:
    unique_hours, repeat = np.unique(_snapshot_hours(rng, broker), return_inverse=True)
    columns: dict[str, list[np.ndarray]] = {name: [] for name in ROW_COLUMNS}
    for volume in volumes:
        capacity, consumed, free = _measure(rng, broker, volume, tl, unique_hours)
        columns["capacity"].append(capacity[repeat])
        columns["consumed"].append(consumed[repeat])
        columns["free"].append(free[repeat])
    reported = unique_hours[repeat] + broker.skew_hours
    millis = np.rint(reported * 3_600_000).astype(np.int64)
    count, width = len(repeat), len(volumes)
    return pd.DataFrame(
        {
            "brokerId": np.full(count * width, broker.broker_id, dtype=np.int64),
            "volumeName": np.tile(np.array([v.name for v in volumes], dtype=object), count),
            "path": np.tile(np.array([v.mount for v in volumes], dtype=object), count),
            "snapshotAt": np.repeat(millis, width),
            "capacity": np.stack(columns["capacity"], axis=1).ravel(),
            "consumed": np.stack(columns["consumed"], axis=1).ravel(),
            "free": np.stack(columns["free"], axis=1).ravel(),
        }
    )


def _timestamps(relative_millis: pd.Series) -> pd.Series:
    at_millis = int(AT.timestamp() * 1000)
    stamps = pd.to_datetime(relative_millis.to_numpy() + at_millis, unit="ms", utc=True)
    return pd.Series(stamps, index=relative_millis.index).astype("datetime64[ns, UTC]")


def _tombstones(brokers: list[_Broker]) -> pd.DataFrame:
    deleted = [b for b in brokers if b.tombstone_hours is not None]
    millis = [round(-(b.tombstone_hours or 0.0) * 3_600_000) for b in deleted]
    frame = pd.DataFrame(
        {
            "brokerId": np.array([b.broker_id for b in deleted], dtype=np.int64),
            "snapshotAt": np.array(millis, dtype=np.int64),
        }
    )
    frame["snapshotAt"] = _timestamps(frame["snapshotAt"])
    return frame


def generate(
    seed: int, volumes: int, horizon_hours: float
) -> tuple[pd.DataFrame, pd.DataFrame, list[Truth]]:
    """(rows, tombstones, truths); deterministic in seed; one Truth per (broker, volume)."""
    rng = np.random.default_rng(seed)
    tl = make_timeline(AT, horizon_hours)
    brokers = _layout(rng, volumes)
    _assign_flaws(rng, brokers)
    frames: list[pd.DataFrame] = []
    truths: list[Truth] = []
    for broker, kinds in zip(brokers, _assign_kinds(rng, brokers), strict=True):
        simulated = [
            _simulate_volume(rng, tl, broker, kind=kind, slot=slot, horizon_hours=horizon_hours)
            for slot, kind in enumerate(kinds)
        ]
        frames.append(_broker_rows(rng, tl, broker, simulated))
        retired = broker.silent_hours is not None
        for volume in simulated:
            kind = "+".join([volume.kind, *broker.flaws])
            truths.append(Truth(broker.broker_id, volume.name, kind, volume.fill_hours, retired))
    rows = pd.concat(frames, ignore_index=True)
    rows = rows.sort_values("snapshotAt", kind="stable", ignore_index=True)
    rows["snapshotAt"] = _timestamps(rows["snapshotAt"])
    return rows[ROW_COLUMNS], _tombstones(brokers), truths
