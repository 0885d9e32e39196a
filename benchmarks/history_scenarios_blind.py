"""Blind scenarios for the history forecast: synthetic Kafka JBOD volume histories with truths.

Written WITHOUT reading the forecast (``spark_history/``), the other scenario generators
(``benchmarks/history_scenarios.py``, ``spark_history/synthetic.py``), the accuracy benchmarks
(``benchmarks/history_accuracy*.py``) or their docs: the model below comes only from how the
disks of real Kafka brokers behave, so that it shares no assumption with the forecast.

The underlying process, per volume, on a 5-minute grid that starts 8 days before the history
(warm-up, longer than any time retention) and ends ``horizon_hours`` after ``AT``:

- Topic streams write bytes at a producer rate: business-hours peak in the fleet's time zone
  (or a nightly batch window), weekends at a fraction of weekdays (strength varies per
  volume), a trend, and multiplicative AR(1) usage noise (log scale). After ``AT`` the noise
  has no new innovations: it decays to its conditional mean, so the truth is noiseless.
- On disk, a stream keeps everything written (long retention / compacted), or deletes whole
  segments per partition: time retention (a segment goes once its newest record is older
  than retention.ms) or size retention (oldest segments go while the partition exceeds
  retention.bytes). That yields plateaus and sawtooths under a retention ceiling.
- Older data (a static base) and a scale in bytes are solved for, so that each volume reaches
  a chosen level of its capacity at a reference instant and its capacity at a target instant.
- Events: a disk replacement (usage falls to the fresh filesystem's, re-replication refills it
  at a throttled rate over hours), a capacity resize (operators grow the volume when usage
  crosses an alert level), a retention cut (retention.ms lowered: a sudden drop), decommission
  (partitions moved away before the broker stops), a full disk staying full (log dir offline).

What a publisher would have published: a snapshot per broker every 5 minutes with a phase and
a few seconds of jitter, statvfs figures rounded to 4 KiB blocks with AR(1) measurement noise,
a fleet-wide ingest outage of hours, publisher outages of 1-3 days (some ending recently), a
volume missing while its disk is swapped, duplicates (retries and a replayed burst), clocks
minutes ahead or behind, retired brokers (with a tombstone or merely silent).

Truths come from the noiseless process simulated forward past ``AT`` (``fill_hours``: first
instant the consumed bytes reach the capacity in force, interpolated within a 5-minute step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import pandas as pd

from benchmarks.history_scenario_truth import Truth

AT = datetime(2026, 11, 18, 9, 30, tzinfo=UTC)
"""The evaluation instant: a Wednesday mid-morning (UTC)."""

STEP_S = 300
BLOCK = 4096
HOUR = 3600.0
DAY = 86400.0
WARMUP_S = 8 * DAY
_AT_S = AT.timestamp()

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

_PRIMARY = (
    "steady",
    "accelerating",
    "new-topic",
    "slowdown",
    "retention-plateau",
    "retention-growing",
)
_PRIMARY_P = (0.28, 0.16, 0.15, 0.11, 0.16, 0.14)
_NOMINAL = (480e9, 960e9, 1.92e12, 3.84e12, 2.0**40, 2 * 2.0**40, 4 * 2.0**40)


@dataclass(frozen=True)
class _Fleet:
    t: Floats
    at_idx: int
    hist_idx: int
    end_idx: int
    hist_start_s: float
    local_hour: Floats
    weekend: Bools
    outage: tuple[float, float]
    horizon_h: float


@dataclass(frozen=True)
class _Broker:
    broker_id: int
    volumes: int
    disk: str
    capacity: float
    start_s: float
    phase_s: float
    skew_s: float
    drift_s_per_day: float
    outage: tuple[float, float] | None
    duplicates: bool
    retired: str
    stop_s: float


@dataclass(frozen=True)
class _Design:
    primary: str
    mode: str
    target_h: float
    level: float
    headroom: float
    weekend: float
    night: float
    shift: float
    replacement: bool
    resize: bool
    retention_cut: bool


@dataclass(frozen=True)
class _Stream:
    weight: float
    batch: bool
    retention: str
    hours: float
    segments_per_day: float
    partitions: int
    start_s: float


@dataclass(frozen=True)
class _Samples:
    true_s: Floats
    stamp_ns: Ints
    take: Ints


def _steps(hours: float) -> int:
    return round(hours * HOUR / STEP_S)


def _ar1(rng: np.random.Generator, n: int, phi: float, sd: float) -> Floats:
    """A stationary AR(1) series (standard deviation ``sd``), vectorised block by block."""
    eps = rng.standard_normal(n) * sd * math.sqrt(1.0 - phi * phi)
    out = np.empty(n)
    prev = float(rng.standard_normal() * sd)
    block = max(1, int(300.0 / -math.log(phi)))
    for s in range(0, n, block):
        e = eps[s : s + block]
        power = phi ** np.arange(1, len(e) + 1)
        out[s : s + len(e)] = power * (prev + np.cumsum(e / power))
        prev = float(out[s + len(e) - 1])
    return out


def _make_fleet(rng: np.random.Generator, horizon_h: float) -> _Fleet:
    hist_start = _AT_S - float(rng.uniform(7.0, 10.0)) * DAY
    before = math.ceil((_AT_S - hist_start + WARMUP_S) / STEP_S)
    after = math.ceil(horizon_h * HOUR / STEP_S) + 1
    t = _AT_S + STEP_S * np.arange(-before, after + 1, dtype=np.float64)
    tz = float(rng.choice([-5.0, 0.0, 1.0, 2.0, 8.0]))
    local = t + tz * HOUR
    weekday = (np.floor(local / DAY).astype(np.int64) + 3) % 7  # 1970-01-01 was a Thursday
    out_start = float(rng.uniform(hist_start + DAY, _AT_S - 2 * DAY))
    return _Fleet(
        t=t,
        at_idx=before,
        hist_idx=int(np.searchsorted(t, hist_start)),
        end_idx=before + after - 1,
        hist_start_s=hist_start,
        local_hour=(local % DAY) / HOUR,
        weekend=weekday >= 5,
        outage=(out_start, out_start + float(rng.uniform(3.0, 18.0)) * HOUR),
        horizon_h=horizon_h,
    )


def _split_volumes(rng: np.random.Generator, volumes: int) -> list[int]:
    sizes, left = [], volumes
    while left > 0:
        n = min(left, int(rng.integers(2, 7)))
        if left - n == 1:
            n = left if left <= 6 else n - 1
        sizes.append(n)
        left -= n
    return sizes


def _plan_brokers(rng: np.random.Generator, volumes: int, fleet: _Fleet) -> list[_Broker]:
    sizes = _split_volumes(rng, volumes)
    nb = len(sizes)
    order = [int(b) for b in rng.permutation(nb)]
    n_ret = 0 if nb < 3 else max(min(2, nb // 3), round(0.08 * nb))
    retired = {b: ("tombstone" if i % 2 == 0 else "silent") for i, b in enumerate(order[:n_ret])}
    live = order[n_ret:]
    skewed = set(live[: max(1, round(0.08 * nb))])
    shuffled = [int(b) for b in rng.permutation(live)]
    with_outage = shuffled[: max(1, round(0.2 * len(live)))]
    brokers, broker_id = [], int(rng.integers(0, 100))
    for b, n in enumerate(sizes):
        broker_id += 1 + int(rng.random() < 0.15)
        start = fleet.hist_start_s + float(rng.uniform(0.0, 2 * HOUR))
        outage = None
        if b in with_outage:
            length = float(rng.uniform(1.0, 3.0)) * DAY
            recent = with_outage.index(b) % 2 == 0 or _AT_S - start < length + 3 * DAY
            end = (
                _AT_S - float(rng.uniform(2.0, 12.0)) * HOUR
                if recent
                else float(rng.uniform(start + length + DAY, _AT_S - DAY))
            )
            outage = (end - length, end)
        sign = 1.0 if rng.random() < 0.5 else -1.0
        brokers.append(
            _Broker(
                broker_id=broker_id,
                volumes=n,
                disk=str(rng.choice(["nvme", "xvd"])),
                capacity=math.floor(float(rng.choice(_NOMINAL)) * rng.uniform(0.95, 0.985) / BLOCK)
                * BLOCK,
                start_s=start,
                phase_s=float(rng.uniform(0.0, STEP_S)),
                skew_s=sign * float(rng.uniform(2.0, 12.0)) * 60 if b in skewed else 0.0,
                drift_s_per_day=float(rng.uniform(-20.0, 20.0)) if b in skewed else 0.0,
                outage=outage,
                duplicates=bool(rng.random() < 0.25),
                retired=retired.get(b, ""),
                stop_s=_AT_S - float(rng.uniform(1.5, 5.0)) * DAY if b in retired else _AT_S,
            )
        )
    return brokers


def _broker_samples(rng: np.random.Generator, fleet: _Fleet, broker: _Broker) -> _Samples:
    first = broker.start_s + broker.phase_s
    n = int((broker.stop_s - first) // STEP_S) + 1
    t: Floats = (
        first
        + STEP_S * np.arange(n, dtype=np.float64)
        + np.clip(rng.normal(0.0, 1.5, n), -8.0, 8.0)
    )
    keep = (t < broker.stop_s) & (rng.random(n) > 0.003)
    keep &= ~((t >= fleet.outage[0]) & (t < fleet.outage[1]))
    if broker.outage is not None:
        keep &= ~((t >= broker.outage[0]) & (t < broker.outage[1]))
    t = t[keep]
    stamp = t + broker.skew_s + broker.drift_s_per_day * (t - _AT_S) / DAY
    stamp_ns = np.round(stamp * 1000.0).astype(np.int64) * 1_000_000
    take = np.arange(len(t), dtype=np.int64)
    if broker.duplicates and len(t) > 60:
        counts = np.ones(len(t), dtype=np.int64)
        counts[rng.random(len(t)) < rng.uniform(0.003, 0.02)] += 1
        burst = int(rng.integers(0, len(t) - 30))
        counts[burst : burst + int(rng.integers(5, 31))] += 1
        take = np.repeat(take, counts)
    return _Samples(true_s=t, stamp_ns=stamp_ns, take=take)


def _design(rng: np.random.Generator, broker: _Broker) -> _Design:
    primary = str(rng.choice(_PRIMARY, p=_PRIMARY_P))
    plateau = primary == "retention-plateau"
    draw = float(rng.random())
    mode = "nofill"
    if not broker.retired and not plateau:
        mode = "full" if draw < 0.07 else "fill" if draw < 0.63 else "nofill"
    target = float(rng.uniform(6.0, 160.0)) if mode == "fill" else float(rng.uniform(3.0, 48.0))
    level = float(rng.uniform(0.25, 0.9))
    if mode == "fill":
        level = min(0.97, max(0.2, 1.0 - target / float(rng.uniform(250.0, 1500.0))))
    elif mode == "full":
        level = float(rng.uniform(0.8, 0.95))
    headroom = level + (1.0 - level) / float(rng.uniform(1.2, 6.0))
    if plateau:
        level = float(rng.uniform(0.3, 0.85))
        headroom = level * float(rng.uniform(1.01, 1.08))
    free_to_act = not broker.retired and mode != "full"
    return _Design(
        primary=primary,
        mode=mode,
        target_h=target,
        level=level,
        headroom=headroom,
        weekend=float(rng.uniform(0.1, 0.95)),
        night=float(rng.uniform(0.15, 0.6)),
        shift=float(rng.uniform(-1.0, 1.5)),
        replacement=free_to_act and rng.random() < 0.06,
        resize=free_to_act and rng.random() < 0.08,
        retention_cut=bool(rng.random() < 0.12),
    )


def _streams(rng: np.random.Generator, primary: str) -> list[_Stream]:
    if primary == "retention-plateau":
        kinds = [str(rng.choice(["time", "size"])) for _ in range(int(rng.integers(2, 5)))]
    elif primary == "retention-growing":
        kinds = ["time"] * int(rng.integers(2, 4))
    else:
        kinds = ["none"] * (1 + int(rng.random() < 0.4))
        kinds += [str(rng.choice(["time", "size"])) for _ in range(int(rng.integers(0, 3)))]
    streams = [
        _Stream(
            weight=1.0 if i == 0 else float(rng.uniform(0.2, 1.5)),
            batch=i > 0 and bool(rng.random() < 0.2),
            retention=kind,
            hours=float(rng.uniform(12.0, 168.0) if kind == "time" else rng.uniform(6.0, 72.0)),
            segments_per_day=float(rng.uniform(1.0, 24.0)),
            partitions=int(rng.integers(1, 7)),
            start_s=-math.inf,
        )
        for i, kind in enumerate(kinds)
    ]
    if primary == "new-topic":
        streams.append(
            _Stream(
                weight=float(rng.uniform(0.6, 4.0)) * sum(s.weight for s in streams),
                batch=False,
                retention=str(rng.choice(["none", "time"])),
                hours=float(rng.choice([24.0, 72.0, 168.0])),
                segments_per_day=float(rng.uniform(2.0, 24.0)),
                partitions=int(rng.integers(1, 7)),
                start_s=_AT_S - float(rng.uniform(0.25, 4.0)) * DAY,
            )
        )
    return streams


def _profile(fleet: _Fleet, design: _Design, batch: bool) -> Floats:
    h = (fleet.local_hour - design.shift) % 24.0
    if batch:  # a nightly job, weekends included
        return 0.1 + 4.0 * np.exp(-0.5 * ((h - 2.0) / 0.8) ** 2)
    rise = 1.0 / (1.0 + np.exp(-(h - 8.0) / 0.7))
    fall = 1.0 / (1.0 + np.exp((h - 18.5) / 1.0))
    day = design.night + (1.0 - design.night) * rise * fall
    return np.where(fleet.weekend, design.weekend * day, day)


def _trend(rng: np.random.Generator, fleet: _Fleet, primary: str, first: bool) -> Floats:
    days = (fleet.t - _AT_S) / DAY
    if primary == "retention-plateau":
        return np.ones_like(days)
    if primary == "retention-growing":
        return np.exp(float(rng.uniform(0.03, 0.12)) * days)
    if first and primary == "accelerating":  # a topic onboarding more producers
        mid, tau = float(rng.uniform(-2.5, 1.5)), float(rng.uniform(0.4, 1.5))
        return 1.0 + float(rng.uniform(2.0, 9.0)) / (1.0 + np.exp(-(days - mid) / tau))
    if first and primary == "slowdown":  # producers moved to another cluster
        moved = -float(rng.uniform(0.3, 4.0))
        return np.where(days < moved, 1.0, float(rng.uniform(0.1, 0.5)))
    return np.exp(float(rng.uniform(-0.01, 0.04)) * days)


def _usage_noise(rng: np.random.Generator, fleet: _Fleet) -> Floats:
    phi, sd = float(rng.uniform(0.97, 0.995)), float(rng.uniform(0.05, 0.35))
    x = _ar1(rng, len(fleet.t), phi, sd)
    ahead = np.arange(1, len(x) - fleet.at_idx)
    x[fleet.at_idx + 1 :] = x[fleet.at_idx] * phi**ahead  # no innovations after AT
    return np.exp(x - sd * sd / 2.0)


def _on_disk(
    rng: np.random.Generator, fleet: _Fleet, stream: _Stream, rate: Floats, cut: bool
) -> Floats:
    written = np.cumsum(rate)
    if stream.retention == "none":
        return written
    daily = float(rate[fleet.hist_idx : fleet.at_idx].mean()) * DAY / STEP_S + 1e-9
    lag = np.full(len(rate), _steps(stream.hours), dtype=np.int64)
    if cut and stream.retention == "time":  # retention.ms lowered by an operator
        cut_idx = fleet.at_idx - _steps(float(rng.uniform(12.0, 120.0)))
        lag[cut_idx:] = _steps(stream.hours * float(rng.uniform(0.25, 0.6)))
    index = np.arange(len(rate)) - lag
    total = np.zeros(len(rate))
    for share in rng.dirichlet(np.full(stream.partitions, 4.0)):
        mine = share * written
        segment = share * daily / stream.segments_per_day
        if stream.retention == "time":
            offset = float(rng.random()) * segment
            old = np.where(index >= 0, mine[np.maximum(index, 0)], 0.0)
            boundary = offset + segment * np.floor((old - offset) / segment)
            total += mine - np.where(old >= offset, boundary, 0.0)
        else:
            limit = share * daily * stream.hours / 24.0
            total += mine - segment * np.maximum(0.0, np.floor((mine - limit) / segment))
    return total


def _underlying(rng: np.random.Generator, fleet: _Fleet, design: _Design) -> tuple[Floats, bool]:
    """Bytes on disk of the volume's topics, in arbitrary units (scaled by ``_calibrate``), and
    whether a time retention was cut."""
    total = np.zeros(len(fleet.t))
    cut = design.retention_cut
    for i, stream in enumerate(_streams(rng, design.primary)):
        rate = stream.weight * _profile(fleet, design, stream.batch)
        rate = rate * _trend(rng, fleet, design.primary, i == 0) * _usage_noise(rng, fleet)
        rate = np.where(fleet.t >= stream.start_s, rate, 0.0)
        total += _on_disk(rng, fleet, stream, rate, cut)
        cut = cut and stream.retention != "time"
    return total, design.retention_cut and not cut


def _calibrate(
    rng: np.random.Generator, fleet: _Fleet, broker: _Broker, design: _Design, s: Floats
) -> tuple[Floats, Floats, bool]:
    """Bytes consumed (static base + scaled topics) and the capacity in force on the grid."""
    at, h = fleet.at_idx, fleet.hist_idx
    final = broker.capacity
    if design.resize:
        final = math.floor(broker.capacity * float(rng.choice([1.25, 1.5, 2.0])) / BLOCK) * BLOCK
    ref, target, reach = at, fleet.end_idx, design.headroom
    if design.mode == "fill":
        target, reach = min(fleet.end_idx, at + _steps(design.target_h)), 1.0
    elif design.mode == "full":
        target, reach = at - _steps(design.target_h), 1.0
        ref = max(h, target - _steps(72.0))
    peak = float(s[h : target + 1].max())
    if design.mode == "fill":  # it must not fill within the history already
        peak = max(peak, 1.002 * float(s[h : at + 1].max()))
    rho = min(design.level / reach, 0.99)
    base = max(0.0, (rho * peak - float(s[ref])) / (1.0 - rho))
    consumed = (base + s) * (reach * final / (base + peak))
    capacity = np.full(len(s), final)
    if design.resize:  # grown by operators once a usage alert (85-95 %) fired
        chosen = at - _steps(float(rng.uniform(12.0, 144.0)))
        alert = float(consumed[h:chosen].max()) / float(rng.uniform(0.85, 0.95))
        before = math.floor(alert / BLOCK) * BLOCK
        if before > final / 1.15:
            return consumed, capacity, False
        capacity[:chosen] = before
        return consumed, capacity, True
    return consumed, capacity, False


def _published(fleet: _Fleet, broker: _Broker, start: float, hours: float) -> bool:
    """Whether no outage hides any of ``hours`` from ``start``."""
    end = start + hours * HOUR + 4 * HOUR
    outages = [fleet.outage] + ([broker.outage] if broker.outage else [])
    return all(end <= lo or start >= hi for lo, hi in outages)


def _events(
    rng: np.random.Generator, fleet: _Fleet, broker: _Broker, design: _Design, c: Floats
) -> tuple[Floats, tuple[float, float] | None]:
    """Disk replacement (and the volume's absence meanwhile), decommission draining."""
    gap = None
    c = c.copy()
    if design.replacement:
        refill_h = float(rng.uniform(2.0, 12.0))
        lo, hi = fleet.hist_idx + _steps(24.0), fleet.at_idx - _steps(12.0 + refill_h)
        tries = [int(d) for d in rng.integers(lo, max(hi, lo + 1), 20)]
        seen = [d for d in tries if _published(fleet, broker, fleet.t[d] - 4 * HOUR, refill_h)]
        d = (seen or tries)[0]  # a swap during an outage would go unseen: avoid it if possible
        fresh = c[d] * float(rng.uniform(0.001, 0.01))
        ramp = fresh + c[d] * (fleet.t - fleet.t[d]) / (refill_h * HOUR)
        c[d:] = np.minimum(c[d:], ramp[d:])
        gap = (float(fleet.t[d]) - float(rng.uniform(0.5, 4.0)) * HOUR, float(fleet.t[d]))
    if broker.retired == "tombstone":  # reassigned away before the broker stopped
        drain = float(rng.uniform(4.0, 20.0)) * HOUR
        c = c * np.clip((broker.stop_s - fleet.t) / drain, 0.01, 1.0)
    return c, gap


def _fill_hours(fleet: _Fleet, c: Floats, capacity: Floats) -> tuple[float | None, int]:
    h, at = fleet.hist_idx, fleet.at_idx
    over = np.flatnonzero(c[h:] >= capacity[h:])
    if not len(over):
        return None, -1
    i = int(over[0]) + h
    if i <= at:
        return 0.0, i
    frac = (capacity[i] - c[i - 1]) / (c[i] - c[i - 1])
    hours = (i - 1 - at + float(frac)) * STEP_S / HOUR
    return (round(hours, 4) if hours <= fleet.horizon_h else None), i


def _observe(
    rng: np.random.Generator,
    fleet: _Fleet,
    samples: _Samples,
    c: Floats,
    capacity: Floats,
    *,
    gap: tuple[float, float] | None,
) -> tuple[Ints, Ints, Ints]:
    t = samples.true_s
    true = np.interp(t, fleet.t, c)
    cap = capacity[np.searchsorted(fleet.t, t, side="right") - 1]
    noise = _ar1(
        rng, len(t), float(rng.uniform(0.9, 0.995)), float(cap[-1]) * 10 ** rng.uniform(-3.7, -2.7)
    )
    seen = np.where(true >= cap, cap, np.clip(true + noise, 0.0, cap - BLOCK))
    seen = np.floor(seen / BLOCK) * BLOCK
    keep = np.ones(len(t), dtype=bool)
    if gap is not None:
        keep = ~((t >= gap[0]) & (t < gap[1]))
    take = samples.take[keep[samples.take]]
    take = take[np.argsort(samples.stamp_ns[take], kind="stable")]
    return samples.stamp_ns[take], cap[take].astype(np.int64), seen[take].astype(np.int64)


def _labels(design: _Design, broker: _Broker, events: tuple[bool, bool], fill: float | None) -> str:
    flags = {
        "weekly": design.weekend < 0.5,
        "retention-cut": events[0],
        "disk-replacement": design.replacement,
        "resize": events[1],
        "full": fill == 0.0,
        "gap": broker.outage is not None,
        "duplicates": broker.duplicates,
        "skew": broker.skew_s != 0.0,
        "retired": bool(broker.retired),
        "tombstone": broker.retired == "tombstone",
    }
    return "+".join([design.primary] + [name for name, on in flags.items() if on])


def _volume(
    rng: np.random.Generator, fleet: _Fleet, broker: _Broker, v: int, samples: _Samples
) -> tuple[pd.DataFrame, Truth]:
    design = _design(rng, broker)
    s, cut = _underlying(rng, fleet, design)
    raw, capacity, resized = _calibrate(rng, fleet, broker, design, s)
    c, gap = _events(rng, fleet, broker, design, raw)
    fill, first = _fill_hours(fleet, c, capacity)
    if first >= 0:
        c[first:] = capacity[first:]  # a full log dir goes offline: no more writes
    stamps, cap, used = _observe(rng, fleet, samples, c, capacity, gap=gap)
    name = f"/dev/nvme{v}n1" if broker.disk == "nvme" else f"/dev/xvd{chr(ord('b') + v)}"
    path = f"/var/lib/kafka/data-{v}" if broker.disk == "nvme" else f"/data/kafka-{v}"
    rows = pd.DataFrame(
        {
            "brokerId": np.full(len(stamps), broker.broker_id, dtype=np.int64),
            "volumeName": name,
            "path": path,
            "snapshotAt": pd.to_datetime(stamps, unit="ns", utc=True),
            "capacity": cap,
            "consumed": used,
            "free": cap - used,
        }
    )
    truth = Truth(
        broker_id=broker.broker_id,
        volume_name=name,
        kind=_labels(design, broker, (cut, resized), fill),
        fill_hours=None if broker.retired else fill,
        retired=bool(broker.retired),
    )
    return rows, truth


def generate(
    seed: int, volumes: int, horizon_hours: float
) -> tuple[pd.DataFrame, pd.DataFrame, list[Truth]]:
    """Rows (snapshots as published), tombstones, and one truth per (brokerId, volumeName)."""
    if volumes < 1:
        raise ValueError("volumes must be >= 1")
    rng = np.random.default_rng(seed)
    fleet = _make_fleet(rng, horizon_hours)
    frames: list[pd.DataFrame] = []
    truths: list[Truth] = []
    tombstones: list[tuple[int, int]] = []
    for broker in _plan_brokers(rng, volumes, fleet):
        samples = _broker_samples(rng, fleet, broker)
        if broker.retired == "tombstone":
            deleted = broker.stop_s + float(rng.uniform(300.0, 3 * HOUR))
            tombstones.append((broker.broker_id, round(deleted * 1000)))
        for v in range(broker.volumes):
            rows, truth = _volume(rng, fleet, broker, v, samples)
            frames.append(rows)
            truths.append(truth)
    tomb = pd.DataFrame(
        {
            "brokerId": np.array([b for b, _ in tombstones], dtype=np.int64),
            "snapshotAt": pd.to_datetime(
                np.array([ms for _, ms in tombstones], dtype=np.int64), unit="ms", utc=True
            ),
        }
    )
    return pd.concat(frames, ignore_index=True), tomb, truths
