"""Blind SRE test data for the volume-fill forecaster: a Kafka fleet's disk history.

The fleet is a few clusters (bare-metal NVMe or cloud EBS, 1-12 JBOD log volumes per
broker, one local time zone each). Every broker publishes a snapshot of all its volumes
every 30-300 s (cluster setting, broker-specific and jittered) for the last 5-20 days.
Each volume follows one kind of behaviour, drawn by quota from `KIND_WEIGHTS`; the process
itself lives in `history_scenarios_sre_model`. Growing kinds are aimed at an outcome: fill
within 48 h (urgent: a backfill or a reassignment still running at AT, a retention raise
still climbing, ...), within the horizon, shortly after it, or never; bounded kinds never
fill. Some volumes are already full (consumed == capacity since a few hours).

Broker-level data flaws, appended to the kind: `gap` (publisher down 2 h to 2 days, one
ending within the last day), `dup` (snapshots published twice, identical rows), `skew`
(clock off by minutes to hours, one ahead of AT). Retired brokers went silent more than a
day before AT; some have a tombstone (their key deleted later).

Rows carry measurement noise (in-flight appends, index preallocation); the truth is the
first time the noise-free process, continued past AT with the same seeded randomness,
reaches the capacity.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from benchmarks.history_scenario_truth import Truth
from benchmarks.history_scenarios_sre_model import (
    BLOCK,
    BOUNDED_KINDS,
    GIB,
    GROWING_KINDS,
    URGENT_HOURS,
    FloatArray,
    ShapeContext,
    TrafficProfile,
    VolumePath,
    ar1_log_noise,
    first_fill_hour,
    make_grid,
    simulate,
)

AT = datetime(2026, 6, 19, 16, 0, tzinfo=UTC)

KIND_WEIGHTS: dict[str, float] = {
    "plateau": 0.15,
    "plateau_high": 0.07,
    "reassign_out": 0.03,
    "retention_lowered": 0.03,
    "growth_stopped": 0.04,
    "shrinking": 0.04,
    "compacted": 0.20,
    "accelerating": 0.09,
    "burst": 0.08,
    "reassign_in": 0.07,
    "retention_raised": 0.07,
    "disk_replaced": 0.05,
    "resized": 0.05,
    "full": 0.03,
}
URGENT_SHARE: dict[str, float] = {
    "compacted": 0.12,
    "accelerating": 0.3,
    "burst": 0.6,
    "reassign_in": 0.55,
    "retention_raised": 0.35,
    "disk_replaced": 0.08,
    "resized": 0.0,
}
JBOD_CHOICES = ([1, 2, 4, 6, 8, 12], [0.15, 0.2, 0.25, 0.15, 0.15, 0.1])
EBS_GIB = [1000, 1500, 2000, 3000, 4000, 8000, 12000, 16000]
NVME_BYTES = [960_197_124_096, 1_920_383_410_176, 3_840_755_982_336, 7_681_501_126_656]
INTERVALS = ([30.0, 60.0, 120.0, 300.0], [0.1, 0.3, 0.25, 0.35])


@dataclass(frozen=True)
class Cluster:
    capacity: int
    interval_seconds: float
    profile: TrafficProfile


@dataclass
class Broker:
    broker_id: int
    cluster: Cluster
    volume_count: int
    history_hours: float
    reserved_fraction: float
    retired_at: float | None = None  # hours relative to AT
    tombstone_at: float | None = None
    gap: tuple[float, float] | None = None
    duplicate_fraction: float = 0.0
    skew_hours: float = 0.0

    @property
    def flaws(self) -> list[str]:
        found = [("gap", self.gap is not None), ("dup", self.duplicate_fraction > 0.0)]
        found.append(("skew", self.skew_hours != 0.0))
        return [name for name, present in found if present]


def _cluster(rng: np.random.Generator) -> tuple[Cluster, int]:
    if rng.random() < 0.5:
        capacity = int(rng.choice(EBS_GIB)) * GIB
    else:
        device = int(rng.choice(NVME_BYTES))
        capacity = int(device * rng.uniform(0.985, 0.995)) // BLOCK * BLOCK
    profile = TrafficProfile(
        utc_offset_hours=float(rng.choice([-8.0, -5.0, 0.0, 1.0, 2.0, 5.5, 8.0, 9.0])),
        daily_amplitude=float(rng.uniform(0.2, 0.6)),
        peak_local_hour=float(rng.uniform(11.0, 21.0)),
        weekend_factor=float(rng.uniform(0.3, 0.5)),
    )
    interval = float(rng.choice(INTERVALS[0], p=INTERVALS[1]))
    return Cluster(capacity, interval, profile), int(rng.choice(JBOD_CHOICES[0], p=JBOD_CHOICES[1]))


def plan_brokers(rng: np.random.Generator, volumes: int) -> list[Broker]:
    """Clusters of 3-9 brokers until the fleet holds `volumes` log volumes."""
    brokers: list[Broker] = []
    remaining, cluster_index = volumes, 0
    while remaining > 0:
        cluster, jbod = _cluster(rng)
        cluster_index += 1
        for position in range(int(rng.integers(3, 10))):
            if remaining <= 0:
                break
            count = min(jbod, remaining)
            remaining -= count
            brokers.append(
                Broker(
                    broker_id=1000 * cluster_index + position + 1,
                    cluster=cluster,
                    volume_count=count,
                    history_hours=float(rng.uniform(5.0, 20.0)) * 24.0,
                    reserved_fraction=float(rng.choice([0.0, 0.0, 0.005, 0.01])),
                )
            )
    _assign_flaws(rng, brokers)
    return brokers


def _assign_flaws(rng: np.random.Generator, brokers: list[Broker]) -> None:
    count = len(brokers)
    order = [brokers[int(i)] for i in rng.permutation(count)]
    retired = order[: max(2, round(0.06 * count))] if count >= 6 else []
    for index, broker in enumerate(retired):
        broker.retired_at = -float(rng.uniform(26.0, min(0.8 * broker.history_hours, 168.0)))
        if index == 0 or (index > 1 and rng.random() < 0.5):
            broker.tombstone_at = min(broker.retired_at + float(rng.uniform(0.1, 20.0)), -0.5)
    alive = [b for b in order if b.retired_at is None]
    for index, broker in enumerate(_pick(rng, alive, 0.15, 2)):
        length = float(rng.uniform(2.0, 48.0))
        end = -float(rng.uniform(1.0, 20.0)) if index == 0 else float(rng.uniform(-200.0, -30.0))
        end = max(end, -broker.history_hours + length + 6.0)
        broker.gap = (end - length, end)
    for broker in _pick(rng, alive, 0.12, 1):
        broker.duplicate_fraction = float(rng.uniform(0.003, 0.02))
    for index, broker in enumerate(_pick(rng, alive, 0.08, 2)):
        size = float(rng.uniform(0.5, 3.0)) if index == 0 else float(rng.uniform(0.05, 2.0))
        broker.skew_hours = size if index == 0 or rng.random() < 0.5 else -size


def _pick(
    rng: np.random.Generator, brokers: list[Broker], share: float, least: int
) -> list[Broker]:
    wanted = min(len(brokers), max(least, round(share * len(brokers))))
    return [brokers[int(i)] for i in rng.permutation(len(brokers))[:wanted]]


def plan_kinds(rng: np.random.Generator, count: int) -> list[str]:
    """Kinds by quota (largest remainder), each present once there are enough volumes."""
    names = list(KIND_WEIGHTS)
    exact = np.array([KIND_WEIGHTS[n] for n in names]) * count / sum(KIND_WEIGHTS.values())
    quota = np.floor(exact).astype(int)
    for index in np.argsort(quota - exact)[: count - int(quota.sum())]:
        quota[index] += 1
    if count >= len(names):
        for index in np.flatnonzero(quota == 0):
            quota[int(np.argmax(quota))] -= 1
            quota[index] = 1
    kinds = [name for name, q in zip(names, quota, strict=True) for _ in range(int(q))]
    return [kinds[int(i)] for i in rng.permutation(len(kinds))]


def fill_target(rng: np.random.Generator, kind: str, horizon: float) -> float | None:
    """The outcome a volume is aimed at, in hours after AT (None: never)."""
    if kind == "full":
        return -float(rng.uniform(1.0, 12.0))
    if kind in BOUNDED_KINDS or kind == "retired":
        return None
    assert kind in GROWING_KINDS
    if rng.random() < URGENT_SHARE[kind]:
        return float(np.exp(rng.uniform(np.log(0.3), np.log(URGENT_HOURS))))
    draw = rng.random()
    if draw < 0.76:
        return float(np.exp(rng.uniform(np.log(URGENT_HOURS), np.log(horizon))))
    if draw < 0.91:
        return float(rng.uniform(1.02, 1.6)) * horizon
    return None


def snapshot_hours(rng: np.random.Generator, broker: Broker) -> FloatArray:
    """True snapshot instants (hours relative to AT) after gap removal and duplication."""
    interval = broker.cluster.interval_seconds * float(rng.uniform(0.9, 1.1))
    expected = int(broker.history_hours * 3600.0 / interval * 1.1) + 10
    steps = interval * rng.uniform(0.97, 1.03, expected)
    steps += np.where(rng.random(expected) < 0.01, rng.exponential(interval, expected), 0.0)
    start = -broker.history_hours + float(rng.uniform(0.0, interval)) / 3600.0
    times = start + np.concatenate([[0.0], np.cumsum(steps)]) / 3600.0
    end = broker.retired_at if broker.retired_at is not None else 0.0
    times = times[times <= end]
    if broker.gap is not None:
        times = times[(times < broker.gap[0]) | (times > broker.gap[1])]
    if broker.duplicate_fraction > 0.0:
        repeats = np.where(rng.random(times.size) < broker.duplicate_fraction, 2, 1)
        times = np.repeat(times, repeats)
    return times


@dataclass(frozen=True)
class SimulatedVolume:
    name: str
    kind: str
    path: VolumePath
    fill_hour: float | None
    noise_bytes: float


def simulate_broker(
    seed: int, broker: Broker, kinds: list[str], grid: FloatArray, horizon: float
) -> list[SimulatedVolume]:
    """Each volume's process; the broker's traffic noise is shared by its volumes."""
    broker_rng = np.random.default_rng([seed, broker.broker_id, 0])
    shared = ar1_log_noise(broker_rng, grid, float(broker_rng.uniform(0.03, 0.12)))
    seasonal = broker.cluster.profile.seasonal(grid)
    volumes: list[SimulatedVolume] = []
    for index, kind in enumerate(kinds):
        rng = np.random.default_rng([seed, broker.broker_id, index + 1])
        rate = seasonal * np.exp(shared + ar1_log_noise(rng, grid, float(rng.uniform(0.03, 0.1))))
        target = fill_target(rng, kind, horizon)
        context = ShapeContext(rng, grid, rate, -broker.history_hours, target)
        path = simulate(kind, context, broker.cluster.capacity)
        # Too full all along for a believable online grow: it is then just compacted growth.
        unresized = kind == "resized" and path.resize_hour is None
        volumes.append(
            SimulatedVolume(
                name=f"/dev/nvme{index + 1}n1",
                kind="compacted" if unresized else kind,
                path=path,
                fill_hour=first_fill_hour(grid, path),
                noise_bytes=float(rng.uniform(8.0, 128.0)) * (1 << 20),
            )
        )
    return volumes


def _block_floor(values: NDArray[np.floating[Any]]) -> NDArray[np.int64]:
    return (np.floor(values / BLOCK) * BLOCK).astype(np.int64)


def broker_rows(
    rng: np.random.Generator, broker: Broker, volumes: list[SimulatedVolume], grid: FloatArray
) -> dict[str, np.ndarray]:
    """Column arrays of one broker's rows, snapshot by snapshot, volume by volume."""
    times = snapshot_hours(rng, broker)
    capacity_cols, consumed_cols = [], []
    for volume in volumes:
        capacity = volume.path.capacity_at(times)
        measured = np.interp(times, grid, volume.path.values)
        measured += rng.normal(0.0, volume.noise_bytes, times.size)
        consumed = np.clip(_block_floor(measured), 0, capacity - BLOCK)
        if volume.fill_hour is not None:
            consumed = np.where(times >= volume.fill_hour, capacity, consumed)
        if broker.duplicate_fraction > 0.0:
            duplicate = np.flatnonzero(np.diff(times) == 0.0) + 1
            consumed[duplicate] = consumed[duplicate - 1]
        capacity_cols.append(capacity)
        consumed_cols.append(consumed)
    capacity_grid = np.stack(capacity_cols, axis=1)
    consumed_grid = np.stack(consumed_cols, axis=1)
    reserved = _block_floor(capacity_grid * broker.reserved_fraction)
    free = np.maximum(capacity_grid - consumed_grid - reserved, 0)
    reported_ms = np.round((times + broker.skew_hours) * 3_600_000.0).astype(np.int64)
    count = len(volumes)
    return {
        "brokerId": np.full(times.size * count, broker.broker_id, dtype=np.int64),
        "volumeName": np.tile(np.array([v.name for v in volumes], dtype=object), times.size),
        "path": np.tile(
            np.array([f"/data/kafka-logs-{i + 1}" for i in range(count)], dtype=object), times.size
        ),
        "snapshotMs": np.repeat(reported_ms, count),
        "capacity": capacity_grid.ravel(),
        "consumed": consumed_grid.ravel(),
        "free": free.ravel(),
    }


