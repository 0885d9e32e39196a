"""Capacity-forecast scenarios written blind: Kafka log volumes built from their segments.

Retention deletes whole segments (usage saws, then levels off); topics kept forever grow; ingest
has daily and weekly cycles, bursts and noise. The truth continues the process from AT, noiseless.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import pandas as pd

from benchmarks.history_scenario_truth import Truth

Array = npt.NDArray[np.float64]
Rng = np.random.Generator

AT = datetime(2026, 3, 12, 15, 0, tzinfo=UTC)  # a Thursday: fills land on weekdays and weekends

HOUR, DAY, WEEK = 3600.0, 86400.0, 7 * 86400.0
STEP = 300.0  # the model's grid: Kafka's default log.retention.check.interval.ms
LEAD = 22 * DAY  # the model starts before AT: 14 days shown, 7 of retention, one spare
SHOWN = 14.5 * DAY  # capacities are sized on what is shown
BLOCK = 4096.0
SEARCH = 2.5  # the truth looks this many horizons ahead of AT
COLUMNS = ["brokerId", "volumeName", "path", "snapshotAt", "capacity", "consumed", "free"]

_SEGMENTS = (2.0**30, 2.0**29, 2.0**28, 2.0**27, 2.0**26)
_REGIONS = ((-8.0, 5), (-5.0, 5), (0.0, 5), (1.0, 5), (3.0, 4), (5.5, 5), (9.0, 5))
"""(UTC offset in hours, first weekend day with Monday = 0): one region rests Friday-Saturday."""
_MIX = (
    "steady:12:within slow:10:after weekly:12:within ramp:9 doubling:9 plateau:10:never "
    "stopped:9:never retention-cut:9 disk-replaced:9 resized:9 moved-in:9 moved-out:8 full:8:full "
    "retired:9:never"  # kind:weight[:fill]; no fill: 60 % within the horizon, the rest after
)
_TABLE = [entry.split(":") for entry in _MIX.split()]
_FILL = {entry[0]: entry[2] for entry in _TABLE if len(entry) == 3}
_TOTAL = sum(int(entry[1]) for entry in _TABLE)
_BURST_GAIN = 1.0 + 3150.0 / DAY * 1.25  # one a day, 3150 s long, 2.25 times the rate on average
_BASES = {"full": ("ramp", "steady", "steady"), "retired": ("plateau", "steady")}


@dataclass
class _Group:  # topics sharing one configuration on one volume; times in s relative to AT
    rate: float
    parts: int = 1
    seg: float = _SEGMENTS[0]
    ret_h: float = math.inf
    ret_bytes: float = math.inf  # per partition
    initial: float = 0.0  # bytes already kept by a group whose retention never deletes
    born: float = -math.inf
    stop: float = math.inf  # the producers turned off
    ramp_h: float = 0.0  # a new topic's rate grows linearly, reaching ``rate`` after ramp_h
    double: tuple[float, float] = (math.inf, math.inf)  # from when, doubling time (h)
    trend: float = 0.0  # organic growth per week
    cut: tuple[float, float] = (math.inf, math.inf)  # when retention was lowered, to (h)
    moved_in: tuple[float, float] = (-math.inf, 1.0)  # when it arrived, hours to copy
    moved_out: float = math.inf

    def kept(self) -> float:  # roughly the bytes it keeps
        return self.initial + self.rate * 0.6 * min(self.ret_h * HOUR, LEAD)


@dataclass
class _Volume:
    kind: str
    fill: str
    target_h: float
    overhead: float  # filesystem metadata and reserved blocks, share of capacity
    groups: list[_Group] = field(default_factory=list)
    replaced: tuple[float, float, float] | None = None  # failed at, swap hours, copy hours
    resize_at: float = -math.inf
    cons: Array = field(default_factory=lambda: np.zeros(0))  # consumed on the grid
    cap: float = 0.0
    cap_before: float = 0.0
    full_at: float = math.inf


@dataclass
class _Broker:
    broker_id: int
    interval: float
    hist_days: float
    cycle: tuple[float, ...]  # UTC offset, weekend day, daily amplitude, peak hour, weekend rate
    slack: float  # bytes neither free nor consumed (a filesystem holding blocks back)
    names: list[str]
    paths: list[str]
    end: float = 0.0
    swap: tuple[float, float, float] | None = None  # its disks are replaced in one window
    tombstone: float | None = None
    skew: float = 0.0
    dup: float = 0.0
    gaps: list[tuple[float, float]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


def generate(
    seed: int, volumes: int, horizon_hours: float
) -> tuple[pd.DataFrame, pd.DataFrame, list[Truth]]:
    """(rows, tombstones, truths), deterministic in seed, one truth per volume."""
    rng = np.random.default_rng(seed)
    tg = np.arange(-LEAD, SEARCH * horizon_hours * HOUR + STEP, STEP)
    frames, truths = [], []
    brokers = _brokers(volumes, rng)
    for broker, kinds in brokers:
        season = _season(tg, broker)
        vols = [_recipe(kind, rng, horizon_hours) for kind in kinds]
        for vol, name in zip(vols, broker.names, strict=True):
            if vol.replaced is not None:
                vol.replaced = broker.swap = broker.swap or vol.replaced
                broker.gaps.append((vol.replaced[0], vol.replaced[0] + vol.replaced[1] * HOUR))
            _model(tg, _data(tg, vol, season, rng), vol, rng)
            fill = None if broker.end < 0 else _fill_hours(vol.cons, vol.cap, int(LEAD / STEP))
            label = "+".join([vol.kind, *broker.labels])
            truths.append(Truth(broker.broker_id, name, label, fill, broker.end < 0))
        frames.append(_rows(broker, vols, tg, rng))
    rows = pd.concat(frames, ignore_index=True).sort_values("snapshotAt", kind="stable")
    dead = [b for b, _ in brokers if b.tombstone is not None]
    stamps = _stamps(np.array([b.tombstone for b in dead], dtype=np.float64))
    ids = np.array([b.broker_id for b in dead], dtype=np.int64)
    tombstones = pd.DataFrame({"brokerId": ids, "snapshotAt": stamps})
    return rows.reset_index(drop=True), tombstones, truths


def _stamps(seconds: Array) -> pd.DatetimeIndex:
    """Seconds relative to AT as UTC instants, to the millisecond as publishers write them."""
    millis = np.rint((seconds + AT.timestamp()) * 1e3).astype(np.int64)
    return pd.to_datetime(millis * 10**6, utc=True)


def _brokers(volumes: int, rng: Rng) -> list[tuple[_Broker, list[str]]]:
    """Kinds in the proportions of _MIX; active brokers of 2-8 volumes, retired ones of 2-4."""
    exact = {entry[0]: int(entry[1]) * volumes / _TOTAL for entry in _TABLE}
    counts = {kind: int(share) for kind, share in exact.items()}
    for kind in sorted(exact, key=lambda k: counts[k] - exact[k])[: volumes - sum(counts.values())]:
        counts[kind] += 1
    kinds = [kind for kind, count in counts.items() for _ in range(count)]
    active = [kind for kind in kinds if kind != "retired"]
    rng.shuffle(active)
    groups: list[list[str]] = []
    for items, most in ((active, 8), ([k for k in kinds if k == "retired"], 4)):
        i = 0
        while i < len(items):
            size = min(int(rng.integers(2, most + 1)), len(items) - i)
            if len(items) - i - size == 1:
                size = size + 1 if size < most else size - 1
            groups.append(items[i : i + size])
            i += size
    ids = int(rng.choice([0, 1, 100, 1000])) + rng.permutation(len(groups))
    pairs = [(_new_broker(int(i), g, rng), g) for i, g in zip(ids, groups, strict=True)]
    _issues(pairs, rng)
    return pairs


def _new_broker(broker_id: int, kinds: list[str], rng: Rng) -> _Broker:
    tz_h, weekend_day = _REGIONS[int(rng.integers(len(_REGIONS)))]
    cycle = (tz_h, weekend_day, *(float(x) for x in rng.uniform((0.2, 11, 0.3), (0.5, 16, 0.5))))
    interval, hist = float(rng.choice([60, 120, 180, 240, 300])), float(rng.uniform(8.0, 14.0))
    slack = float(rng.choice([0.0, 0.0, 0.0, 64.0 * 2**20]))
    if rng.random() < 0.7:
        names, path = [f"/dev/nvme{i + 1}n1" for i in range(len(kinds))], "/var/lib/kafka/data-"
    else:
        names, path = [f"/dev/xvd{'fghijklmn'[i]}" for i in range(len(kinds))], "/kafka/logs-"
    end = -float(rng.uniform(2.2, 6.0)) * DAY if kinds[0] == "retired" else 0.0
    paths = [f"{path}{i}" for i in range(len(kinds))]
    return _Broker(broker_id, interval, hist, cycle, slack, names, paths, end)


def _issues(pairs: list[tuple[_Broker, list[str]]], rng: Rng) -> None:
    """Tombstones for half the retired brokers; gaps (away from disk swaps), duplicates, a skew."""
    for b in [b for b, _ in pairs if b.end < 0][::2]:
        b.tombstone = min(b.end + float(rng.uniform(1.0, 30.0)) * HOUR, -HOUR)
        b.labels.append("tombstone")
    active = [(b, "disk-replaced" in kinds) for b, kinds in pairs if b.end == 0.0]
    shuffled = [active[int(i)] for i in rng.permutation(len(active))]
    order = [b for b, _ in sorted(shuffled, key=lambda pair: pair[1])]
    n = max(1, len(active) // 6)
    for rank, b in enumerate(order[:n]):
        length = float(rng.uniform(12.0, 48.0)) * HOUR
        low = -b.hist_days * DAY + length + DAY
        end = -rng.uniform(2.0, 22.0) * HOUR if rank == 0 else rng.uniform(low, -2.0 * DAY)
        b.gaps.append((float(end) - length, float(end)))
        b.labels.append("gap")
    for b in order[n : 2 * n]:
        b.dup = float(rng.uniform(0.005, 0.03))
        b.labels.append("dup")
    if order:
        skewed = order[min(2 * n, len(order) - 1)]
        skewed.skew = float(rng.choice([-1, 1]) * np.exp(rng.uniform(5.2, 9.3)))  # 3 min to 3 h
        skewed.labels.append("skew")


def _season(tg: Array, b: _Broker) -> Array:
    """Daily and weekly cycle of ingest in the broker's local time (weekend edges smoothed)."""
    tz_h, weekend_day, amp, peak, weekend = b.cycle
    local = tg + AT.timestamp() + tz_h * HOUR
    weekday = (np.floor(local / DAY) + 3) % 7  # 1970-01-01 was a Thursday
    week = np.where((weekday - weekend_day) % 7 < 2, weekend, 1.0)
    smooth = np.convolve(np.pad(week, 12, mode="edge"), np.full(25, 1.0 / 25.0), mode="valid")
    daily = 1.0 + amp * np.cos(2.0 * np.pi * ((local % DAY) / HOUR - peak) / 24.0)
    return np.asarray(daily * smooth, dtype=np.float64)


