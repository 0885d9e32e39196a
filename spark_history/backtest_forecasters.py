"""The forecasters the backtest (``backtest.py``) compares: Prometheus ``predict_linear``
over two windows, the history job's forecast, and that forecast without one of its late steps.

Each is a :class:`~spark_history.backtest.Forecaster`: a name and a function of the
:class:`~spark_history.backtest.History` up to an origin (never after it).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from spark_history.backtest import BacktestConfig, FloatArray, Forecaster, History, Prediction
from spark_history.envelope_floor import line_fill, with_floor
from spark_history.envelope_forecast import _envelope_verdict, forecast_hourly
from spark_history.envelope_next_day import next_day_fill, with_next_day
from spark_history.envelope_steps import after_replacement
from spark_history.envelope_windows import span_windows, window_lines, with_short_line
from spark_history.forecast_types import ForecastParams, Trend, VolumeForecast, no_fill

GROWING_TRENDS = frozenset(
    {Trend.GROWING, Trend.GROWING_LINE_FLOOR, Trend.GROWING_NEXT_DAY, Trend.GROWING_SHORT_LINE}
)


def predict_linear_forecaster(window_hours: float) -> Forecaster:
    """Prometheus ``predict_linear(v[window], t)``: the least-squares line over the samples
    of the last ``window_hours`` (here each bucket's mean at its mean time), its value at the
    origin as intercept, extrapolated ``t`` ahead."""

    def predict(history: History) -> Prediction:
        recent = history.mean_hours > -window_hours
        x, y = history.mean_hours[recent], history.means[recent]
        if x.size < 2 or float(np.ptp(x)) == 0.0:
            level = float(history.means[-1])
            return Prediction(None, level, 0.0)
        slope, intercept = (float(value) for value in np.polyfit(x, y, 1))
        crossing = None
        if intercept >= history.limit:
            crossing = 0.0
        elif slope > 0:
            hours = (history.limit - intercept) / slope
            crossing = hours if hours <= history.horizon_hours else None
        return Prediction(crossing, intercept, slope)

    return Forecaster(f"linear-{window_hours:g}h", predict)


ABLATED_STEPS: tuple[str, ...] = ("floor", "next-day", "short-line", "window-band")
"""The forecast's late steps the backtest can leave out one at a time."""


Composer = Callable[[FloatArray, FloatArray, FloatArray, float, ForecastParams], VolumeForecast]


def _full_forecast(
    hours: FloatArray, maxima: FloatArray, minima: FloatArray, limit: float, params: ForecastParams
) -> VolumeForecast:
    return forecast_hourly(hours, maxima, limit, params, minima=minima)


def forecast_without(step: str | None) -> Composer:
    """``forecast_hourly`` with one of its late steps (8-11 of ``envelope_forecast``) left out:
    ``floor``, ``next-day``, ``short-line`` or ``window-band``; None leaves none out (the
    same result as ``forecast_hourly``, which a test checks)."""
    if step is not None and step not in ABLATED_STEPS:
        raise ValueError(f"unknown step {step!r}: one of {', '.join(ABLATED_STEPS)}")

    def compose(
        hours: FloatArray,
        maxima: FloatArray,
        minima: FloatArray,
        limit: float,
        params: ForecastParams,
    ) -> VolumeForecast:
        keep = (hours > -params.lookback_hours) & (hours <= 0)
        kept, values = after_replacement(hours[keep], maxima[keep], minima[keep], limit, params)
        if (
            kept.size < 2
            or kept[-1] - kept[0] < params.min_hours_of_data
            or kept.size < (params.min_hours_of_data / 2)
        ):
            return no_fill(Trend.INSUFFICIENT_DATA, float(values[-1]) if values.size else math.nan)
        reading = _envelope_verdict(kept, values, limit, params)
        if reading.strong_stop:
            return reading.forecast
        verdict = reading.forecast
        if step != "floor":
            verdict = with_floor(verdict, line_fill(kept, values, limit, params), strong_stop=False)
        if step != "next-day":
            repeat = next_day_fill(kept, reading.adjusted, limit, params, drops=reading.drop_mask)
            verdict = with_next_day(verdict, repeat)
        lines = window_lines(kept, values, limit, params)
        if step != "short-line":
            verdict = with_short_line(verdict, lines, params)
        if step != "window-band":
            verdict = span_windows(verdict, lines)
        return verdict

    return compose


def envelope_forecaster(name: str, params: ForecastParams, compose: Composer) -> Forecaster:
    """The spark_history forecast (or a variant) as a forecaster: its fill time to the limit
    and its band; used bytes follow the level and the rate its fill time implies (the flat
    level when it forecasts no growth)."""

    def predict(history: History) -> Prediction:
        result = compose(history.hours, history.maxima, history.minima, history.limit, params)
        level = result.level if math.isfinite(result.level) else float(history.maxima[-1])
        crossing = result.hours_to_full
        if crossing is not None and crossing > 0:
            slope = (history.limit - level) / crossing
        elif result.trend in GROWING_TRENDS and math.isfinite(result.slope_per_hour):
            slope = max(result.slope_per_hour, 0.0)
        else:
            slope = 0.0
        band = None
        if crossing is not None:
            low = result.hours_to_full_low
            band = (crossing if low is None else low, result.hours_to_full_high)
        return Prediction(crossing, level, slope, band)

    return Forecaster(name, predict)


def default_forecasters(config: BacktestConfig, ablations: bool = False) -> list[Forecaster]:
    """``linear-6h``, ``linear-72h`` and ``forecast`` (the job's forecast, its defaults but
    the horizon); with ``ablations``, the forecast without each late step too."""
    params = ForecastParams(horizon_hours=config.horizon_hours)
    forecasters = [
        predict_linear_forecaster(6.0),
        predict_linear_forecaster(72.0),
        envelope_forecaster("forecast", params, _full_forecast),
    ]
    if ablations:
        forecasters += [
            envelope_forecaster(f"forecast-no-{step}", params, forecast_without(step))
            for step in ABLATED_STEPS
        ]
    return forecasters
