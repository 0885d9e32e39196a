"""The forecasters the backtest (``rolling_origin``) compares: Prometheus ``predict_linear``
over two windows, and the history job's forecast with its calibrated band.

Each is a :class:`~spark_history.forecast.backtest.rolling_origin.Forecaster`: a name and a
function of the :class:`~spark_history.forecast.backtest.rolling_origin.History` up to an
origin (never after it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spark_history.forecast.backtest.rolling_origin import (
    BacktestConfig,
    BucketSeries,
    Forecaster,
    History,
    Prediction,
    origins_of,
)
from spark_history.forecast.conformal_bands import Calibration, Sample, crossing_band
from spark_history.forecast.trend import fitted_line, trend_of
from spark_history.forecast.vocabulary import ForecastParams


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


def forecast_forecaster(
    params: ForecastParams, calibration: Calibration | None = None, name: str = "forecast"
) -> Forecaster:
    """The history job's forecast (``trend``) to the limit: its trend line, its
    fill time and, with ``calibration``, its calibrated band."""

    def predict(history: History) -> Prediction:
        line = fitted_line(history.mean_hours, history.means, params)
        if line is None:
            return Prediction(None, float(history.maxima[-1]), 0.0)
        trend = trend_of(line).value
        crossing = line.crossing(history.limit, history.horizon_hours)
        band = None
        if crossing is not None and calibration is not None:
            band = crossing_band(
                calibration,
                trend,
                level=line.level,
                slope=line.slope,
                limit=history.limit,
                capacity=history.capacity,
                horizon_hours=history.horizon_hours,
            )
        return Prediction(crossing, line.level, line.slope, band, trend)

    return Forecaster(name, predict)


def calibration_samples(
    series: BucketSeries, forecaster: Forecaster, config: BacktestConfig
) -> list[Sample]:
    """The signed level errors of ``forecaster`` at the origins and horizons of ``series``
    (the calibration set of ``conformal_bands``): (bucket maximum at ``origin + h`` - its
    predicted used bytes) / capacity, labelled with the prediction's ``trend``. Origins
    over the limit, predictions without a trend and horizons past the series are left out."""
    samples: list[Sample] = []
    if series.index.size == 0:
        return samples
    for origin in origins_of(series, config):
        history = series.history_at(origin, config.horizon_hours)
        if history.maxima[-1] >= history.limit or not history.capacity > 0:
            continue
        prediction = forecaster.predict(history)
        if prediction.trend is None:
            continue
        for horizon in config.horizons_hours:
            position = np.flatnonzero(series.index == origin + int(horizon))
            if position.size:
                actual = float(series.maxima[position[0]])
                error = (actual - prediction.used_at(horizon)) / history.capacity
                samples.append(Sample(prediction.trend, horizon, error))
    return samples


def forecast_params(config: BacktestConfig) -> ForecastParams:
    """The forecast's defaults but the horizon."""
    return ForecastParams(horizon_hours=config.horizon_hours)


def cross_fitted(
    volumes: Sequence[BucketSeries], config: BacktestConfig, folds: int = 2
) -> list[Calibration]:
    """One calibration of the forecast's band per volume, from the backtest errors of the
    volumes of the other folds only (:func:`fold_calibrations`)."""
    params = forecast_params(config)
    uncalibrated = forecast_forecaster(params)
    samples = [calibration_samples(series, uncalibrated, config) for series in volumes]
    return fold_calibrations(samples, params.band_coverage, folds)


def fold_calibrations(
    samples: Sequence[Sequence[Sample]], coverage: float, folds: int = 2
) -> list[Calibration]:
    """One calibration per volume (``samples``: each volume's backtest errors) from the errors
    of the volumes of the other folds only (volume ``i`` is in fold ``i % folds``): a volume's
    band is never calibrated on its own future, so the coverage the backtest reports is out
    of sample."""
    by_fold: list[list[Sample]] = [[] for _ in range(folds)]
    for number, volume_samples in enumerate(samples):
        by_fold[number % folds] += volume_samples
    calibrations = [
        Calibration.of(
            (s for other, errors in enumerate(by_fold) if other != fold for s in errors),
            coverage,
        )
        for fold in range(folds)
    ]
    return [calibrations[number % folds] for number in range(len(samples))]


def default_forecasters(
    config: BacktestConfig, calibration: Calibration | None = None
) -> list[Forecaster]:
    """``linear-6h``, ``linear-72h`` and ``forecast`` (the job's forecast, its defaults but
    the horizon; banded with ``calibration``)."""
    return [
        predict_linear_forecaster(6.0),
        predict_linear_forecaster(72.0),
        forecast_forecaster(forecast_params(config), calibration),
    ]
