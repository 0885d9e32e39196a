"""The process behind the field scenarios: broker clocks, traffic and Kafka's log retention.

Time is in hours relative to the forecast instant (negative: history, positive: the future the
truth is read from). Bytes are *nominal*: a volume is designed in units where its data area is
about 1.0, and its scenario multiplies every byte quantity (traffic, segment sizes,
``retention.bytes``, compacted key sets) by one factor at the end. Kafka's retention rules are
homogeneous in bytes, so that factor changes the scale of the process, never its shape.

Traffic of one topic group is ``mean rate x daily cycle (broker-local hour) x weekend factor
(broker-local weekdays) x exp(AR(1) in log-rate, hourly) x trend``; it is integrated on a
5-minute grid into the bytes written since the grid began. Partitions get uneven shares (key
skew) and their own segment phases. Retention runs as Kafka runs it: every 5 minutes (the grid)
the log manager deletes whole *closed* segments whose newest record is older than
``retention.ms``, or the oldest ones while the log stays above ``retention.bytes``; a deletion
at a check takes effect just after it, so the grid samples hold every sawtooth peak. Compacted
partitions hold a live key set that grows with new keys plus a dirty tail the cleaner removes
once it is as big as the clean part (``min.cleanable.dirty.ratio`` 0.5).

One design per base kind, built from these parts, is in ``history_scenarios_field_kinds``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]

STEP_H = 5.0 / 60.0
"""The process grid: Kafka's ``log.retention.check.interval.ms`` (5 minutes)."""
DAY = 24.0
WARMUP_H = 8 * DAY
"""The process runs this long before a broker's visible history (longest retention: 7 days)."""


@dataclass(frozen=True)
class Region:
    zone: str
    weekend: tuple[int, ...]
    """Local weekdays with weekend traffic, Monday = 0."""


REGIONS = (
    Region("Europe/Berlin", (5, 6)),
    Region("Europe/London", (5, 6)),
    Region("America/New_York", (5, 6)),
    Region("America/Los_Angeles", (5, 6)),
    Region("America/Sao_Paulo", (5, 6)),
    Region("Asia/Tokyo", (5, 6)),
    Region("Australia/Sydney", (5, 6)),
    Region("Asia/Riyadh", (4, 5)),
    Region("Asia/Jerusalem", (4, 5)),
    Region("Africa/Cairo", (4, 5)),
    Region("Asia/Kolkata", (6,)),
)


@dataclass(frozen=True)
class Clock:
    """One broker's process grid (hours from the forecast instant) in its local time."""

    grid: FloatArray
    local_hour: FloatArray
    weekend: npt.NDArray[np.bool_]

    def hourly(self) -> FloatArray:
        """Knots of the hourly noise processes, covering the grid."""
        return np.arange(math.floor(self.grid[0]), math.ceil(self.grid[-1]) + 1.0)


def make_clock(at: datetime, first_h: float, last_h: float, region: Region) -> Clock:
    first, last = math.floor(first_h / STEP_H), math.ceil(last_h / STEP_H)
    steps = np.arange(first, last + 1, dtype=np.int64)
    instants = pd.DatetimeIndex(pd.Timestamp(at) + pd.to_timedelta(steps * 300, unit="s"))
    local = instants.tz_convert(region.zone)
    local_hour = np.asarray(local.hour, dtype=np.float64) + np.asarray(local.minute) / 60.0
    weekend = np.isin(np.asarray(local.dayofweek), region.weekend)
    return Clock(steps.astype(np.float64) * STEP_H, local_hour, weekend)


def ar1(rng: np.random.Generator, length: int, phi: float, sd: float) -> FloatArray:
    """A stationary AR(1) series with standard deviation ``sd``."""
    shocks = rng.normal(0.0, sd * math.sqrt(1.0 - phi * phi), length).tolist()
    value = float(rng.normal(0.0, sd))
    out = []
    for shock in shocks:
        value = phi * value + shock
        out.append(value)
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class Profile:
    """The shape of one producer population's traffic."""

    daily_amplitude: float
    peak_hour: float
    weekend_factor: float
    noise_sd: float
    noise_phi: float

    @staticmethod
    def draw(rng: np.random.Generator, *, pronounced_week: bool = False) -> Profile:
        if pronounced_week:
            return Profile(
                float(rng.uniform(0.6, 0.85)),
                float(rng.uniform(11.0, 16.0)),
                float(rng.uniform(0.3, 0.36)),
                float(rng.uniform(0.05, 0.12)),
                float(rng.uniform(0.9, 0.97)),
            )
        return Profile(
            float(rng.uniform(0.15, 0.65)),
            float(rng.uniform(10.0, 21.0)),
            float(rng.uniform(0.3, 0.5)),
            float(rng.uniform(0.05, 0.25)),
            float(rng.uniform(0.9, 0.98)),
        )


