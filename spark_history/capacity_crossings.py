"""When does a group of volumes (the fleet; one broker) cross 70, 80 and 90 % used? Pure pandas.

**Totals.** A broker's used and capacity bytes in an hour are the sums over its volumes of each
one's newest sample in that hour (Spark; a broker publishes its volumes together); the fleet's
are the sums over the brokers. An hour in which a broker published nothing counts its previous
hour's totals, for up to ``ForecastParams.retired_after_hours`` (the forecast's rule for a
silent volume): a broker that misses an hour does not dip the fleet, one that left stops
counting a day later.

**Trend and crossings.** The group's used bytes get the per-volume forecast's trend
(``trend.fitted_line``: the least-squares line over the last ``fit_hours``, 72 h,
Prometheus ``predict_linear``, with the same lookback and minimum history); a level is crossed
when that line reaches the level's share of the group's capacity now, within the forecast's
horizon. A group at or over a level now has *crossed* it, since the start of its newest run of
hours at or over it (within the hours read).

Every duration counts buckets, as the forecast's do (hours with the default 1 h bucket).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from spark_history.forecast.robust_trend import FloatArray
from spark_history.forecast.trend import fitted_line, trend_of
from spark_history.forecast.vocabulary import ForecastParams, Trend

LEVELS_PERCENT: tuple[float, ...] = (70.0, 80.0, 90.0)
SENTENCE_LEVEL = 80.0
"""The level the report's sentence and the brokers' order are about."""
FLEET = "fleet"

CROSSED = "crossed"
FORECAST = "forecast"
NONE = "none"

BROKER_HOUR_COLUMNS: tuple[str, ...] = ("brokerId", "bucket", "consumed", "capacity")


@dataclass(frozen=True, slots=True)
class Crossing:
    level_percent: float
    state: str
    """``crossed`` (at or over the level now), ``forecast`` (the trend reaches it within the
    horizon) or ``none``."""
    hours: float | None
    """Buckets from ``at``: when it was crossed (<= 0) or is forecast to be (>= 0); None."""


@dataclass(frozen=True, slots=True)
class GroupCrossings:
    used_bytes: float
    capacity_bytes: float
    used_percent: float
    trend: str
    growth_percent_per_day: float | None
    """The trend's slope in percent of the capacity now per 24 buckets; None without a trend."""
    crossings: tuple[Crossing, ...]

    def crossing(self, level_percent: float) -> Crossing:
        return next(c for c in self.crossings if c.level_percent == level_percent)


def group_crossings(
    hours: FloatArray,
    used: FloatArray,
    capacity: FloatArray,
    params: ForecastParams,
    levels: tuple[float, ...] = LEVELS_PERCENT,
) -> GroupCrossings:
    """One group's hourly totals (``hours`` relative to ``at``, <= 0, ascending): its used %
    now (the newest hour), its trend and its crossing of each of ``levels``."""
    order = np.argsort(hours, kind="stable")
    hours, used, capacity = hours[order], used[order], capacity[order]
    capacity_now, used_now = float(capacity[-1]), float(used[-1])
    percent = 100.0 * used / np.where(capacity > 0, capacity, np.nan)
    line = fitted_line(hours, used, params)
    crossings = []
    for level in levels:
        if percent[-1] >= level:
            below = np.flatnonzero(~(percent >= level))
            start = float(hours[below[-1] + 1]) if below.size else float(hours[0])
            crossings.append(Crossing(level, CROSSED, start))
            continue
        limit = level / 100.0 * capacity_now
        reach = None if line is None else line.crossing(limit, params.horizon_hours)
        if reach is not None:
            crossings.append(Crossing(level, FORECAST, reach))
        else:
            crossings.append(Crossing(level, NONE, None))
    growth = None if line is None else 100.0 * 24.0 * line.slope / capacity_now
    return GroupCrossings(
        used_bytes=used_now,
        capacity_bytes=capacity_now,
        used_percent=float(percent[-1]),
        trend=Trend.INSUFFICIENT_DATA.value if line is None else trend_of(line).value,
        growth_percent_per_day=growth,
        crossings=tuple(crossings),
    )