def _group(rng: Rng, scale: float = 1.0, ret_h: float = 0.0) -> _Group:
    """Topics kept ``ret_h`` hours (random when 0, forever when inf) or, some, up to a size."""
    rate = scale * float(rng.lognormal(math.log(2.5e6 if math.isinf(ret_h) else 4e6), 0.7))
    g = _Group(rate, int(rng.integers(3, 17)), trend=float(rng.uniform(-0.01, 0.05)))
    per_part = rate / g.parts * 0.6
    if math.isinf(ret_h):  # retention.ms = -1: it only grows
        g.initial = rate * 0.6 * float(rng.uniform(5.0, 60.0)) * DAY
        return g
    if ret_h == 0.0 and rng.random() < 0.25:
        g.ret_bytes = kept = per_part * float(rng.uniform(0.5, 4.0)) * DAY
    else:
        g.ret_h = ret_h or float(rng.choice([24.0, 48.0, 72.0, 96.0, 168.0]))
        kept = per_part * g.ret_h * HOUR
    g.seg = next((s for s in _SEGMENTS if s <= kept / 4.0), _SEGMENTS[-1])
    return g


def _recipe(kind: str, rng: Rng, horizon: float) -> _Volume:
    """A volume's groups and events as its kind says, and how it is meant to fill."""
    base = str(rng.choice(_BASES[kind])) if kind in _BASES else kind
    fill = _FILL.get(kind) or ("within" if rng.random() < 0.6 else "after")
    low, high = {"within": (0.03, 0.93), "after": (1.2, 2.2)}.get(fill, (0.0, 0.0))
    if kind == "weekly":
        low, high = 0.2, 0.8
    target = float(rng.uniform(3.0, 20.0)) if fill == "full" else horizon * rng.uniform(low, high)
    vol = _Volume(kind, fill, float(target), float(rng.uniform(0.002, 0.02)))
    steady = base in ("steady", "slow", "stopped")  # the rest keeps a week: no weekly swing
    calm = 0.5 if steady or base == "plateau" else 1.0
    vol.groups = [_group(rng, calm, 168.0 * steady) for _ in range(rng.integers(1, 3))]
    if base not in ("plateau", "ramp", "stopped"):
        fast = 2.0 if base in ("steady", "weekly", "resized") else 1.0
        vol.groups.append(_group(rng, fast, math.inf))
    ago = -float(rng.uniform(1.0, 5.0)) * DAY
    if base == "disk-replaced":
        vol.replaced = (ago, float(rng.uniform(0.5, 3.0)), float(rng.uniform(2.0, 10.0)))
    elif base == "resized":
        vol.resize_at = -float(rng.uniform(1.0, 6.0)) * DAY
    if base in ("disk-replaced", "resized", "steady", "slow", "weekly"):
        return vol
    if base == "plateau":  # a topic whose retention started deleting days ago
        g = replace(_group(rng, 3.0, 168.0), born=-float(rng.uniform(9.5, 11.5)) * DAY)
    elif base == "stopped":
        g = replace(_group(rng, 3.0, math.inf), stop=ago - DAY)
    elif base == "ramp":
        g = _group(rng, 2.0, float(rng.choice([72.0, 96.0, 168.0])))
        g.born, g.ramp_h = ago, -ago / HOUR * float(rng.uniform(0.8, 1.5))
        vol.groups += [_group(rng, 0.3, math.inf)] if rng.random() < 0.5 else []
    elif base == "doubling":
        g = _group(rng, 1.0, float(rng.choice([48.0, 72.0, 96.0])))
        g.double = (-float(rng.uniform(3.0, 8.0)) * DAY, float(rng.uniform(96.0, 240.0)))
    elif base == "retention-cut":
        g = replace(_group(rng, 2.0, 168.0), cut=(ago, float(rng.choice([24.0, 48.0, 72.0]))))
    else:  # partitions reassigned onto or off the volume
        g = _group(rng, 1.5, float(rng.choice([96.0, 168.0, math.inf])))
        if base == "moved-in":
            g.moved_in = (ago, float(rng.uniform(1.0, 6.0)))
        else:
            g.moved_out = ago
    if base in ("moved-in", "moved-out", "retention-cut"):  # a lot of data moves or goes
        grow = max(1.0, 0.25 * sum(o.kept() for o in vol.groups) / g.kept())
        g.rate, g.initial = g.rate * grow, g.initial * grow
    vol.groups.append(g)
    return vol


