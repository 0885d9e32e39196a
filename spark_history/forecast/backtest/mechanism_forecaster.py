"""The mechanism forecast as a backtest forecaster: one volume's usage, cut at each origin (pure:
pandas, no Spark).

At an origin the forecaster sees what the history job would have seen then, and nothing later:
the volume's ``topic`` and ``other`` usage rows surveyed in the lookback window before it, each
topic's newest ``config`` row read at or before it (configs are cluster-wide), and the volume's
level, capacity and hard limit from the snapshot buckets up to it (``backtest.History``). It
projects them with the same code as ``history forecast`` (``mechanism_frame.volume_history``,
``mechanism.projection.project_volume``), so the backtest scores the forecast users get.

Where the window holds no topic of the volume (history older than the usage documents), the
``fallback`` forecaster answers: the one forecast is the mechanism where usage exists and the
trend elsewhere.
"""

from __future__ import annotations

import pandas as pd

from spark_history.backtest import Forecaster, History, Prediction
from spark_history.forecast_types import ForecastParams
from spark_history.mechanism.projection import project_volume
from spark_history.mechanism_frame import volume_history
from spark_history.usage_documents import CONFIG_VALUE_COLUMNS, OTHER, TOPIC

MECHANISM = "mechanism"
"""The forecaster's name in backtest tables."""

_CONFIG_COLUMNS = ("topic", "configReadAt", *CONFIG_VALUE_COLUMNS)


def newest_configs_at(configs: pd.DataFrame, at: pd.Timestamp) -> pd.DataFrame:
    """Per topic, its newest ``config`` row read at or before ``at``."""
    read = configs[pd.to_datetime(configs["configReadAt"], utc=True) <= at]
    newest = read.sort_values("configReadAt", kind="stable").groupby("topic").tail(1)
    return newest.loc[:, list(_CONFIG_COLUMNS)]


def usage_at(
    volume_rows: pd.DataFrame,
    configs: pd.DataFrame,
    at: pd.Timestamp,
    lookback_seconds: float,
    history: History,
) -> pd.DataFrame:
    """The frame ``mechanism_frame.volume_history`` reads, as it was at ``at``: the volume's
    rows surveyed in ``(at - lookback, at]`` joined with the configs read by then, and the
    volume's capacity, level and hard threshold from ``history``."""
    surveyed = pd.to_datetime(volume_rows["surveyedAt"], utc=True)
    start = at - pd.Timedelta(seconds=lookback_seconds)
    window = volume_rows[(surveyed <= at) & (surveyed > start)]
    window = window.drop(columns=[c for c in _CONFIG_COLUMNS[1:] if c in window.columns])
    joined = window.merge(newest_configs_at(configs, at), on="topic", how="left")
    return joined.assign(
        surveyedAt=pd.to_datetime(joined["surveyedAt"], utc=True),
        capacity=history.capacity,
        # The newest snapshot's level, as `history forecast` takes it: a bucket's maximum is
        # its newest sample while the volume grows (its mean lags half a bucket).
        consumed=float(history.maxima[-1]),
        hardThresholdBytes=history.capacity - history.limit,
    )


def mechanism_forecaster(
    usage: pd.DataFrame, params: ForecastParams, fallback: Forecaster
) -> Forecaster:
    """The mechanism forecast of one volume whose usage rows (``topic`` and ``other``) and the
    cluster's ``config`` rows are ``usage``; origins map to instants on the epoch-seconds
    axis the backtest buckets on (``origin x bucket_seconds``)."""
    width = params.bucket_seconds
    lookback = params.lookback_hours * width
    volume_rows = usage[usage["kind"].isin((TOPIC, OTHER))]
    configs = usage[usage["kind"] == "config"]

    def predict(history: History) -> Prediction:
        at = pd.Timestamp(history.origin * width, unit="s", tz="UTC")
        frame = usage_at(volume_rows, configs, at, lookback, history)
        if not (frame["kind"] == TOPIC).any():
            return fallback.predict(history)
        forecast = project_volume(
            volume_history(frame, at), history.horizon_hours * width, params.fit_hours * width
        )
        path = forecast.path
        level = path.consumed
        return Prediction(
            crossing=None if forecast.fill_seconds is None else forecast.fill_seconds / width,
            intercept=level,
            slope=path.at(width) - level,
            trend=MECHANISM,
            path=lambda hours: path.at(hours * width),
        )

    return Forecaster(MECHANISM, predict)
