"""Steps and retention drops in a volume's hourly envelope (``envelope_forecast`` steps 2-3).

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
    from spark_history.envelope_forecast import ForecastParams


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
    up = deviation > threshold
    down = deviation < -threshold
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

    complete: FloatArray
    """2 x k array: (hour, value) of the peak of each tooth bounded by drops on both sides."""
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
    for start, end in itertools.pairwise(boundaries):
        best = int(np.argmax(values[start:end])) + int(start)
        peaks.append((hours[best], values[best]))
    complete = np.asarray(peaks, dtype=np.float64).T.reshape(2, len(peaks))
    last = int(boundaries[-1])
    drop_sizes = values[boundaries - 1] - values[boundaries]
    return Teeth(
        complete,
        float(values[:last].max()),
        float(values[last:].max()),
        float(hours[last]),
        float(np.median(drop_sizes)),
    )