def _rate(tg: Array, g: _Group, season: Array, noise: Array, rng: Rng) -> Array:
    """Bytes per second written to the group: noisy and bursty up to AT, expected after."""
    r = g.rate * season * np.maximum(0.2, 1.0 + g.trend * tg / WEEK)
    r = r * ((tg >= g.born) & (tg < g.stop))
    if g.ramp_h > 0:
        r = r * (np.maximum(tg - g.born, 0.0) / (g.ramp_h * HOUR))
    if math.isfinite(g.double[0]):
        r = r * np.exp2(np.maximum(tg - g.double[0], 0.0) / (g.double[1] * HOUR))
    wobble = noise.copy()
    past = int(LEAD / STEP)
    for _ in range(int(rng.poisson(LEAD / DAY))):
        first = int(rng.integers(0, past))
        width = int(rng.uniform(600.0, 5400.0) / STEP) + 1
        wobble[first : min(first + width, past)] *= rng.uniform(1.5, 3.0)
    wobble[past:] = _BURST_GAIN
    return np.asarray(r * wobble, dtype=np.float64)


def _group_usage(tg: Array, written: Array, g: _Group, rng: Rng) -> Array:
    """Bytes on disk: what the partitions wrote minus the whole segments retention deleted."""
    if math.isinf(g.ret_h) and math.isinf(g.ret_bytes):
        return written + g.initial
    share = rng.dirichlet(np.full(g.parts, 4.0))
    offset = rng.uniform(0.0, g.seg, g.parts) if math.isinf(g.born) else np.zeros(g.parts)
    logs = share[:, None] * written[None, :] + offset[:, None]
    if math.isfinite(g.ret_bytes):  # the oldest segments go while the rest stays above the limit
        gone = np.maximum(np.floor((logs - g.ret_bytes) / g.seg), 0.0)
    else:  # a segment goes once its newest record (written when it rolled) is older than retention
        hours = np.where(tg < g.cut[0], g.ret_h, g.cut[1])
        back = np.arange(tg.size) - np.rint(hours * HOUR / STEP).astype(np.int64)
        gone = np.floor(logs[:, np.maximum(back, 0)] / g.seg)
    return np.asarray((logs - gone * g.seg).sum(axis=0), dtype=np.float64)


