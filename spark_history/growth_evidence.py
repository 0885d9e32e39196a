"""Is a volume still growing? The evidence of several windows (``envelope_forecast`` step 5).

A fill is the costly thing to miss, a plateau the cheap thing to miss: growth that is merely
uneven (a night, a weekend, a noisy rate, a slowdown) must keep its fill time. So the
forecast says "no fill" only on strong evidence:

- **flat**: neither the fit window's rate nor the long window's (a week, which averages the
  weekly cycle) is significantly positive;
- **shrinking**: the fit window's rate is significantly negative;
- **plateau**: growth stopped, for longer than ``stop_hours`` (two daily cycles, a weekend):
  over the last ``stop_hours`` the rate is significantly under ``knee_fraction`` of the
  slower of the significant rates, and not significantly positive.

Otherwise every significant rate is a candidate and the band spans them; a lull shorter than
``stop_hours`` but as long as a daily cycle leaves the late side of the band open.
Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spark_history.forecast_types import ForecastParams, Trend
from spark_history.robust_trend import FloatArray, SlopeEstimate, theil_sen, without_daily_cycle

DAILY_CYCLE_HOURS = 24.0


@dataclass(frozen=True, slots=True)
class Growth:
    """The verdict: a trend, and for ``GROWING`` the significant rates, fastest first."""

    trend: Trend
    rates: tuple[SlopeEstimate, ...] = ()
    lull: bool = False
    """Growth looks stopped over the last daily cycle, not yet over ``stop_hours``."""


def long_rate(
    hours: FloatArray, adjusted: FloatArray, params: ForecastParams
) -> SlopeEstimate | None:
    """Theil-Sen over the whole history given (daily cycle removed) when it spans about a
    week (``weekly_min_hours``): the rate a weekly cycle averages to. None when shorter."""
    if hours.size < 2 or hours[-1] - hours[0] < params.weekly_min_hours:
        return None
    return theil_sen(hours, without_daily_cycle(hours, adjusted), params.confidence)


def judge_growth(
    hours: FloatArray,
    values: FloatArray,
    estimate: SlopeEstimate,
    longer: SlopeEstimate | None,
    params: ForecastParams,
) -> Growth:
    """``hours``/``values``: the fit window (steps out); ``estimate`` its rate; ``longer``
    the long window's rate (None without a week of history)."""
    if estimate.high < 0:
        return Growth(Trend.SHRINKING)
    growing = [rate for rate in (estimate, longer) if rate is not None and rate.low > 0]
    if not growing:
        return Growth(Trend.FLAT)
    growing.sort(key=lambda rate: rate.slope, reverse=True)
    slowest = growing[-1].slope
    if stopped_for(hours, values, slowest, params.stop_hours, params):
        return Growth(Trend.PLATEAU)
    lull = stopped_for(hours, values, slowest, DAILY_CYCLE_HOURS, params)
    return Growth(Trend.GROWING, tuple(growing), lull)


def stopped_for(
    hours: FloatArray, values: FloatArray, rate: float, span: float, params: ForecastParams
) -> bool:
    """Did the last ``span`` hours stop growing, against a rate ``rate`` before?

    Stopped: Theil-Sen over those hours (less their own daily cycle when they span two
    days: a cycle fitted across the knee would bend them) is significantly under
    ``knee_fraction`` of ``rate``
    and not significantly positive (a slowdown that still grows, or a stretch too noisy or
    too bent to tell, is not a stop). Not judged (False) when those hours hold under half
    their count of points (a gap).
    """
    tail = hours > hours[-1] - span
    if np.count_nonzero(tail) < span / 2:
        return False
    smooth = without_daily_cycle(hours[tail], values[tail])
    recent = theil_sen(hours[tail], smooth, params.confidence)
    return recent.low <= 0 and recent.high < params.knee_fraction * rate
