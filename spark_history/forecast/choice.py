"""One forecast per volume: the mechanism where the usage history answers, the trend elsewhere
(pure: pandas, no Spark).

The trend forecast (``envelope``) reads only a volume's total; the mechanism forecast
(``mechanism.usage_frame``) reads its topics, their write rates and their retention, so where a
volume has usage documents in the lookback window, it answers: ``method`` becomes
``mechanism``, ``hoursToFull`` its ``hoursToCapacity`` (the same meaning as the trend's: the
volume full), and ``drivers`` and ``prevention`` say which topics fill it and which retention
would stop them. Its band (``hoursToFullLow``, ``hoursToFullHigh``) is calibrated on the
mechanism's own backtest errors; ``reason`` names it, or says there is none (too few origins
with usage behind them to calibrate, or no fill within the horizon).

The trend keeps the volumes it classes before any fit (``full``, ``retired``, ``error``): a
full volume is full whatever its topics say, and a retired broker's last usage document is not
a forecast.
"""

from __future__ import annotations

import pandas as pd

from spark_history.forecast.envelope import FORECAST_COLUMNS
from spark_history.forecast.trend import Trend
from spark_history.forecast.vocabulary import MECHANISM

TREND_KEEPS: frozenset[str] = frozenset({Trend.FULL.value, Trend.RETIRED.value, Trend.ERROR.value})
"""Trend classes the mechanism never overrides."""

_KEY = ["brokerId", "volumeName"]
_ANSWER = [
    "hoursToCapacity",
    "hoursToCapacityLow",
    "hoursToCapacityHigh",
    "band",
    "drivers",
    "prevention",
    "topics",
    "unknownConfigs",
]


def mechanism_reason(row: pd.Series) -> str:
    """The ``reason`` of a row the mechanism answered."""
    unknown = row.get("unknownConfigs")
    parts = [f"mechanism forecast from {int(row['topics'])} topics' write rates and retention"]
    if isinstance(unknown, str) and unknown:
        parts.append(f"no config read for {unknown} (projected unbounded)")
    band = row.get("band")
    parts.append(band if isinstance(band, str) and band else "no calibrated band")
    return "; ".join(parts)


def one_forecast(trend: pd.DataFrame, mechanism: pd.DataFrame | None) -> pd.DataFrame:
    """``trend`` (``envelope.FORECAST_COLUMNS``) with the rows ``mechanism``
    (``mechanism.usage_frame.MECHANISM_COLUMNS``) answers replaced as the module docstring says."""
    table = trend.loc[:, list(FORECAST_COLUMNS)].reset_index(drop=True)
    if mechanism is None or mechanism.empty:
        return table
    answered = mechanism.loc[
        mechanism["reason"].isna() & mechanism["capacity"].notna(), [*_KEY, *_ANSWER]
    ]
    joined = table.loc[:, [*_KEY, "trend"]].merge(answered, on=_KEY, how="left")
    chosen = joined["topics"].notna() & ~joined["trend"].isin(TREND_KEEPS)
    hours = joined.loc[chosen, "hoursToCapacity"].astype(float)
    table.loc[chosen, "method"] = MECHANISM
    table.loc[chosen, "hoursToFull"] = hours
    table.loc[chosen, "daysToFull"] = hours / 24.0
    table.loc[chosen, "hoursToFullLow"] = joined.loc[chosen, "hoursToCapacityLow"].astype(float)
    table.loc[chosen, "hoursToFullHigh"] = joined.loc[chosen, "hoursToCapacityHigh"].astype(float)
    table.loc[chosen, "drivers"] = joined.loc[chosen, "drivers"]
    table.loc[chosen, "prevention"] = joined.loc[chosen, "prevention"]
    table.loc[chosen, "reason"] = joined.loc[chosen].apply(mechanism_reason, axis=1)
    return table
