"""One volume's usage rows (a pandas frame) to its mechanism forecast row (pure: no Spark).

``spark_history.forecast.spark_mechanism`` runs :func:`mechanism_group` per volume with
``applyInPandas`` (a call per broker); the frame holds the volume's ``topic`` and ``other`` rows
of the usage dataset in the lookback window, each ``topic`` row joined with its topic's newest
``config`` row (null columns when none was read) and every row with the volume's newest
snapshot (``capacity``, ``consumed``, ``hardThresholdBytes``). Durations are counted in buckets of
``bucket_seconds`` as the trend forecast counts them (``--history-bucket``).
``hoursToHardLimit`` is when the volume reaches its hard limit (where the cluster pauses);
``hoursToCapacity`` when it would be full, the trend forecast's ``hoursToFull``; with a
calibration (the mechanism's own backtest errors on the fleet's volumes of the same trend,
``spark_mechanism.mechanism_calibration``), ``hoursToCapacityLow`` and ``hoursToCapacityHigh``
are that time's split-conformal band (``conformal_bands.path_crossing_band`` on the projected
path; ``High`` empty when the late side is open) and ``band`` names it.

A volume's data never stops the job: a failure is the row's ``reason``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from spark_history.forecast.conformal_bands import Calibration, path_crossing_band
from spark_history.forecast.mechanism.projection import (
    MechanismForecast,
    TopicHistory,
    VolumeHistory,
    project_volume,
)
from spark_history.forecast.mechanism.volume_path import VolumePath, crossing_seconds
from spark_history.forecast.vocabulary import Trend
from spark_history.usage_documents import CONFIG_VALUE_COLUMNS, OTHER, TOPIC

MECHANISM_SCHEMA = (
    "brokerId int, volumeName string, capacity long, consumed long, limitBytes double, "
    "hoursToHardLimit double, hoursToCapacity double, hoursToCapacityLow double, "
    "hoursToCapacityHigh double, band string, drivers string, prevention string, "
    "topics int, unknownConfigs string, surveys int, lastSurveyAt timestamp, reason string"
)
"""The mechanism forecast table, one row per volume (Spark DDL; the CSV has the same columns)."""

MECHANISM_COLUMNS: tuple[str, ...] = tuple(
    part.strip().split(" ")[0] for part in MECHANISM_SCHEMA.split(",")
)

MAX_LISTED = 5
"""Drivers and preventions listed per volume."""
_MAX_REASON = 300


def _seconds(frame: pd.DataFrame, at: pd.Timestamp) -> np.ndarray:
    instants = frame["surveyedAt"]
    if not isinstance(instants.dtype, pd.DatetimeTZDtype):
        instants = pd.to_datetime(instants, utc=True)
    return ((instants - at).dt.total_seconds().to_numpy()).astype(np.float64)


def _config(columns: dict[str, np.ndarray], index: int) -> dict[str, object] | None:
    """The config values of row ``index`` of ``columns`` (``configReadAt`` and the values)."""
    if pd.isna(columns["configReadAt"][index]):
        return None
    values: dict[str, object] = {}
    for name in CONFIG_VALUE_COLUMNS:
        value = columns[name][index]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        values[name] = value.item() if hasattr(value, "item") else value
    return values


def volume_history(frame: pd.DataFrame, at: pd.Timestamp) -> VolumeHistory:
    """The pure projection's input from one volume's joined usage rows.

    Column-wise: the surveys' instants are converted once, and each topic's series is a slice
    of the columns at its rows' positions, not a sub-frame."""
    ordered = frame.sort_values("surveyedAt", kind="stable")
    seconds = _seconds(ordered, at)
    kinds = ordered["kind"].to_numpy()
    named = (kinds == TOPIC) & ordered["topic"].notna().to_numpy()
    topic_rows = ordered[named]
    config_columns = {
        name: topic_rows[name].to_numpy() for name in ("configReadAt", *CONFIG_VALUE_COLUMNS)
    }
    topic_seconds = seconds[named]
    sizes = topic_rows["bytes"].to_numpy(dtype=np.float64)
    transient = topic_rows["transientBytes"].fillna(0).to_numpy(dtype=np.float64)
    partitions = topic_rows["partitions"].to_numpy()
    active = topic_rows["activeSegmentBytes"].to_numpy()
    names = topic_rows["topic"].to_numpy()
    latest_seconds = seconds.max()
    topics: list[TopicHistory] = []
    # Each topic's positions in ``topic_rows``, in their (survey) order; topics by name.
    for rows in topic_rows.groupby("topic", sort=True).indices.values():
        newest = int(rows[-1])
        if topic_seconds[newest] != latest_seconds:
            continue  # not in the latest survey: left the top N, or deleted
        topics.append(
            TopicHistory(
                topic=str(names[newest]),
                seconds=topic_seconds[rows],
                bytes=sizes[rows],
                transient_bytes=transient[rows],
                partitions=int(partitions[newest]),
                active_segment_bytes=int(active[newest]),
                config=_config(config_columns, newest),
            )
        )
    is_rest = kinds == OTHER
    rest = ordered[is_rest]
    latest = ordered.iloc[-1]
    return VolumeHistory(
        capacity=float(latest["capacity"]),
        consumed=float(latest["consumed"]),
        hard_threshold_bytes=float(latest["hardThresholdBytes"]),
        topics=topics,
        rest_seconds=seconds[is_rest],
        rest_bytes=(rest["bytes"] + rest["unattributedBytes"].fillna(0)).to_numpy(dtype=np.float64),
    )