def _data(tg: Array, vol: _Volume, season: Array, rng: Rng) -> Array:
    """Kafka's bytes on the volume (without the filesystem's overhead)."""
    sigma = float(rng.uniform(0.05, 0.2))  # AR(1) noise of mean one over 0.5-3 hours
    phi = math.exp(-STEP / (float(rng.uniform(0.5, 3.0)) * HOUR))
    raw = pd.Series(rng.normal(size=tg.size)).ewm(alpha=1.0 - phi, adjust=False).mean().to_numpy()
    raw *= sigma / math.sqrt((1.0 - phi) / (1.0 + phi))
    noise = np.exp(raw - sigma**2 / 2.0)
    total = np.zeros_like(tg)
    for g in vol.groups:
        written = np.cumsum(_rate(tg, g, season, noise, rng)) * STEP
        usage = _group_usage(tg, written, g, rng)
        arrived = np.clip((tg - g.moved_in[0]) / (g.moved_in[1] * HOUR), 0.0, 1.0)
        total += usage * arrived * (tg < g.moved_out)
    if vol.replaced is not None:  # a fresh disk; the broker starts and re-replicates its share
        failed, swap_h, copy_h = vol.replaced
        back = np.clip((tg - failed - (swap_h + 0.5) * HOUR) / (copy_h * HOUR), 0.0, 1.0)
        total *= np.where(tg < failed, 1.0, back)
    return total