@dataclass(frozen=True)
class Traffic:
    """Bytes a topic group has written since the start of the grid (non-decreasing)."""

    grid: FloatArray
    cumulative: FloatArray

    def written(self, hours: FloatArray) -> FloatArray:
        return np.interp(hours, self.grid, self.cumulative)

    def at(self, hour: float) -> float:
        return float(np.interp(hour, self.grid, self.cumulative))

    def scaled(self, factor: float) -> Traffic:
        return Traffic(self.grid, self.cumulative * factor)


def make_traffic(
    clock: Clock,
    rng: np.random.Generator,
    profile: Profile,
    mean_rate: float,
    trend: FloatArray | None = None,
) -> Traffic:
    """``mean_rate`` bytes/hour on average before the trend (which is 1 at the forecast instant)."""
    daily = 1.0 + profile.daily_amplitude * np.cos(
        2.0 * np.pi * (clock.local_hour - profile.peak_hour) / 24.0
    )
    weekly = np.where(clock.weekend, profile.weekend_factor, 1.0)
    knots = clock.hourly()
    noise = ar1(rng, len(knots), profile.noise_phi, profile.noise_sd)
    shape = daily * weekly * np.exp(np.interp(clock.grid, knots, noise))
    rate = mean_rate * shape / shape.mean()
    if trend is not None:
        rate = rate * trend
    steps = (rate[1:] + rate[:-1]) * (STEP_H / 2.0)
    return Traffic(clock.grid, np.concatenate(([0.0], np.cumsum(steps))))


def exponential_trend(grid: FloatArray, doubling_h: float) -> FloatArray:
    return np.exp2(np.minimum(grid / doubling_h, 60.0))


def ramp_trend(grid: FloatArray, middle_h: float, width_h: float, floor: float) -> FloatArray:
    """A new tenant: traffic from ``floor`` up to 1 along a logistic curve."""
    rising = 1.0 / (1.0 + np.exp(-np.clip((grid - middle_h) / width_h, -50.0, 50.0)))
    return floor + (1.0 - floor) * rising


def stop_trend(grid: FloatArray, stop_h: float, residual: float) -> FloatArray:
    return np.where(grid < stop_h, 1.0, residual)


def decay_trend(grid: FloatArray, start_h: float, time_constant_h: float) -> FloatArray:
    return np.where(grid < start_h, 1.0, np.exp(-(grid - start_h) / time_constant_h))


def last_check(hours: FloatArray) -> FloatArray:
    """The last retention check strictly before each instant (checks run on the grid)."""
    return (np.ceil(hours / STEP_H - 1e-6) - 1.0) * STEP_H


class Component(Protocol):
    """Bytes one group of logs (or other files) holds on a volume, at any instants."""

    def usage(self, hours: FloatArray) -> FloatArray: ...


@dataclass(frozen=True)
class DeleteLog:
    """Partitions of ``cleanup.policy=delete`` topics: a sawtooth of whole closed segments."""

    traffic: Traffic
    shares: FloatArray
    offsets: FloatArray
    """Bytes of each partition written before the grid began (its segment phase)."""
    segment: float
    retention_h: float | None = None
    retention_bytes: float | None = None
    """Per partition, like Kafka's ``retention.bytes``."""
    retention_cut: tuple[float, float] | None = None
    """(hour, new retention.ms in hours): an operator lowered the retention."""

    def _partition_bytes(self, hours: FloatArray) -> FloatArray:
        written = self.traffic.written(hours)
        return self.offsets[:, None] + self.shares[:, None] * written[None, :]

    def usage(self, hours: FloatArray) -> FloatArray:
        check = last_check(hours)
        deleted = np.zeros((len(self.shares), len(hours)))
        if self.retention_h is not None:
            keep = np.full_like(check, self.retention_h)
            if self.retention_cut is not None:
                keep = np.where(check >= self.retention_cut[0], self.retention_cut[1], keep)
            deleted = np.floor(self._partition_bytes(check - keep) / self.segment)
        if self.retention_bytes is not None:
            over = self._partition_bytes(check) - self.retention_bytes
            deleted = np.maximum(deleted, np.floor(over / self.segment))
        dropped: FloatArray = self.segment * np.maximum(deleted, 0.0).sum(axis=0)
        return self.traffic.written(hours) + float(self.offsets.sum()) - dropped


