"""A topic's write (ingest) rate on one volume, from the series of its bytes (pure numpy).

While delete retention works, a topic's bytes are a saw: they climb at the write rate and drop
by a segment per partition whenever retention deletes one. A slope of the bytes themselves is
the *net* growth: the write rate before the topic reaches its retention bound, about 0 at the
plateau. The projection needs the write rate, so the series is rebuilt as if nothing had been
deleted (:func:`undeleted_series`): an interval whose bytes grew keeps its growth; an interval
whose bytes fell (a deletion, which hides the writes of that interval too) is counted at the
median rate of the intervals that grew. The rate is the Theil-Sen slope of that rebuilt series:
robust to a few odd intervals, equal to the climb rate before the plateau and to the climb
between drops at it.

Assumed: a fall is retention (or a partition moved away), never a burst of negative writes; the
write rate is steady over the lookback window (a daily cycle averages out over whole days).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from spark_history.forecast.robust_trend import theil_sen

FloatArray = npt.NDArray[np.float64]

MAX_POINTS = 400
"""Theil-Sen is quadratic in the points: a longer series is thinned evenly first."""


@dataclass(frozen=True, slots=True)
class IngestRate:
    bytes_per_second: float
    """Never negative."""
    drops: int
    """Intervals whose bytes fell (retention deleted, or a partition left)."""
    points: int


def undeleted_series(seconds: FloatArray, values: FloatArray) -> tuple[FloatArray, int]:
    """``values`` with every fall put back (see the module docstring); the number of falls.

    ``seconds`` strictly increasing."""
    steps = np.diff(values)
    spans = np.diff(seconds)
    falls = steps < 0
    climbing = ~falls & (spans > 0)
    typical = float(np.median(steps[climbing] / spans[climbing])) if climbing.any() else 0.0
    rebuilt = np.where(falls, typical * spans, steps)
    return np.concatenate(([values[0]], values[0] + np.cumsum(rebuilt))), int(falls.sum())


def ingest_rate(seconds: FloatArray, values: FloatArray) -> IngestRate:
    """The write rate (bytes per second) of the series ``values`` at ``seconds``.

    Points are sorted and a repeated instant keeps its last value; fewer than two points give
    a rate of 0."""
    if seconds.size < 2:
        return IngestRate(0.0, 0, int(seconds.size))
    order = np.argsort(seconds, kind="stable")
    times, series = seconds[order], values[order]
    keep = np.append(np.diff(times) > 0, True)
    times, series = times[keep], series[keep]
    if times.size < 2:
        return IngestRate(0.0, 0, int(times.size))
    rebuilt, drops = undeleted_series(times, series)
    slope = theil_sen(*_thinned(times, rebuilt)).slope
    return IngestRate(max(slope, 0.0), drops, int(series.size))


def net_growth_rate(seconds: FloatArray, values: FloatArray) -> float:
    """The net growth of ``values`` at ``seconds``, bytes per second: their Theil-Sen slope, 0
    when they fall or with fewer than two points (a longer series than :data:`MAX_POINTS` is
    thinned evenly first)."""
    if seconds.size < 2:
        return 0.0
    return max(theil_sen(*_thinned(seconds, values)).slope, 0.0)


def _thinned(seconds: FloatArray, values: FloatArray) -> tuple[FloatArray, FloatArray]:
    """At most :data:`MAX_POINTS` of the points, evenly spread, the first and last kept."""
    if seconds.size <= MAX_POINTS:
        return seconds, values
    chosen = np.unique(np.linspace(0, seconds.size - 1, MAX_POINTS).round().astype(np.int64))
    return seconds[chosen], values[chosen]