def _model(tg: Array, data: Array, vol: _Volume, rng: Rng) -> None:
    """Size the volume to its intended fill, then its consumed bytes on the grid."""
    shown, at = int((LEAD - SHOWN) / STEP), int(LEAD / STEP)
    mark = at + round(vol.target_h * HOUR / STEP) * (-1 if vol.fill == "full" else 1)
    need = data[shown : mark + 1].max() / (1.0 - vol.overhead)  # first reached by ``mark``
    least = data[shown : at + 1].max() * 1.0005 / (1.0 - vol.overhead)  # above all history
    if vol.fill == "never":
        need = data[shown:].max() / (float(rng.uniform(0.72, 0.94)) - vol.overhead)
    elif vol.fill == "full":  # full a few hours ago: the log dir went offline and stays full
        least = 0.0
    least = math.ceil(least / BLOCK) * BLOCK
    vol.cap = vol.cap_before = max(math.floor(need / BLOCK - 1) * BLOCK, least)
    if math.isfinite(vol.resize_at):  # grown online when it was 88-96 % full
        moment = int((LEAD + vol.resize_at) / STEP)
        before = data[shown:moment].max() / (float(rng.uniform(0.88, 0.96)) - vol.overhead)
        vol.cap_before = math.ceil(before / BLOCK) * BLOCK
        vol.cap = max(vol.cap, math.ceil(vol.cap_before * rng.uniform(1.1, 1.4) / BLOCK) * BLOCK)
    caps = np.where(tg < vol.resize_at, vol.cap_before, vol.cap)
    vol.cons = vol.overhead * caps + data
    if vol.fill == "full":
        k = shown + int(np.argmax(vol.cons[shown:] >= caps[shown:]))
        vol.cons[k:], vol.full_at = caps[k:], float(tg[k])


