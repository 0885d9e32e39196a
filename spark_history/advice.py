"""The threshold advice an operator reads first: the limits in force beside the recommendation.

Rule: the *first sentence* says whatever makes the recommendation less comfortable than the
limits in force, with the figures of both: more cluster-hours throttled or paused, a lower soft
limit (it warns later), a lower hard limit (it pauses later) or less room between the two (less
warning). When no candidate is better than the limits in force, the advice is to keep them, and
says why. Hours an operator's override decided are the same under any limits: the advice says
them last, apart from the hours the limits cost.
"""

from __future__ import annotations

import pandas as pd

from spark_history.thresholds import IN_FORCE, FleetEvidence


def _hours(row: pd.Series) -> str:
    return (
        f"{float(row['throttledHours']):,.0f} h throttled and "
        f"{float(row['pausedHours']):,.0f} h paused"
    )


def _less_safe(row: pd.Series, current: pd.Series) -> list[str]:
    """How ``row``'s limits are less safe than the ones in force, each with both figures."""
    soft, hard = float(row["softPercent"]), float(row["hardPercent"])
    reasons = []
    if float(row["throttledHours"]) > float(current["throttledHours"]) or float(
        row["pausedHours"]
    ) > float(current["pausedHours"]):
        reasons.append(f"would have had {_hours(row)}, against {_hours(current)}")
    if pd.notna(current["softPercent"]) and soft < float(current["softPercent"]):
        reasons.append(f"warns later (soft {soft:g}% free instead of {current['softPercent']:g}%)")
    if pd.notna(current["hardPercent"]) and hard < float(current["hardPercent"]):
        reasons.append(f"pauses later (hard {hard:g}% free instead of {current['hardPercent']:g}%)")
    current_gap = float(current["softPercent"]) - float(current["hardPercent"])
    if pd.notna(current_gap) and soft - hard < current_gap:
        reasons.append(
            f"leaves less room to warn ({soft - hard:g} points between soft and hard instead "
            f"of {current_gap:g})"
        )
    return reasons


def advice_text(
    table: pd.DataFrame, evidence: FleetEvidence, lookback_days: float, min_warning_hours: float
) -> str:
    """The advice paragraph; its first sentence carries any warning."""
    text = _limits_advice(table, evidence, lookback_days, min_warning_hours)
    current = table[table["limits"] == IN_FORCE].iloc[0]
    opened = float(current.get("overrideOpenHours", 0.0))
    paused = float(current.get("overridePausedHours", 0.0))
    if opened + paused <= 0.0:
        return text
    return (
        f"{text} Operators' overrides decided {opened + paused:,.0f} h of the period "
        f"({opened:,.0f} h forced OPEN, {paused:,.0f} h forced PAUSE): the same under any "
        "limits, they are not counted in the hours above."
    )


def _limits_advice(
    table: pd.DataFrame, evidence: FleetEvidence, lookback_days: float, min_warning_hours: float
) -> str:
    current = table[table["limits"] == IN_FORCE].iloc[0]
    best = table[table["recommended"].astype(bool)]
    period = f"the last {lookback_days:g} days"
    in_force = evidence.in_force.text
    classes = evidence.climb_by_class
    over = (
        "over volumes"
        if len(classes) < 2
        else f"over the {classes[0].volumes} volumes of {classes[0].volume_class}, the steepest "
        f"of {len(classes)} capacity classes"
    )
    climb = (
        f"the fleet's volumes climbed up to {evidence.climb_percent:.1f} points of capacity "
        f"within {min_warning_hours:g} h (95th percentile {over}) and the lowest free share "
        f"seen was {evidence.lowest_free_percent:.1f}%"
    )
    if best.empty:
        return (
            f"Keep the limits in force ({in_force}): no candidate is better over {period}, "
            f"where {climb}. A candidate must leave that climb between its soft and hard "
            f"limits, give every observed hard breach {min_warning_hours:g} h of warning, keep "
            "a lowered soft limit above the lowest free share seen, and throttle and pause "
            f"fewer hours than the limits in force ({_hours(current)}) unless those fail the "
            "first three."
        )
    row = best.iloc[0]
    pair = f"soft {row['softPercent']:g}% free, hard {row['hardPercent']:g}% free"
    reasons = _less_safe(row, current)
    if reasons:
        because = (
            "the limits in force leave less than that climb between soft and hard"
            if not bool(current["coversFleetClimb"])
            else f"they throttle and pause fewer hours ({_hours(row)}, against {_hours(current)})"
        )
        return (
            f"Caution: the recommended limits ({pair}) {'; '.join(reasons)}, against the "
            f"limits in force ({in_force}). They are recommended because {because}: over "
            f"{period}, {climb}. Keep the limits in force if that is worth less than the "
            "difference."
        )
    return (
        f"Recommended: {pair}: {_hours(row)} over {period}, against {_hours(current)} under "
        f"the limits in force ({in_force}); it warns no later and pauses no later, and {climb}."
    )
