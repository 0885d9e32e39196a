"""Steps, retention drops and disk replacements in a volume's hourly envelope
(``envelope_forecast`` steps 2-3).

A jump up beyond the noise is a step (a new topic, a reassignment): the older points are
shifted up by it so it raises the level but not the rate. A jump down is a retention drop;
the teeth between drops tell whether usage is below an old ceiling.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from spark_history.robust_trend import FloatArray

if TYPE_CHECKING:
    from spark_history.forecast_types import ForecastParams


def remove_steps(
    hours: FloatArray, values: FloatArray, capacity: float, params: ForecastParams
) -> tuple[FloatArray, int, npt.NDArray[np.bool_], float]:
    """Shift the points before each up-step up by its size; flag retention drops.

    Returns the adjusted series, the number of steps, a mask of points that follow a drop,
    and the jump threshold used (a noise-level tolerance for comparing peaks).
    """
    jumps = np.diff(values)
    # Changes are judged against the typical rate times the time they span: the growth
    # accumulated across a gap in the history is not a step.
    spans = np.maximum(np.diff(hours), 1.0)
    rates = jumps / spans
    drop_mask = np.zeros(values.size, dtype=bool)
    if jumps.size < 3:
        return values.copy(), 0, drop_mask, params.min_jump_fraction * capacity
    # With two days or more, compare each hour's change with the same hour on other days:
    # the daily cycle's own rises and falls then stop hiding steps and drops.
    centre: FloatArray | float = float(np.median(rates))
    if hours[-1] - hours[0] >= 48:
        hour_of_day = np.mod(np.floor(hours[1:]), 24).astype(np.int64)
        profile = np.zeros(24)
        for hour in np.unique(hour_of_day):
            profile[hour] = np.median(rates[hour_of_day == hour])
        centre = profile[hour_of_day]
    deviation = jumps - centre * spans
    scale = 1.4826 * float(np.median(np.abs(deviation - np.median(deviation))))
    threshold = max(params.jump_sigmas * scale, params.min_jump_fraction * capacity)
    # Across a hole in the history the expected growth is only known roughly (the rate of
    # a weekday is not the rate of a weekend): a step must stand out by more the longer the
    # hole, and a drop must be a real decrease, not merely less growth than expected.
    up = deviation > threshold * np.sqrt(spans)
    down = (deviation < -threshold) & (jumps < 0)
    drop_mask[1:] = down
    # A step's size is its jump minus the typical change at that hour; older points move up.
    sizes = np.where(up, deviation, 0.0)
    shift_after = np.cumsum(sizes[::-1])[::-1]
    adjusted = values.copy()
    adjusted[:-1] += shift_after
    return adjusted, int(up.sum()), drop_mask, threshold


@dataclass(frozen=True, slots=True)
class Teeth:
    """The envelope cut at retention drops: peaks of whole teeth, and where usage is now."""

    peaks: FloatArray
    """2 x k array: (hour, value) of the peak of each tooth that ended in a drop (the whole
    teeth, and the first one even if the window cut its start: it still ended at its top)."""
    previous_peak: float
    """Highest point before the last drop."""
    tail_peak: float
    """Highest point since the last drop."""
    last_drop_hour: float
    typical_drop: float
    """Median size of the drops."""


def teeth_of(hours: FloatArray, values: FloatArray, drop_mask: npt.NDArray[np.bool_]) -> Teeth:
    boundaries = np.nonzero(drop_mask)[0]
    peaks = []
    for start, end in itertools.pairwise([0, *boundaries.tolist()]):
        best = int(np.argmax(values[start:end])) + int(start)
        peaks.append((hours[best], values[best]))
    tops = np.asarray(peaks, dtype=np.float64).T.reshape(2, len(peaks))
    last = int(boundaries[-1])
    drop_sizes = values[boundaries - 1] - values[boundaries]
    return Teeth(
        tops,
        float(values[:last].max()),
        float(values[last:].max()),
        float(hours[last]),
        float(np.median(drop_sizes)),
    )


def ceiling_held(teeth: Teeth, tolerance: float, held_drops: int) -> bool:
    """Did retention cut usage at the same ceiling at least ``held_drops`` times?

    Strong evidence that usage stops there: the peaks of at least ``held_drops`` teeth that
    ended in a drop lie within ``tolerance`` of the highest one. One or two cuts, or cuts at
    scattered levels (a clean-up, a topic deleted), only say usage was once cut there.
    """
    tops = teeth.peaks[1]
    if tops.size < held_drops:
        return False
    at_ceiling = tops >= float(tops.max()) - tolerance
    return int(np.count_nonzero(at_ceiling)) >= held_drops


def after_replacement(
    hours: FloatArray,
    values: FloatArray,
    lows: FloatArray,
    capacity: float,
    params: ForecastParams,
) -> tuple[FloatArray, FloatArray]:
    """Cut out a disk replacement and its re-replication; keep the rate of the history before.

    A replaced disk starts nearly empty and refills from its replicas within hours: neither
    the collapse nor the refill is retention or growth. The hours from the newest collapse to
    ``replacement_settle_hours`` after it are dropped. The history before it still tells the
    rate (the topics are the same): it is kept, shifted by the level lost in the replacement
    (like a step), so a replacement does not leave the fit with a day or two of a weekend.
    """
    if values.size < 2:
        return hours, values
    # The hour's minimum shows the nearly empty new disk (re-replication refills it within
    # hours, so the maximum may not); retention deletes a few percent, never most of it.
    collapses = np.nonzero(
        (lows[1:] < params.replacement_fraction * capacity)
        & (values[:-1] > 3 * params.replacement_fraction * capacity)
    )[0]
    if collapses.size == 0:
        return hours, values
    collapse = collapses[-1] + 1
    after = hours > hours[collapse] + params.replacement_settle_hours
    before = np.arange(hours.size) < collapse
    if np.count_nonzero(after) < 3 or np.count_nonzero(before) < 3:
        return hours[after], values[after]
    shifted = values.copy()
    shifted[before] += replacement_shift(hours, values, before, after)
    keep = before | after
    return hours[keep], shifted[keep]


def replacement_shift(
    hours: FloatArray,
    values: FloatArray,
    before: npt.NDArray[np.bool_],
    after: npt.NDArray[np.bool_],
) -> float:
    """The level a replacement lost: the day after it against the day before it, both
    detrended at the median hourly rate of the surrounding history (medians over a day: the
    tail of the re-replication and the daily cycle do not move them much)."""
    pre = before & (hours > hours[before][-1] - 24.0)
    post = after & (hours <= hours[after][0] + 24.0)
    rates = np.concatenate(
        [
            np.diff(values[before]) / np.diff(hours[before]),
            np.diff(values[after]) / np.diff(hours[after]),
        ]
    )
    rate = float(np.median(rates))
    post_level = float(np.median(values[post] - rate * hours[post]))
    pre_level = float(np.median(values[pre] - rate * hours[pre]))
    return post_level - pre_level
