"""A floor for the next day: the volume repeats yesterday's climb from where it stands now.

The envelope method and the 72 h line (``envelope_floor``) read days of history: retention
ceilings, weekly cycles, plateaus. Over the next few hours none of that matters as much as
what the disk does today. A volume at 98 % that climbs 0.3 % an hour past the peak it
reached before a weekend is not "below its retention ceiling"; it fills this morning.

The rule is a seasonal naive forecast over one daily cycle (``next_day_hours``): usage in
``k`` hours is usage now plus what the step-free envelope gained from the same hour
yesterday to ``k`` hours after it. It sees the time of day (a morning rise that stopped at
noon yesterday stops at noon today), and a reassignment or a re-replication yesterday does
not repeat, because steps are taken out of the envelope first. Its error at horizon ``k``
is the change of the day-over-day change, ``D(k) - D(0)`` with ``D(t) = v(t) - v(t - 24)``:
the band is where the repeated path crosses capacity give or take ``z sqrt(2)`` robust
standard deviations of ``D`` over the last two days. When the repeated day reaches capacity before
the other methods' fill time, it is reported (trend ``growing-next-day``). Pure numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import pairwise
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from spark_history.forecast_types import ForecastParams, Trend, VolumeForecast
from spark_history.robust_trend import FloatArray

FRESH_HOURS = 2.0
"""The newest hour must be at most this old: a stale level is not "now"."""
SPREAD_DAYS = 2
"""Days of day-over-day changes whose spread sets the band."""
MIN_SPREAD_PAIRS = 12
"""Hours with a value a day before them needed to measure that spread."""


@dataclass(frozen=True, slots=True)
class DayRepeat:
    """Where yesterday's climb, repeated from the level now, reaches capacity (hours from
    ``at``): the point, the early side, and the late side (None: not within the day)."""

    hours_to_full: float
    earliest: float
    latest: float | None
    rate: float
    """The repeated path's average growth per hour from the level now to capacity (where
    it reaches capacity at once: yesterday's growth per hour over the whole day)."""
    level: float


def next_day_fill(
    hours: FloatArray,
    values: FloatArray,
    capacity: float,
    params: ForecastParams,
    *,
    drops: npt.NDArray[np.bool_] | None = None,
) -> DayRepeat | None:
    """Yesterday's path from this hour, repeated from the newest value; None when it stays
    under capacity for ``next_day_hours``, or the data cannot tell: the newest hour older
    than ``FRESH_HOURS``, no value a day before it, too few day-over-day pairs, or a
    retention drop (``drops``: the hours after one) in the days it reads. A sawtooth's
    teeth do not keep to the clock: yesterday's climb from this hour may have started at
    the bottom of a tooth that today is at its top.

    ``hours`` are hourly bucket midpoints before ``at`` (ascending), ``values`` the
    step-free envelope at them."""
    if hours.size < 2 or hours[-1] < -FRESH_HOURS:
        return None
    read = hours > hours[-1] - (SPREAD_DAYS + 1) * params.next_day_hours
    if drops is not None and bool(np.any(drops[read])):
        return None
    by_offset = _by_offset(hours, values)
    day = round(params.next_day_hours)
    base = by_offset.get(day)
    if base is None:
        return None
    level = by_offset[0]
    spread = _day_over_day_spread(by_offset, day)
    if math.isnan(spread):
        return None
    margin = NormalDist().inv_cdf(0.5 + params.confidence / 2) * math.sqrt(2.0) * spread
    path = [(0, level)] + [
        (k, level + by_offset[day - k] - base) for k in range(1, day + 1) if day - k in by_offset
    ]
    point = _first_crossing(path, capacity)
    if point is None:
        return None
    earliest = _first_crossing(path, capacity - margin)
    latest = _first_crossing(path, capacity + margin)
    now = float(hours[-1])
    return DayRepeat(
        max(now + point, 0.0),
        max(now + (earliest if earliest is not None else 0.0), 0.0),
        None if latest is None else max(now + latest, 0.0),
        (capacity - level) / point if point > 0 else (level - base) / day,
        level,
    )


def with_next_day(result: VolumeForecast, repeat: DayRepeat | None) -> VolumeForecast:
    """The forecast so far, or the repeated day's fill when that comes first.

    - the repeated day fills first (or alone): its time, trend ``growing-next-day``; the
      band from the earlier of both early sides to the later of both late sides (open when
      the other forecast had no fill, or the day's own late side is not within the day);
    - the other fill comes first: it stands, its early side reaches the day's early side.
    """
    if repeat is None:
        return result
    other = result.hours_to_full
    if other is not None and other <= repeat.hours_to_full:
        low = result.hours_to_full_low
        if low is not None and repeat.earliest < low:
            return replace(result, hours_to_full_low=repeat.earliest)
        return result
    lows = [repeat.earliest, *([result.hours_to_full_low] if other is not None else [])]
    high = result.hours_to_full_high if other is not None else None
    if high is not None and repeat.latest is not None:
        high = max(high, repeat.latest)
    return VolumeForecast(
        Trend.GROWING_NEXT_DAY,
        repeat.rate,
        math.nan,
        math.nan,
        repeat.level,
        repeat.hours_to_full,
        min(low for low in lows if low is not None),
        high,
        result.steps,
        result.drops,
    )


def _by_offset(hours: FloatArray, values: FloatArray) -> dict[int, float]:
    """Values by whole hours before the newest one (0 is the newest)."""
    offsets = np.rint(hours[-1] - hours).astype(np.int64)
    return {int(offset): float(value) for offset, value in zip(offsets, values, strict=True)}


def _day_over_day_spread(by_offset: dict[int, float], day: int) -> float:
    """Robust standard deviation (MAD) of ``v(t) - v(t - day)`` over the last
    ``SPREAD_DAYS`` days; NaN with fewer than ``MIN_SPREAD_PAIRS`` pairs."""
    changes = [
        by_offset[offset] - by_offset[offset + day]
        for offset in range(SPREAD_DAYS * day)
        if offset in by_offset and offset + day in by_offset
    ]
    if len(changes) < MIN_SPREAD_PAIRS:
        return math.nan
    array = np.asarray(changes, dtype=np.float64)
    return 1.4826 * float(np.median(np.abs(array - np.median(array))))


def _first_crossing(path: list[tuple[int, float]], threshold: float) -> float | None:
    """Hours until ``path`` (whole hours from 0, the level now) first reaches ``threshold``,
    interpolated between consecutive hours (not across a missing one); None if it does not."""
    if path[0][1] >= threshold:
        return 0.0
    for (hour, value), (next_hour, next_value) in pairwise(path):
        if next_value >= threshold:
            if next_hour - hour > 1:
                return float(next_hour)
            return hour + (threshold - value) / (next_value - value)
    return None
