"""A second generator of snapshot histories, written apart from ``spark_history.synthetic``.

Each volume's usage is the integral of a growth *rate* in continuous time (not a shape with
noise on top): the rate has a daily cycle, a weekly one (weekends at 30-50% of weekday
growth), and for some volumes an acceleration. Observations add AR(1) noise (a slow wander,
not white jitter). Events on top: disk replacement (usage drops to ~2%, re-replication brings
most of it back within hours, then growth resumes), capacity resize, 48 h gaps, volumes
already full, retired brokers (with or without a tombstone), duplicated snapshots and brokers
with a skewed clock. The truth is the same noiseless rate integrated forward until usage
reaches the capacity in force at ``at``.

Used by ``benchmarks/history_accuracy_compare.py``; the forecast's code is not imported here.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt
import pandas as pd

from benchmarks.history_scenario_truth import Truth

FloatArray = npt.NDArray[np.float64]

AT = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)  # a Sunday: the last two days are a weekend
HISTORY_HOURS = 8 * 24.0
STEP_MINUTES = 5.0
KINDS: tuple[str, ...] = (
    "weekly",
    "accelerating",
    "replaced",
    "resized",
    "retention",
    "full",
    "gap",
    "retired",
)


def _rate(hours: FloatArray, volume: dict[str, float]) -> FloatArray:
    """Bytes per hour at ``hours`` (relative to AT) for a volume's parameters."""
    at_day = AT.weekday()  # Sunday = 6
    day = (at_day + np.floor((hours + AT.hour) / 24.0)).astype(np.int64) % 7
    weekly = np.where(day >= 5, volume["weekend"], 1.0)
    daily = 1.0 + volume["daily"] * np.sin(2 * np.pi * (hours + volume["phase"]) / 24.0)
    acceleration = np.exp(volume["accel"] * (hours + HISTORY_HOURS))
    rate: FloatArray = volume["rate"] * weekly * daily * acceleration
    return rate


def _usage(hours: FloatArray, volume: dict[str, float]) -> FloatArray:
    """Noiseless used bytes on a regular grid of ``hours`` (integrated rate)."""
    step = float(hours[1] - hours[0])
    grown = np.cumsum(_rate(hours, volume)) * step
    used = volume["start"] + grown
    ceiling = volume.get("ceiling", math.inf)
    if math.isfinite(ceiling):
        # Retention: usage stops at the ceiling and saws 3% below it every 6 hours.
        tooth = 0.03 * volume["capacity"] * ((hours % 6.0) / 6.0)
        used = np.where(used > ceiling, ceiling - 0.03 * volume["capacity"] + tooth, used)
    if "replaced_at" in volume:
        after = hours >= volume["replaced_at"]
        lost = used[np.argmax(after)] if after.any() else 0.0
        since = np.maximum(hours - volume["replaced_at"], 0.0)
        # Drop to 2%, then re-replication refills 90% of what was there within ~6 h.
        refill = 0.9 * lost * (1.0 - np.exp(-since / 2.0))
        base = np.where(after, 0.02 * volume["capacity"] + refill, used)
        used = np.where(after, base + (used - lost), used)
    result: FloatArray = np.minimum(used, _capacity(hours, volume))
    return result


def _capacity(hours: FloatArray, volume: dict[str, float]) -> FloatArray:
    resized = volume.get("resized_at", math.inf)
    capacities: FloatArray = np.where(
        hours >= resized, volume["capacity"] * volume.get("growth_factor", 1.0), volume["capacity"]
    )
    return capacities


def _parameters(rng: np.random.Generator, kind: str) -> dict[str, float]:
    capacity = float(rng.choice([2e12, 4e12, 8e12]))
    days_to_fill = float(rng.uniform(3.0, 45.0))
    used_now = float(rng.uniform(0.45, 0.85))
    volume = {
        "capacity": capacity,
        "weekend": float(rng.uniform(0.3, 0.5)),
        "daily": float(rng.uniform(0.0, 0.8)),
        "phase": float(rng.uniform(0, 24)),
        "accel": 0.0,
        "rate": capacity * (1.0 - used_now) / (days_to_fill * 24.0),
    }
    volume["start"] = capacity * used_now - volume["rate"] * HISTORY_HOURS * 0.8
    if kind == "accelerating":
        volume["accel"] = math.log(2.0) / float(rng.uniform(72.0, 240.0))
        volume["rate"] /= 3.0
        volume["start"] = capacity * used_now - volume["rate"] * HISTORY_HOURS * 2.0
    elif kind == "replaced":
        volume["replaced_at"] = -float(rng.uniform(30.0, 90.0))
    elif kind == "resized":
        volume["resized_at"] = -float(rng.uniform(24.0, 72.0))
        volume["growth_factor"] = 1.5
    elif kind == "retention":
        volume["ceiling"] = capacity * float(rng.uniform(0.55, 0.8))
        volume["start"] = volume["ceiling"] * 0.8
    elif kind == "full":
        volume["start"] = capacity * 0.9
        volume["rate"] = capacity * 0.1 / (HISTORY_HOURS - 12.0) / 0.75
    volume["start"] = max(volume["start"], 0.05 * capacity)
    return volume