@dataclass(frozen=True)
class Unbounded:
    """Topics with ``retention.ms=-1``: every byte stays."""

    traffic: Traffic
    initial: float

    def usage(self, hours: FloatArray) -> FloatArray:
        return self.initial + self.traffic.written(hours)


@dataclass
class Compacted:
    """``cleanup.policy=compact`` partitions: live keys plus a dirty tail the cleaner drops."""

    traffic: Traffic
    shares: FloatArray
    live: FloatArray
    """Each partition's live key set at the start of the grid."""
    new_key_fraction: float
    dirty: FloatArray
    """Each partition's dirty tail at the start of the grid."""
    _cleanings: list[tuple[FloatArray, FloatArray]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        grid, written = self.traffic.grid, self.traffic.cumulative
        for share, live, dirty in zip(self.shares, self.live, self.dirty, strict=True):
            partition = share * written
            cleaned_at: list[float] = []
            base = [-float(dirty)]
            while len(cleaned_at) < 20_000:
                # dirty >= live  <=>  W - base >= live + k W  <=>  W (1 - k) >= live + base
                needed = (float(live) + base[-1]) / (1.0 - self.new_key_fraction)
                index = int(np.searchsorted(partition, needed, side="left"))
                if index >= len(grid):
                    break
                cleaned_at.append(float(grid[index]))
                base.append(float(partition[index]))
            self._cleanings.append((np.asarray(cleaned_at), np.asarray(base)))

    def usage(self, hours: FloatArray) -> FloatArray:
        written = self.traffic.written(hours)
        total = np.zeros_like(hours)
        for (cleaned_at, base), share, live in zip(
            self._cleanings, self.shares, self.live, strict=True
        ):
            partition = share * written
            # the cleaning at a grid instant takes effect just after it
            last = np.searchsorted(cleaned_at, hours, side="left")
            total += live + self.new_key_fraction * partition + partition - base[last]
        return total


@dataclass(frozen=True)
class Constant:
    """Files that neither grow nor go: an old topic nobody writes, Kafka's checkpoints."""

    size: float

    def usage(self, hours: FloatArray) -> FloatArray:
        return np.full_like(hours, self.size)


@dataclass(frozen=True)
class Temporary:
    """Something an operator put on the volume (a heap dump, a copied tarball), maybe removed."""

    size: float
    written_at: float
    write_h: float
    removed_at: float

    def usage(self, hours: FloatArray) -> FloatArray:
        growing = np.clip((hours - self.written_at) / self.write_h, 0.0, 1.0)
        return np.where(hours < self.removed_at, self.size * growing, 0.0)


@dataclass(frozen=True)
class MovedIn:
    """Partitions reassigned onto this volume: copied from the leaders over ``copy_h``."""

    inner: Component
    at: float
    copy_h: float

    def usage(self, hours: FloatArray) -> FloatArray:
        target = float(self.inner.usage(np.array([self.at + self.copy_h]))[0])
        copied = target * np.clip((hours - self.at) / self.copy_h, 0.0, None)
        return np.minimum(self.inner.usage(hours), copied)


@dataclass(frozen=True)
class MovedOut:
    """Partitions reassigned away: their logs are deleted once the reassignment completes."""

    inner: Component
    at: float

    def usage(self, hours: FloatArray) -> FloatArray:
        return np.where(hours <= self.at, self.inner.usage(hours), 0.0)


def total_usage(components: list[Component], hours: FloatArray) -> FloatArray:
    total = np.zeros_like(hours)
    for component in components:
        total += component.usage(hours)
    return total