def _fill_hours(cons: Array, cap: float, at: int) -> float | None:
    hits = np.flatnonzero(cons[at:] >= cap)
    if hits.size == 0 or hits[0] == 0:
        return None if hits.size == 0 else 0.0
    k = at + int(hits[0])
    return float(k - 1 - at + (cap - cons[k - 1]) / (cons[k] - cons[k - 1])) * STEP / HOUR


def _rows(b: _Broker, vols: list[_Volume], tg: Array, rng: Rng) -> pd.DataFrame:
    """The broker's snapshots as published: every volume at each instant, blocks of 4 KiB."""
    start = -b.hist_days * DAY
    t = start + np.arange(int((b.end - start) // b.interval) + 1) * b.interval
    t += rng.uniform(0.0, 2.0, t.size)
    keep = t <= b.end
    for low, high in b.gaps:
        keep &= (t < low) | (t >= high)
    t = t[keep]
    order = np.sort(np.concatenate([np.arange(t.size), np.flatnonzero(rng.random(t.size) < b.dup)]))
    caps, used = [], []
    for vol in vols:
        cap = np.where(t < vol.resize_at, vol.cap_before, vol.cap)
        value = np.interp(t, tg, vol.cons) + rng.normal(0.0, 1e-5 * vol.cap, t.size)
        value = np.where(t >= vol.full_at, cap, np.clip(value, 0.0, cap - BLOCK))
        caps.append(cap)
        used.append(cap - np.floor((cap - value) / BLOCK) * BLOCK)
    cap_all = np.stack(caps, axis=1)[order].ravel()
    used_all = np.stack(used, axis=1)[order].ravel()
    stamps = _stamps(np.repeat(t[order] + b.skew, len(vols)))
    table = {"brokerId": np.full(cap_all.size, b.broker_id, dtype=np.int64), "snapshotAt": stamps}
    table |= {"volumeName": np.tile(np.array(b.names, dtype=object), order.size)}
    table |= {"path": np.tile(np.array(b.paths, dtype=object), order.size)}
    table |= {"capacity": cap_all.astype(np.int64), "consumed": used_all.astype(np.int64)}
    table |= {"free": np.maximum(cap_all - used_all - b.slack, 0.0).astype(np.int64)}
    return pd.DataFrame(table, columns=COLUMNS)