def group_hours(broker_hours: pd.DataFrame, params: ForecastParams) -> pd.DataFrame:
    """Per group (``fleet`` and each broker) and bucket: ``consumed`` and ``capacity`` of
    ``broker_hours`` (``BROKER_HOUR_COLUMNS``, one row per broker and bucket <= 0: its
    volumes' newest samples summed), a silent broker's previous bucket carried for up to
    ``retired_after_hours``, and their sum over the brokers. A bucket's totals stand at its
    end (bucket ``k`` ends ``k`` buckets after ``at``)."""
    columns = ["group", "brokerId", "bucket", "consumed", "capacity"]
    if broker_hours.empty:
        return pd.DataFrame(columns=columns)
    first, last = int(broker_hours["bucket"].min()), int(broker_hours["bucket"].max())
    wide = broker_hours.pivot_table(
        index="bucket", columns="brokerId", values=["consumed", "capacity"], aggfunc="last"
    ).reindex(np.arange(first, last + 1))
    filled = wide.ffill(limit=max(int(params.retired_after_hours), 0))
    brokers = pd.DataFrame(filled.stack("brokerId", future_stack=True)).dropna(
        subset=["consumed", "capacity"]
    )
    brokers = brokers.reset_index().sort_values(["brokerId", "bucket"], kind="stable")
    brokers["group"] = "broker " + brokers["brokerId"].astype(int).astype(str)
    fleet = brokers.groupby("bucket", as_index=False)[["consumed", "capacity"]].sum()
    fleet["group"], fleet["brokerId"] = FLEET, np.nan
    return pd.concat([fleet[columns], brokers[columns]], ignore_index=True)


def crossing_table(
    broker_hours: pd.DataFrame, at: datetime, params: ForecastParams
) -> pd.DataFrame:
    """One row per group: the fleet first, then the brokers soonest to cross
    :data:`SENTENCE_LEVEL` (those over it first, longest over it first), then the fullest."""
    totals = group_hours(broker_hours, params)
    rows = []
    for group, frame in totals.groupby("group", sort=False):
        result = group_crossings(
            frame["bucket"].to_numpy(dtype=np.float64),
            frame["consumed"].to_numpy(dtype=np.float64),
            frame["capacity"].to_numpy(dtype=np.float64),
            params,
        )
        broker = frame["brokerId"].iloc[0]
        rows.append(_row(str(group), broker, result, at, params.bucket_seconds))
    table = pd.DataFrame(rows, columns=list(_columns()))
    table["brokerId"] = table["brokerId"].astype("Int64")
    if table.empty:
        return table
    key = f"hoursTo{SENTENCE_LEVEL:g}"
    order = table.assign(
        _fleet=table["group"] != FLEET,
        _soon=pd.to_numeric(table[key]).fillna(math.inf),
    ).sort_values(["_fleet", "_soon", "usedPercent"], ascending=[True, True, False], kind="stable")
    return order[list(_columns())].reset_index(drop=True)


def _columns() -> tuple[str, ...]:
    per_level = [
        name
        for level in LEVELS_PERCENT
        for name in (f"state{level:g}", f"at{level:g}", f"hoursTo{level:g}")
    ]
    return (
        "group",
        "brokerId",
        "usedPercent",
        "usedBytes",
        "capacityBytes",
        "trend",
        "growthPercentPerDay",
        *per_level,
    )


def _row(
    group: str, broker: object, result: GroupCrossings, at: datetime, bucket_seconds: float
) -> dict[str, object]:
    row: dict[str, object] = {
        "group": group,
        "brokerId": None if pd.isna(broker) else int(broker),  # type: ignore[call-overload]
        "usedPercent": result.used_percent,
        "usedBytes": result.used_bytes,
        "capacityBytes": result.capacity_bytes,
        "trend": result.trend,
        "growthPercentPerDay": result.growth_percent_per_day,
    }
    for crossing in result.crossings:
        level = f"{crossing.level_percent:g}"
        row[f"state{level}"] = crossing.state
        row[f"at{level}"] = crossing_time(at, crossing, bucket_seconds)
        row[f"hoursTo{level}"] = crossing.hours
    return row


def crossing_time(at: datetime, crossing: Crossing, bucket_seconds: float) -> str | None:
    """The crossing's instant (ISO 8601, UTC, to the nearest minute); None when there is
    none."""
    if crossing.hours is None:
        return None
    minutes = round(crossing.hours * bucket_seconds / 60.0)
    when = at.astimezone(UTC) + timedelta(minutes=minutes)
    return when.strftime("%Y-%m-%dT%H:%MZ")


def fleet_sentence(table: pd.DataFrame, params: ForecastParams) -> str:
    """The report's sentence on the fleet and :data:`SENTENCE_LEVEL`."""
    fleet = table[table["group"] == FLEET]
    if fleet.empty:
        return "No snapshots in the window: no fleet total."
    row = fleet.iloc[0]
    level = f"{SENTENCE_LEVEL:g}"
    full = f"The fleet is {row['usedPercent']:.0f} % full"
    state, when = row[f"state{level}"], str(row[f"at{level}"])[:10]
    if state == CROSSED:
        return f"{full}: it has been over {level} % since {when}."
    rate = f"at the last {params.fit_hours:g} h's rate"
    if state == FORECAST:
        return f"{full} and crosses {level} % around {when} {rate}."
    if row["trend"] == Trend.INSUFFICIENT_DATA.value:
        return (
            f"{full}; its history is too short for a trend "
            f"(at least {params.min_hours_of_data:g} h)."
        )
    days = params.horizon_hours / 24.0
    return f"{full} and does not cross {level} % within {days:g} days {rate}."
