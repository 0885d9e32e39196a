"""summary.json of ``history report``: the numbers a machine reads beside the page (pure:
pandas, no Spark)."""

from __future__ import annotations

import math
from dataclasses import asdict
from datetime import datetime

import pandas as pd

from schemas.wire_types import format_instant
from spark_history.advice import advice_text
from spark_history.clock_skew import skew_sentence
from spark_history.data_quality import quality_sentence
from spark_history.forecast.trend import ForecastParams
from spark_history.thresholds import IN_FORCE, FleetEvidence, Tradeoffs, TuningParams

MIN_COMPACTION_LAG_HOURS = 24.0
"""The publisher's default ``min.compaction.lag.ms`` (24 h), for the ingest-lag warning."""


def panel_summary(
    quality: pd.DataFrame, growth: pd.DataFrame, max_clock_skew_seconds: float
) -> dict[str, object]:
    """summary.json's data-quality sentence and each broker's growth over the last week."""
    latest = growth[growth["week"] == 0]
    return {
        "dataQuality": quality_sentence(quality, MIN_COMPACTION_LAG_HOURS)
        + " "
        + skew_sentence(quality, max_clock_skew_seconds),
        "clockSkewedBrokers": [
            int(broker)
            for broker in quality.loc[quality["clockSkewed"].fillna(False), "brokerId"].tolist()
        ],
        "weeklyGrowth": [
            {
                "brokerId": int(broker),
                "growthBytesPerWeek": _or_none(growth_bytes),
                "growthPercentPerWeek": _or_none(growth_percent),
            }
            for broker, growth_bytes, growth_percent in zip(
                latest["brokerId"].tolist(),
                latest["growthBytesPerWeek"].tolist(),
                latest["growthPercentPerWeek"].tolist(),
                strict=True,
            )
        ],
    }


def _recommendation(tradeoffs: pd.DataFrame) -> dict[str, object] | None:
    best = tradeoffs[tradeoffs["recommended"]]
    if best.empty:
        return None
    row = best.iloc[0]
    return {
        "softLimit": {"type": "MinFreePercentage", "level": float(row["softPercent"])},
        "hardLimit": {"type": "MinFreePercentage", "level": float(row["hardPercent"])},
        "minWarningHours": _or_none(row["minWarningHours"]),
        "clusterThrottledHours": float(row["throttledHours"]),
        "clusterPausedHours": float(row["pausedHours"]),
    }


def _fleet_evidence(evidence: FleetEvidence, within_hours: float) -> dict[str, object]:
    return {
        "climbPercent": evidence.climb_percent,
        "climbWithinHours": within_hours,
        "climbByVolumeClass": [
            {
                "volumeClass": entry.volume_class,
                "volumes": entry.volumes,
                "climbPercent": entry.climb_percent,
            }
            for entry in evidence.climb_by_class
        ],
        "lowestFreePercent": evidence.lowest_free_percent,
    }


def report_summary(
    at: datetime,
    forecast: pd.DataFrame,
    replay: Tradeoffs,
    skew: pd.DataFrame,
    params: tuple[ForecastParams, TuningParams],
) -> dict[str, object]:
    """The forecast's, the replay's and the balance's part of summary.json."""
    tradeoffs, evidence = replay.table, replay.evidence
    forecast_params, tuning = params
    filling = forecast[forecast["hoursToFull"].notna()]
    soonest = None
    if not filling.empty:
        first = filling.iloc[0]
        soonest = {
            "brokerId": int(first["brokerId"]),
            "volumeName": first["volumeName"],
            "hoursToFull": float(first["hoursToFull"]),
        }
    current = tradeoffs[tradeoffs["limits"] == IN_FORCE].iloc[0]
    return {
        "at": format_instant(at),
        "volumes": len(forecast),
        "brokers": int(forecast["brokerId"].nunique()) if len(forecast) else 0,
        "volumesForecastToFill": int((filling["trend"] != "full").sum()),
        "volumesFull": int((forecast["trend"] == "full").sum()),
        "soonestToFill": soonest,
        "trends": {str(k): int(v) for k, v in forecast["trend"].value_counts().items()},
        "thresholdAdvice": advice_text(
            tradeoffs, evidence, tuning.lookback_hours / 24, tuning.min_warning_hours
        ),
        "thresholdRecommendation": _recommendation(tradeoffs),
        "fleetEvidence": _fleet_evidence(evidence, tuning.min_warning_hours),
        "limitsInForce": {
            "clusterThrottledHours": float(current["throttledHours"]),
            "clusterPausedHours": float(current["pausedHours"]),
            "clusterMissingDataPausedHours": float(current["missingDataPausedHours"]),
        },
        "skewedVolumes": int(skew["volumeSkewed"].sum()) if len(skew) else 0,
        "skewedBrokers": int(skew.loc[skew["brokerSkewed"], "brokerId"].nunique())
        if len(skew)
        else 0,
        "forecastParams": asdict(forecast_params),
        "tuningParams": {
            **asdict(tuning),
            "soft_grid": list(tuning.soft_grid),
            "hard_grid": list(tuning.hard_grid),
        },
    }


def _or_none(value: object) -> float | None:
    number = float(value)  # type: ignore[arg-type]
    return None if math.isnan(number) else number