def _bytes(value: float) -> str:
    return f"{value / 1e9:.1f} GB"


def describe_drivers(forecast: MechanismForecast) -> str:
    return "; ".join(
        f"{driver.topic} +{_bytes(driver.growth_bytes)}, {driver.detail}"
        for driver in forecast.drivers[:MAX_LISTED]
    )


def describe_prevention(forecast: MechanismForecast) -> str:
    if forecast.fill_seconds is None:
        return ""
    if not forecast.preventions:
        return "no single topic's retention keeps the volume under the limit"
    return "; ".join(
        f"{prevention.describe()} keeps the volume under the limit"
        for prevention in forecast.preventions[: 2 * MAX_LISTED]
    )


def mechanism_group(
    frame: pd.DataFrame,
    at: pd.Timestamp,
    horizon_hours: float,
    bucket_seconds: float,
    rate_window_hours: float = math.inf,
    *,
    calibration: Calibration | None = None,
    trend: Trend | None = None,
) -> pd.DataFrame:
    """The mechanism forecast row of the one volume whose rows are ``frame`` (its fill time's
    band from ``calibration``'s errors of the volumes whose trend was ``trend``, when both are
    given and that class is calibrated)."""
    latest = frame.sort_values("surveyedAt").iloc[-1]
    row: dict[str, Any] = {
        "brokerId": int(latest["brokerId"]),
        "volumeName": str(latest["volumeName"]),
        "surveys": int(frame["surveyedAt"].nunique()),
        "lastSurveyAt": pd.Timestamp(latest["surveyedAt"]),
    }
    try:
        if pd.isna(latest["capacity"]):
            row["reason"] = "no snapshot of the volume in the lookback window"
        else:
            window = (horizon_hours, bucket_seconds, rate_window_hours)
            banding = None if calibration is None or trend is None else (calibration, trend)
            row.update(_forecast_fields(frame, at, window, banding))
    except Exception as error:  # one volume's data must not stop the job
        row["reason"] = f"{type(error).__name__}: {error}"[:_MAX_REASON]
    return pd.DataFrame([{column: row.get(column) for column in MECHANISM_COLUMNS}])


def _forecast_fields(
    frame: pd.DataFrame,
    at: pd.Timestamp,
    window: tuple[float, float, float],
    banding: tuple[Calibration, Trend] | None,
) -> dict[str, Any]:
    """``window``: the horizon, the bucket width and the rate window (hours, s, hours);
    ``banding``: the calibration and the volume's trend class."""
    horizon_hours, bucket_seconds, rate_window_hours = window
    volume = volume_history(frame, at)
    horizon_seconds = horizon_hours * bucket_seconds
    forecast = project_volume(volume, horizon_seconds, rate_window_hours * bucket_seconds)
    fill = forecast.fill_seconds
    full = crossing_seconds(forecast.path, volume.capacity, horizon_seconds)
    band = None
    if banding is not None and full is not None:
        band = _band(forecast.path, volume.capacity, horizon_hours, bucket_seconds, banding)
    return {
        "capacity": int(volume.capacity),
        "consumed": int(volume.consumed),
        "limitBytes": forecast.limit_bytes,
        "hoursToHardLimit": math.nan if fill is None else fill / bucket_seconds,
        "hoursToCapacity": math.nan if full is None else full / bucket_seconds,
        "hoursToCapacityLow": math.nan if band is None else band[0],
        "hoursToCapacityHigh": math.nan if band is None or band[1] is None else band[1],
        "band": None if banding is None else _band_label(band, *banding),
        "drivers": describe_drivers(forecast),
        "prevention": describe_prevention(forecast),
        "topics": len(volume.topics),
        "unknownConfigs": ",".join(forecast.unknown_configs),
        "reason": None,
    }


def _band(
    path: VolumePath,
    capacity: float,
    horizon_hours: float,
    bucket_seconds: float,
    banding: tuple[Calibration, Trend],
) -> tuple[float, float | None] | None:
    """The split-conformal band on when ``path`` reaches ``capacity`` (hours of buckets), from
    the calibration's errors of the volume's trend class."""
    calibration, trend = banding

    def used(hours: np.ndarray) -> np.ndarray:
        return np.array([path.at(h * bucket_seconds) for h in hours], dtype=np.float64)

    return path_crossing_band(
        calibration,
        trend.value,
        path=used,
        limit=capacity,
        capacity=capacity,
        horizon_hours=horizon_hours,
    )


def _band_label(
    band: tuple[float, float | None] | None, calibration: Calibration, trend: Trend
) -> str | None:
    if band is None:
        return None
    horizons = calibration.horizons(trend.value)
    label = (
        f"split-conformal {100 * calibration.coverage:g}% band, {trend.value} trend, "
        f"calibrated to {horizons[-1]:g} h by the mechanism's fleet backtests"
    )
    return label + ("; open on its late side" if band[1] is None else "")
