"""The same forecast in one process with pandas: the benchmark's reference, and a parity check.

Same hourly envelope (grouped max per volume and hour) and the same per-volume function
(``envelope.forecast_group``) as the Spark job, without Spark. The band is calibrated on every
volume: the same as the job's while the fleet is within ``ForecastParams.calibration_volumes``.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

from spark_history.forecast.envelope import (
    CALIBRATION_COLUMNS,
    FORECAST_COLUMNS,
    calibration_group,
    calibration_of,
    forecast_group,
)
from spark_history.forecast.trend import ForecastParams


def hourly_envelope_pandas(
    rows: pd.DataFrame, at: datetime, lookback_hours: float, bucket_seconds: float = 3600.0
) -> pd.DataFrame:
    at_stamp = pd.Timestamp(at)
    instants = rows["snapshotAt"]
    if instants.dt.tz is None:
        instants = instants.dt.tz_localize("UTC")  # Parquet from Spark: UTC, read as naive
    offset_hours = (instants - at_stamp).dt.total_seconds().to_numpy() / bucket_seconds
    keep = (offset_hours <= 0) & (offset_hours > -lookback_hours)
    window = rows.loc[keep, ["brokerId", "volumeName", "capacity", "consumed", "path"]].copy()
    window["snapshotAt"] = instants[keep]
    window["offsetHours"] = offset_hours[keep]
    window["bucket"] = np.ceil(offset_hours[keep]).astype(np.int64)
    window = window.sort_values("snapshotAt", kind="stable")
    grouped = window.groupby(["brokerId", "volumeName", "bucket"], sort=False, observed=True)
    hourly = grouped.agg(
        maxConsumed=("consumed", "max"),
        minConsumed=("consumed", "min"),
        meanConsumed=("consumed", "mean"),
        meanHours=("offsetHours", "mean"),
        lastConsumed=("consumed", "last"),
        capacity=("capacity", "last"),
        path=("path", "last"),
        lastAt=("snapshotAt", "last"),
        lastHours=("offsetHours", "max"),
    )
    return hourly.reset_index()


def retired_hours_pandas(
    hourly: pd.DataFrame,
    tombstones: pd.DataFrame | None,
    at: datetime,
    bucket_seconds: float = 3600.0,
) -> pd.DataFrame:
    """``retiredHours`` per broker, as ``spark_trend.with_retirements`` computes it."""
    result = hourly.copy()
    result["retiredHours"] = np.nan
    if tombstones is None or tombstones.empty:
        return result
    instants = pd.to_datetime(tombstones["snapshotAt"], utc=True)
    offsets = (instants - pd.Timestamp(at)).dt.total_seconds() / bucket_seconds
    latest = offsets[offsets <= 0].groupby(tombstones["brokerId"][offsets <= 0]).max()
    result["retiredHours"] = result["brokerId"].map(latest).astype(np.float64)
    return result


def forecast_volumes_pandas(
    rows: pd.DataFrame,
    at: datetime,
    params: ForecastParams | None = None,
    tombstones: pd.DataFrame | None = None,
) -> pd.DataFrame:
    params = params or ForecastParams()
    hourly = retired_hours_pandas(
        hourly_envelope_pandas(rows, at, params.lookback_hours, params.bucket_seconds),
        tombstones,
        at,
        params.bucket_seconds,
    )
    groups = [g for _, g in hourly.groupby(["brokerId", "volumeName"], sort=True, observed=True)]
    samples = [calibration_group(group, params) for group in groups]
    calibration = calibration_of(
        pd.concat(samples, ignore_index=True)
        if samples
        else pd.DataFrame(columns=list(CALIBRATION_COLUMNS)),
        params,
    )
    results = [forecast_group(group, params, calibration) for group in groups]
    if not results:
        return pd.DataFrame(columns=list(FORECAST_COLUMNS))
    return pd.concat(results, ignore_index=True)
