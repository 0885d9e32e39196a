"""Seeded synthetic snapshot histories whose true fill time is known, for tests and benchmarks.

Why synthetic: a forecaster can only be scored against a future that is known, and real
histories do not come with one. Every trace here is a noiseless shape (the truth) plus
measurement noise and clock jitter (what a publisher would have sent). The shapes are the ones
Kafka volumes show:

- ``linear``: steady growth, optionally with a daily traffic cycle;
- ``step``: growth plus one or two sudden jumps in the past (a new topic or a reassignment);
- ``plateau``: growth until retention is reached, then flat with a small retention sawtooth;
- ``sawtooth``: retention deleting whole segments: usage climbs, drops, climbs to the same peak;
- ``quiet``: an idle volume, flat apart from noise;
- ``near_full``: a volume that climbs to within a few percent of full every day or few and is
  then cleaned up (retention on a large segment, or an operator): it never fills, but it
  crosses soft and hard limits, which is what threshold tuning needs to replay.

The truth of a trace is the first time its noiseless shape reaches the capacity (``None`` when
that never happens within the search limit). Only the past carries noise and steps, so the
future is fully determined by the shape and a forecaster can in principle get it right.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from schemas.snapshot import SNAPSHOT_SCHEMA_VERSION, LimitType
from schemas.wire_types import format_instant

TraceKind = Literal["linear", "step", "plateau", "sawtooth", "quiet", "near_full"]
TRACE_KINDS: tuple[TraceKind, ...] = ("linear", "step", "plateau", "sawtooth", "quiet", "near_full")

FloatArray = npt.NDArray[np.float64]

GIB = 1024**3
_FILL_SEARCH_HOURS = 24 * 400
_FILL_SEARCH_STEP_HOURS = 1 / 12
DAILY_PERIOD_HOURS = 24.0


@dataclass(frozen=True, slots=True)
class TraceShape:
    """The noiseless usage of one volume, in bytes, as a function of hours since ``at``.

    ``hours`` are relative to the evaluation instant: negative in the past, positive in the
    future. Steps happen only in the past (``step_hours`` are negative).
    """

    capacity: int
    level_at: float
    """Trend value at hour 0 (before the cycle and sawtooth are added)."""
    growth_per_hour: float
    cycle_amplitude: float = 0.0
    cycle_phase: float = 0.0
    step_hours: tuple[float, ...] = ()
    step_sizes: tuple[float, ...] = ()
    plateau_level: float | None = None
    """Retention ceiling of the trend; ``None`` for unbounded growth."""
    sawtooth_period_hours: float = 0.0
    sawtooth_depth: float = 0.0

    def consumed(self, hours: FloatArray) -> FloatArray:
        """Noiseless consumed bytes at ``hours`` (clipped to [1% of capacity, capacity])."""
        clipped: FloatArray = np.clip(
            self.unclipped(hours), 0.01 * self.capacity, float(self.capacity)
        )
        return clipped

    def unclipped(self, hours: FloatArray) -> FloatArray:
        """The shape before clipping: above capacity once the volume would be full."""
        trend = self.level_at + self.growth_per_hour * hours
        for step_hour, size in zip(self.step_hours, self.step_sizes, strict=True):
            trend = trend - np.where(hours < step_hour, size, 0.0)
        if self.plateau_level is not None:
            trend = np.minimum(trend, self.plateau_level)
        if self.sawtooth_period_hours > 0:
            phase = np.mod(hours, self.sawtooth_period_hours) / self.sawtooth_period_hours
            trend = trend - self.sawtooth_depth * (1.0 - phase)
        if self.cycle_amplitude:
            angle = 2 * math.pi * hours / DAILY_PERIOD_HOURS + self.cycle_phase
            trend = trend + self.cycle_amplitude * np.sin(angle)
        result: FloatArray = trend
        return result

    def fill_hours(self, search_hours: float = _FILL_SEARCH_HOURS) -> float | None:
        """Hours after ``at`` until the noiseless usage first reaches capacity, or ``None``."""
        grid = np.arange(0.0, search_hours, _FILL_SEARCH_STEP_HOURS)
        full = np.nonzero(self.unclipped(grid) >= self.capacity)[0]
        return float(grid[full[0]]) if full.size else None


@dataclass(frozen=True, slots=True)
class Trace:
    """One synthetic volume: identity, shape, measurement noise and its known truth."""

    broker_id: int
    volume_name: str
    kind: TraceKind
    shape: TraceShape
    noise_sd: float
    true_fill_hours: float | None

    @property
    def plateaued(self) -> bool:
        """True for shapes that never fill (retention-bound or idle)."""
        return self.kind in ("plateau", "sawtooth", "quiet", "near_full")


@dataclass(frozen=True, slots=True)
class HistoryConfig:
    """What to generate; the defaults give a week of one-minute snapshots."""

    at: datetime = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    history_hours: float = 7 * 24.0
    interval_seconds: float = 60.0
    jitter_seconds: float = 5.0
    missing_fraction: float = 0.01
    """Snapshots dropped at random (publisher restarts, lost messages)."""
    volumes_per_broker: int = 4
    kinds: Sequence[TraceKind] = field(default=TRACE_KINDS)


def make_trace(
    rng: np.random.Generator,
    broker_id: int,
    volume_index: int,
    kind: TraceKind,
    history_hours: float,
) -> Trace:
    """Draw one trace of ``kind`` with parameters typical of a Kafka data volume."""
    capacity = int(rng.choice([500, 1000, 2000, 4000])) * GIB
    level = capacity * rng.uniform(0.35, 0.8)
    noise_sd = capacity * rng.uniform(0.0005, 0.003)
    cycle = capacity * rng.uniform(0.0, 0.04) if rng.random() < 0.7 else 0.0
    phase = rng.uniform(0, 2 * math.pi)
    if kind in ("linear", "step"):
        shape = _growing_shape(
            rng,
            kind,
            capacity=capacity,
            level=level,
            cycle=cycle,
            phase=phase,
            history_hours=history_hours,
        )
    elif kind == "plateau":
        shape = _plateau_shape(rng, capacity, level, cycle, phase)
    elif kind == "sawtooth":
        period = rng.uniform(6.0, 72.0)
        depth = capacity * rng.uniform(0.03, 0.12)
        shape = TraceShape(
            capacity,
            level,
            0.0,
            cycle / 2,
            phase,
            sawtooth_period_hours=period,
            sawtooth_depth=depth,
        )
    elif kind == "near_full":
        peak = capacity * rng.uniform(0.955, 0.985)
        shape = TraceShape(
            capacity,
            peak,
            0.0,
            sawtooth_period_hours=rng.uniform(24.0, 96.0),
            sawtooth_depth=capacity * rng.uniform(0.15, 0.35),
        )
    else:
        shape = TraceShape(capacity, level, 0.0)
        noise_sd = capacity * rng.uniform(0.0002, 0.001)
    return Trace(
        broker_id,
        f"/dev/vd{chr(ord('b') + volume_index)}",
        kind,
        shape,
        noise_sd,
        shape.fill_hours(),
    )


def _growing_shape(
    rng: np.random.Generator,
    kind: TraceKind,
    *,
    capacity: int,
    level: float,
    cycle: float,
    phase: float,
    history_hours: float,
) -> TraceShape:
    """A volume filling at a steady rate (``step``: with one or two sudden drops)."""
    # Fill between half a day and 50 days out (some beyond a 60-day horizon when slow).
    fill_target = rng.uniform(12.0, 50 * 24.0)
    # A fast filler is already high: keep the history start above 5% (no clipped knee).
    floor = (0.05 * capacity * fill_target + (capacity - cycle) * history_hours) / (
        fill_target + history_hours
    )
    level = max(level, floor)
    growth = (capacity - level - cycle) / fill_target
    steps: tuple[float, ...] = ()
    sizes: tuple[float, ...] = ()
    if kind == "step":
        count = int(rng.integers(1, 3))
        steps = tuple(sorted(float(-rng.uniform(0.05, 0.95) * history_hours) for _ in range(count)))
        sizes = tuple(float(capacity * rng.uniform(0.03, 0.08)) for _ in range(count))
    return TraceShape(capacity, level, growth, cycle, phase, steps, sizes)


def _plateau_shape(
    rng: np.random.Generator, capacity: int, level: float, cycle: float, phase: float
) -> TraceShape:
    """A volume that reached retention: growth until a knee, then a sawtooth plateau."""
    ceiling = level
    # Reached retention between 6 hours and 5 days ago, after growing for days.
    knee_hours_ago = rng.uniform(6.0, 5 * 24.0)
    growth = capacity * rng.uniform(0.002, 0.01)
    depth = capacity * rng.uniform(0.002, 0.01)
    return TraceShape(
        capacity,
        ceiling + growth * knee_hours_ago,
        growth,
        cycle,
        phase,
        plateau_level=ceiling,
        sawtooth_period_hours=rng.uniform(1.0, 8.0),
        sawtooth_depth=depth,
    )


def make_traces(seed: int, count: int, config: HistoryConfig | None = None) -> list[Trace]:
    """``count`` traces cycling through ``config.kinds``, grouped into brokers of equal size."""
    config = config or HistoryConfig()
    rng = np.random.default_rng(seed)
    traces = []
    for index in range(count):
        kind = config.kinds[index % len(config.kinds)]
        broker_id, volume_index = divmod(index, config.volumes_per_broker)
        traces.append(make_trace(rng, broker_id, volume_index, kind, config.history_hours))
    return traces


def snapshot_offsets(rng: np.random.Generator, config: HistoryConfig) -> FloatArray:
    """Hours (relative to ``at``, all <= 0) at which one broker publishes, with jitter and gaps."""
    count = int(config.history_hours * 3600 / config.interval_seconds)
    regular = -config.history_hours * 3600 + config.interval_seconds * np.arange(1, count + 1)
    jittered = regular + rng.uniform(-config.jitter_seconds, config.jitter_seconds, count)
    keep = rng.random(count) >= config.missing_fraction
    hours: FloatArray = np.minimum(jittered[keep], 0.0).astype(np.float64) / 3600.0
    return hours


def history_frame(
    traces: Sequence[Trace], seed: int, config: HistoryConfig | None = None
) -> pd.DataFrame:
    """Volume-level rows (the ingest's output columns) for ``traces``, noise and jitter added.

    Volumes of one broker share snapshot instants, as they do when one publisher measures them.
    """
    config = config or HistoryConfig()
    rng = np.random.default_rng(seed)
    frames = []
    for broker_id, broker_traces in _by_broker(traces):
        hours = snapshot_offsets(rng, config)
        instants = pd.to_datetime(config.at) + pd.to_timedelta(hours * 3600.0, unit="s")
        for trace in broker_traces:
            truth = trace.shape.consumed(hours)
            noisy = truth + rng.normal(0.0, trace.noise_sd, hours.size)
            consumed = np.clip(np.rint(noisy), 0, trace.shape.capacity).astype(np.int64)
            frames.append(
                pd.DataFrame(
                    {
                        "brokerId": np.int32(broker_id),
                        "volumeName": trace.volume_name,
                        "path": f"/var/lib/kafka/{trace.volume_name.rsplit('/', 1)[-1]}",
                        "snapshotAt": instants,
                        "capacity": np.int64(trace.shape.capacity),
                        "consumed": consumed,
                    }
                )
            )
    frame = pd.concat(frames, ignore_index=True)
    frame["snapshotAt"] = frame["snapshotAt"].astype("datetime64[us, UTC]")
    return frame


def _by_broker(traces: Sequence[Trace]) -> Iterator[tuple[int, list[Trace]]]:
    grouped: dict[int, list[Trace]] = {}
    for trace in traces:
        grouped.setdefault(trace.broker_id, []).append(trace)
    yield from sorted(grouped.items())


def snapshot_messages(
    frame: pd.DataFrame, soft_percent: float = 10.0, hard_percent: float = 5.0
) -> Iterator[dict[str, object]]:
    """Snapshot values (wire format, as dicts) for a volume-level frame, one per broker instant."""
    ordered = frame.sort_values(["snapshotAt", "brokerId", "volumeName"], kind="stable")
    limits = {
        "softLimit": {"type": LimitType.MIN_FREE_PERCENTAGE.value, "level": soft_percent},
        "hardLimit": {"type": LimitType.MIN_FREE_PERCENTAGE.value, "level": hard_percent},
    }
    columns = [
        ordered[name].to_numpy()
        for name in ("brokerId", "snapshotAt", "volumeName", "path", "capacity", "consumed")
    ]
    header: dict[str, object] | None = None
    volumes: list[dict[str, object]] = []
    current_key: tuple[int, object] | None = None
    for broker, instant, name, path, capacity, consumed in zip(*columns, strict=True):
        key = (int(broker), instant)
        if key != current_key:
            if header is not None:
                yield {**header, "volumes": volumes}
            stamp = pd.Timestamp(instant)
            stamp = stamp.tz_localize(UTC) if stamp.tzinfo is None else stamp
            header = {
                "schemaVersion": SNAPSHOT_SCHEMA_VERSION,
                "brokerId": int(broker),
                "snapshotAt": format_instant(stamp.to_pydatetime()),
                **limits,
            }
            volumes = []
            current_key = key
        volumes.append(
            {
                "volumeName": str(name),
                "path": str(path),
                "capacity": int(capacity),
                "consumed": int(consumed),
            }
        )
    if header is not None:
        yield {**header, "volumes": volumes}
