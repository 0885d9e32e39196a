"""The mechanism forecast as a backtest forecaster: one volume's usage, cut at each origin (pure:
pandas, no Spark).

At an origin the forecaster sees what the history job would have seen then, and nothing later:
the volume's ``topic`` and ``other`` usage rows surveyed in the lookback window before it, each
topic's newest ``config`` row read at or before it (configs are cluster-wide), and the volume's
level, capacity and hard limit from the snapshot buckets up to it (``rolling_origin.History``). It
projects them with the same code as ``history forecast`` (``mechanism.usage_frame.volume_history``,
``mechanism.projection.project_volume``), so the backtest scores the forecast users get.

Where the window holds no topic of the volume (history older than the usage documents), the
``fallback`` forecaster answers: the one forecast is the mechanism where usage exists and the
trend elsewhere.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from spark_history.forecast.backtest.forecasters import calibration_samples
from spark_history.forecast.backtest.rolling_origin import Forecaster, History, Prediction
from spark_history.forecast.conformal_bands import Calibration, FloatArray, path_crossing_band
from spark_history.forecast.envelope import bucket_series, calibration_config, calibration_frame
from spark_history.forecast.mechanism.projection import project_volume
from spark_history.forecast.mechanism.usage_frame import volume_history
from spark_history.forecast.trend import trend_class
from spark_history.forecast.vocabulary import MECHANISM, ForecastParams
from spark_history.usage_documents import CONFIG_VALUE_COLUMNS, OTHER, TOPIC

_CONFIG_COLUMNS = ("topic", "configReadAt", *CONFIG_VALUE_COLUMNS)

NO_ANSWER = Forecaster("none", lambda _: Prediction(None, math.nan, math.nan))
"""A fallback that answers nothing (no trend: its origins calibrate nothing)."""


def in_utc(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """``frame`` with ``column`` as UTC instants (naive values are UTC, as Spark hands them)."""
    return frame.assign(**{column: pd.to_datetime(frame[column], utc=True)})


def newest_configs_at(configs: pd.DataFrame, at: pd.Timestamp) -> pd.DataFrame:
    """Per topic, its newest ``config`` row read at or before ``at`` (``configReadAt`` in
    UTC: :func:`in_utc`)."""
    read = configs[configs["configReadAt"] <= at]
    newest = read.sort_values("configReadAt", kind="stable").groupby("topic").tail(1)
    return newest.loc[:, list(_CONFIG_COLUMNS)]


def with_own_configs(rows: pd.DataFrame, configs: pd.DataFrame) -> pd.DataFrame:
    """A volume's usage rows and the ``config`` rows of the topics they name: configs are
    cluster-wide, and the forecaster joins them to the volume's topics only, so the other
    topics' rows would change nothing (and a fleet's would fill the driver)."""
    own = configs[configs["topic"].isin(rows["topic"].dropna().unique())]
    return pd.concat([rows, own], ignore_index=True)


def usage_at(
    volume_rows: pd.DataFrame,
    configs: pd.DataFrame,
    at: pd.Timestamp,
    lookback_seconds: float,
    history: History,
) -> pd.DataFrame:
    """The frame ``mechanism.usage_frame.volume_history`` reads, as it was at ``at``: the volume's
    rows surveyed in ``(at - lookback, at]`` joined with the configs read by then, and the
    volume's capacity, level and hard threshold from ``history`` (the instants of both frames
    in UTC: :func:`in_utc`)."""
    surveyed = volume_rows["surveyedAt"]
    start = at - pd.Timedelta(seconds=lookback_seconds)
    window = volume_rows[(surveyed <= at) & (surveyed > start)]
    window = window.drop(columns=[c for c in _CONFIG_COLUMNS[1:] if c in window.columns])
    joined = window.merge(newest_configs_at(configs, at), on="topic", how="left")
    return joined.assign(
        capacity=history.capacity,
        # The newest snapshot's level, as `history forecast` takes it: a bucket's maximum is
        # its newest sample while the volume grows (its mean lags half a bucket).
        consumed=float(history.maxima[-1]),
        hardThresholdBytes=history.capacity - history.limit,
    )


def mechanism_forecaster(
    usage: pd.DataFrame,
    params: ForecastParams,
    fallback: Forecaster = NO_ANSWER,
    zero_seconds: float = 0.0,
    calibration: Calibration | None = None,
) -> Forecaster:
    """The mechanism forecast of one volume whose usage rows (``topic`` and ``other``) and the
    cluster's ``config`` rows are ``usage``; origin ``k`` is the instant ``zero_seconds + k x
    bucket_seconds`` on the epoch-seconds axis (``zero_seconds`` 0: the backtest's buckets;
    the forecast's origin: its buckets, counted from it). With ``calibration``, a crossing of
    the limit gets its band (``conformal_bands.path_crossing_band`` along the path)."""
    width = params.bucket_seconds
    lookback = params.lookback_hours * width
    # The instants are converted once, not at every origin.
    volume_rows = in_utc(usage[usage["kind"].isin((TOPIC, OTHER))], "surveyedAt")
    configs = in_utc(usage[usage["kind"] == "config"], "configReadAt")

    def predict(history: History) -> Prediction:
        at = pd.Timestamp(zero_seconds + history.origin * width, unit="s", tz="UTC")
        frame = usage_at(volume_rows, configs, at, lookback, history)
        if not (frame["kind"] == TOPIC).any():
            return fallback.predict(history)
        forecast = project_volume(
            volume_history(frame, at), history.horizon_hours * width, params.fit_hours * width
        )
        path = forecast.path
        level = path.consumed

        def used(hours: FloatArray) -> FloatArray:
            return np.array([path.at(h * width) for h in hours], dtype=np.float64)

        # The volume's trend at the origin classes the band, as it classes the trend's.
        trend = trend_class(history.mean_hours, history.means, params)
        band = None
        if calibration is not None and forecast.fill_seconds is not None and trend is not None:
            band = path_crossing_band(
                calibration,
                trend.value,
                path=used,
                limit=history.limit,
                capacity=history.capacity,
                horizon_hours=history.horizon_hours,
            )
        return Prediction(
            crossing=None if forecast.fill_seconds is None else forecast.fill_seconds / width,
            intercept=level,
            slope=path.at(width) - level,
            band=band,
            trend=None if trend is None else trend.value,
            path=lambda hours: path.at(hours * width),
        )

    return Forecaster(MECHANISM, predict)


def mechanism_calibration_group(
    hourly: pd.DataFrame, usage: pd.DataFrame, params: ForecastParams, zero_seconds: float
) -> pd.DataFrame:
    """The calibration set of the mechanism's band on one volume (``envelope.CALIBRATION_COLUMNS``
    rows labelled with the volume's trend at their origin, ``trend.trend_class``): its level
    errors at the origins and horizons of
    ``envelope.calibration_config``, its series the hourly envelope ``hourly`` (buckets counted
    from ``zero_seconds``), its usage and the cluster's configs ``usage``. Origins where the
    window holds none of its topics give none; never raises for the volume's data."""
    config = calibration_config(params)
    try:
        samples = (
            []
            if config is None or hourly.empty or usage.empty
            else calibration_samples(
                bucket_series(hourly),
                mechanism_forecaster(usage, params, NO_ANSWER, zero_seconds),
                config,
            )
        )
    except Exception:  # one volume's data must not stop the job; it just calibrates nothing
        samples = []
    return calibration_frame(samples)
