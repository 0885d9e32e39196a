"""The threshold advice an operator reads first: the limits in force beside the recommendation.

Rule: when the recommended limits would have throttled or paused the cluster for more hours
than the limits in force, the *first sentence* says so, with both figures. The limits in
force are described from the newest snapshot of every volume (the most common soft/hard
pair, and how many volumes have other limits).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.thresholds import IN_FORCE

_UNITS = {"MinFreePercentage": "% free", "MinFreeBytes": " bytes free", "ConsumedSpace": " bytes"}


@dataclass(frozen=True, slots=True)
class LimitsInForce:
    text: str
    """e.g. "soft 10% free, hard 5% free (all 48 volumes)"."""
    volumes: int


def limits_in_force(rows: DataFrame, at: datetime) -> LimitsInForce:
    """The most common (soft, hard) limit pair among the volumes' newest snapshots."""
    latest = (
        rows.where(F.col("snapshotAt") <= F.lit(at))
        .groupBy("brokerId", "volumeName")
        .agg(
            F.max_by(
                F.struct("softLimitType", "softLimitLevel", "hardLimitType", "hardLimitLevel"),
                "snapshotAt",
            ).alias("limits")
        )
        .groupBy("limits")
        .count()
        .orderBy(F.desc("count"))
        .collect()
    )
    if not latest:
        return LimitsInForce("unknown (no snapshot)", 0)
    total = sum(int(row["count"]) for row in latest)
    limits, count = latest[0]["limits"], int(latest[0]["count"])
    soft = _limit(limits["softLimitType"], limits["softLimitLevel"])
    hard = _limit(limits["hardLimitType"], limits["hardLimitLevel"])
    scope = f"all {total} volumes" if count == total else f"{count} of {total} volumes"
    return LimitsInForce(f"soft {soft}, hard {hard} ({scope})", total)


def _limit(kind: str, level: float) -> str:
    return f"{level:g}{_UNITS.get(kind, ' ' + kind)}"


def _hours(row: pd.Series) -> str:
    return (
        f"{float(row['throttledHours']):,.0f} h throttled and "
        f"{float(row['pausedHours']):,.0f} h paused"
    )


def advice_text(table: pd.DataFrame, in_force: LimitsInForce, lookback_days: float) -> str:
    """The advice paragraph; its first sentence carries any warning."""
    current = table[table["limits"] == IN_FORCE].iloc[0]
    best = table[table["recommended"].astype(bool)]
    period = f"the last {lookback_days:g} days"
    today = f"the limits in force ({in_force.text}): {_hours(current)}"
    if best.empty:
        return (
            f"No recommendation: no candidate gave enough warning before every hard breach "
            f"in {period}. Cluster-hours under {today}."
        )
    row = best.iloc[0]
    pair = f"soft {row['softPercent']:g}% free, hard {row['hardPercent']:g}% free"
    worse = float(row["throttledHours"]) > float(current["throttledHours"]) or float(
        row["pausedHours"]
    ) > float(current["pausedHours"])
    warning = (
        f"observed warning before every hard breach at least {float(row['minWarningHours']):.1f} h"
        if pd.notna(row["minWarningHours"])
        else "its hard limit was never reached, so its warning is not observed"
    )
    if worse:
        return (
            f"Caution: the recommended limits ({pair}) would have throttled or paused the "
            f"cluster more than the limits in force over {period}: {_hours(row)}, against "
            f"{_hours(current)} under {in_force.text}. They are recommended for their "
            f"warning ({warning}); keep the limits in force if the extra hours are not "
            "worth it."
        )
    return (
        f"Recommended: {pair}, {_hours(row)} over {period}, against {today}. "
        f"{warning[0].upper()}{warning[1:]}."
    )