def _truth(volume: dict[str, float], horizon_hours: float) -> float | None:
    future = np.arange(-HISTORY_HOURS, horizon_hours, STEP_MINUTES / 60.0)
    used = _usage(future, volume)
    capacity_now = float(_capacity(np.array([0.0]), volume)[0])
    full = (future >= -1e-9) & (used >= capacity_now * 0.999)
    now = int(np.searchsorted(future, 0.0))
    if used[now] >= capacity_now * 0.999:
        return 0.0
    return float(future[np.argmax(full)]) if full.any() else None


def generate(
    seed: int, volumes: int, horizon_hours: float
) -> tuple[pd.DataFrame, pd.DataFrame, list[Truth]]:
    """(history rows in the dataset's columns, tombstones, truths), ``volumes`` volumes."""
    rng = np.random.default_rng(seed)
    hours = np.arange(-HISTORY_HOURS, 0.0, STEP_MINUTES / 60.0) + STEP_MINUTES / 120.0
    frames, truths, stones = [], [], []
    for index in range(volumes):
        broker, kind = index // 4, KINDS[(index // 4) % len(KINDS)]
        volume = _parameters(rng, kind)
        seen = _observed(rng, hours, volume, kind)
        retired = kind == "retired"
        if retired and (broker // len(KINDS)) % 2 == 0 and index % 4 == 0:
            stones.append({"brokerId": broker, "snapshotAt": AT - timedelta(hours=96.0)})
        truths.append(
            Truth(broker, f"/dev/sd{index % 4}", kind, _truth(volume, horizon_hours), retired)
        )
        frames.append(_rows(rng, broker, f"/dev/sd{index % 4}", seen))
    rows = pd.concat(frames, ignore_index=True)
    tombstones = pd.DataFrame(stones, columns=["brokerId", "snapshotAt"])
    return rows, tombstones, truths


def _observed(
    rng: np.random.Generator, hours: FloatArray, volume: dict[str, float], kind: str
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(hours, consumed, capacity) as published: AR(1) noise, gaps, retirement."""
    used = _usage(hours, volume)
    capacity = _capacity(hours, volume)
    noise = np.empty(hours.size)
    level = 0.0
    shocks = rng.normal(0.0, 0.0004 * volume["capacity"], hours.size)
    for position, shock in enumerate(shocks):
        level = 0.9 * level + shock
        noise[position] = level
    consumed = np.clip(used + noise, 0.0, capacity)
    if kind == "full":
        consumed = np.where(used >= capacity * 0.999, capacity, consumed)
    keep = np.ones(hours.size, dtype=bool)
    if kind == "gap":
        end = -float(rng.uniform(2.0, 22.0))
        keep &= (hours <= end - 48.0) | (hours > end)
    if kind == "retired":
        keep &= hours <= -96.0
    keep &= rng.random(hours.size) > 0.02  # lost snapshots
    return hours[keep], consumed[keep], capacity[keep]


def _rows(
    rng: np.random.Generator,
    broker: int,
    name: str,
    seen: tuple[FloatArray, FloatArray, FloatArray],
) -> pd.DataFrame:
    hours, consumed, capacity = seen
    skew_minutes = 7.0 if broker % 5 == 3 else 0.0  # this broker's clock runs 7 min ahead
    instants = pd.to_datetime(AT) + pd.to_timedelta(hours * 60.0 + skew_minutes, unit="min")
    used = np.round(consumed).astype(np.int64)
    caps = np.round(capacity).astype(np.int64)
    frame = pd.DataFrame(
        {
            "brokerId": broker,
            "volumeName": name,
            "path": name.replace("/dev/", "/data/"),
            "snapshotAt": instants,
            "capacity": caps,
            "consumed": used,
            "free": caps - used,
        }
    )
    duplicates = frame.sample(frac=0.02, random_state=int(rng.integers(1 << 31)))
    frame = pd.concat([frame, duplicates], ignore_index=True).sort_values("snapshotAt")
    return frame.reset_index(drop=True)
