"""The baseline to beat: Prometheus ``predict_linear`` over the last 6 hours.

node_exporter's "filesystem filling up" alerts fit a least-squares line to the last 6 h of
samples and extrapolate it. This module reproduces that on raw samples so that the accuracy
benchmark and the tests score both methods on the same data in the same run.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

BASELINE_WINDOW_HOURS = 6.0


def predict_linear_hours(
    hours: FloatArray,
    consumed: FloatArray,
    capacity: float,
    horizon_hours: float,
    window_hours: float = BASELINE_WINDOW_HOURS,
) -> float | None:
    """Hours after ``at`` (hour 0) until the least-squares line over the window hits capacity.

    ``None`` when the line is flat or falling, or reaches capacity only past the horizon.
    """
    recent = (hours > -window_hours) & (hours <= 0)
    x, y = hours[recent], consumed[recent]
    if x.size < 2 or float(np.ptp(x)) == 0.0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    if slope <= 0:
        return None
    remaining = capacity - float(intercept)
    hours_to_full = max(remaining, 0.0) / float(slope)
    return hours_to_full if hours_to_full <= horizon_hours else None