def volume_truth(broker: Broker, volume: SimulatedVolume, horizon: float) -> Truth:
    fill = volume.fill_hour
    if broker.retired_at is not None or fill is None or fill > 2.5 * horizon:
        hours = None
    else:
        hours = max(fill, 0.0)
    kind = "+".join([volume.kind, *broker.flaws])
    return Truth(broker.broker_id, volume.name, kind, hours, broker.retired_at is not None)


def _utc(ms: np.ndarray) -> pd.DatetimeIndex:
    at_ms = int(AT.timestamp() * 1000)
    return pd.DatetimeIndex(pd.to_datetime(ms + at_ms, unit="ms", utc=True))


def generate(
    seed: int, volumes: int, horizon_hours: float
) -> tuple[pd.DataFrame, pd.DataFrame, list[Truth]]:
    """(rows, tombstones, truths); deterministic in seed; one Truth per (broker, volume)."""
    fleet_rng = np.random.default_rng([seed, 0xF1EE7])
    brokers = plan_brokers(fleet_rng, volumes)
    alive_volumes = sum(b.volume_count for b in brokers if b.retired_at is None)
    kinds = iter(plan_kinds(fleet_rng, alive_volumes))
    grid = make_grid(2.5 * horizon_hours)
    parts: list[dict[str, np.ndarray]] = []
    truths: list[Truth] = []
    for broker in brokers:
        if broker.retired_at is None:
            broker_kinds = [next(kinds) for _ in range(broker.volume_count)]
        else:
            broker_kinds = ["retired"] * broker.volume_count
        simulated = simulate_broker(seed, broker, broker_kinds, grid, horizon_hours)
        rows_rng = np.random.default_rng([seed, broker.broker_id, 10_000])
        parts.append(broker_rows(rows_rng, broker, simulated, grid))
        truths.extend(volume_truth(broker, volume, horizon_hours) for volume in simulated)
    columns = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    rows = pd.DataFrame(
        {
            "brokerId": columns["brokerId"],
            "volumeName": columns["volumeName"],
            "path": columns["path"],
            "snapshotAt": _utc(columns["snapshotMs"]),
            "capacity": columns["capacity"],
            "consumed": columns["consumed"],
            "free": columns["free"],
        }
    )
    tombstoned = [b for b in brokers if b.tombstone_at is not None]
    tombstones = pd.DataFrame(
        {
            "brokerId": np.array([b.broker_id for b in tombstoned], dtype=np.int64),
            "snapshotAt": _utc(
                np.array([round((b.tombstone_at or 0.0) * 3_600_000) for b in tombstoned])
            ),
        }
    )
    return rows, tombstones, truths
