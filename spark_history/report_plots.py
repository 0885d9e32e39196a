"""The report's figures, rendered with matplotlib's Agg backend to PNG bytes.

Every function takes small pandas frames (already collected from Spark) and returns PNG bytes,
so the report can embed them as base64 and stay one self-contained file.
"""

from __future__ import annotations

import io
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

_DPI = 100


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def _forecast_line(
    axis: Axes, forecast: pd.Series, hours: np.ndarray, horizon_hours: float
) -> None:
    """The forecast line from the level now to full (or the horizon), and the fill band."""
    capacity = float(forecast["capacity"])
    growing = str(forecast["trend"]) in ("growing", "flat")  # every trend that can fill
    slope = float(forecast["growthBytesPerHour"]) if growing else 0.0
    level = 100.0 * float(forecast["levelBytes"]) / capacity
    to_full = forecast["hoursToFull"]
    past_hours = max(72.0, -float(hours.min()) * 24.0)
    end_hours = min(float(to_full) if not _missing(to_full) else past_hours, horizon_hours)
    ahead = np.linspace(0.0, end_hours, 50)
    if slope > 0:
        axis.plot(
            ahead / 24.0,
            np.minimum(level + 100.0 * slope * ahead / capacity, 100.0),
            color="#d62728",
            linestyle="--",
            linewidth=1.5,
            label="forecast",
        )
        low, high = forecast["hoursToFullLow"], forecast["hoursToFullHigh"]
        if not _missing(low):
            axis.axvspan(
                float(low) / 24.0,
                float(high) / 24.0 if not _missing(high) else ahead[-1] / 24.0,
                color="#d62728",
                alpha=0.12,
                label="fill-time band",
            )


def usage_forecast_png(series: pd.DataFrame, forecast: pd.Series, horizon_hours: float) -> bytes:
    """Used % (hourly max and min) of one volume, its forecast line, band and limits.

    ``series`` has ``hours`` (relative to ``at``), ``maxPercent``, ``minPercent``; ``forecast``
    is the volume's forecast row.
    """
    figure, axis = plt.subplots(figsize=(8.0, 3.4))
    hours = series["hours"].to_numpy() / 24.0
    axis.fill_between(
        hours,
        series["minPercent"],
        series["maxPercent"],
        color="#9ecae1",
        alpha=0.6,
        label="hourly min-max",
        linewidth=0,
    )
    axis.plot(hours, series["maxPercent"], color="#08519c", linewidth=1.0, label="hourly max")
    _forecast_line(axis, forecast, hours, horizon_hours)
    for column, colour, name in (
        ("softPercent", "#ff7f0e", "soft limit"),
        ("hardPercent", "#7f0000", "hard limit"),
    ):
        value = forecast.get(column)
        if value is not None and not _missing(value):
            axis.axhline(float(value), color=colour, linestyle=":", linewidth=1.2, label=name)
    axis.axhline(100.0, color="black", linewidth=0.8)
    axis.axvline(0.0, color="grey", linewidth=0.8)
    axis.set_ylim(0, 115)
    axis.set_yticks(range(0, 101, 20))
    axis.set_xlabel("days from the evaluation time")
    axis.set_ylabel("used %")
    title = f"broker {forecast['brokerId']} {forecast['volumeName']}: {forecast['trend']}"
    to_full = forecast["hoursToFull"]
    if not _missing(to_full):
        title += f", full in {float(to_full) / 24.0:.1f} d"
    axis.set_title(title, fontsize=11)
    axis.grid(alpha=0.3)
    axis.legend(loc="upper left", fontsize=8, ncol=3, framealpha=0.9)
    return _png(figure)


def days_to_full_png(forecast: pd.DataFrame, limit: int = 25) -> bytes | None:
    """Horizontal bars: days until full per volume, soonest on top, band as error bars."""
    filling = forecast[forecast["hoursToFull"].notna()].sort_values("hoursToFull").head(limit)
    if filling.empty:
        return None
    days = filling["hoursToFull"].to_numpy() / 24.0
    low = filling["hoursToFullLow"].fillna(filling["hoursToFull"]).to_numpy() / 24.0
    high = filling["hoursToFullHigh"].fillna(filling["hoursToFull"]).to_numpy() / 24.0
    labels = [f"b{row.brokerId} {row.volumeName}" for row in filling.itertuples()]
    figure, axis = plt.subplots(figsize=(8.0, 0.35 * len(labels) + 1.2))
    positions = np.arange(len(labels))[::-1]
    axis.barh(positions, days, color="#d62728", alpha=0.75)
    axis.errorbar(
        days,
        positions,
        xerr=[days - low, np.maximum(high - days, 0.0)],
        fmt="none",
        ecolor="black",
        capsize=3,
        linewidth=1,
    )
    axis.set_yticks(positions, labels, fontsize=9)
    axis.set_xlabel("days until full (bar: forecast, whiskers: band)")
    axis.set_title("Volumes forecast to fill, soonest first", fontsize=11)
    axis.grid(axis="x", alpha=0.3)
    return _png(figure)


def tradeoff_png(tradeoffs: pd.DataFrame, min_warning_hours: float) -> bytes | None:
    """Warning hours (min over hard breaches) against throttled hours, one point a candidate."""
    observed = tradeoffs[tradeoffs["minWarningHours"].notna()]
    if observed.empty:
        return None
    figure, axis = plt.subplots(figsize=(8.0, 5.0))
    meets = observed["meetsMinimumWarning"].astype(bool)
    axis.scatter(
        observed.loc[~meets, "throttledHours"],
        observed.loc[~meets, "minWarningHours"],
        color="#999999",
        label="too little warning",
    )
    axis.scatter(
        observed.loc[meets, "throttledHours"],
        observed.loc[meets, "minWarningHours"],
        color="#2ca02c",
        label="meets the minimum warning",
    )
    best = observed[observed["recommended"].astype(bool)]
    if not best.empty:
        axis.scatter(
            best["throttledHours"],
            best["minWarningHours"],
            s=180,
            facecolors="none",
            edgecolors="#d62728",
            linewidths=2,
            label="recommended",
        )
    for row in observed.itertuples():
        axis.annotate(
            f"{row.softPercent:g}/{row.hardPercent:g}",
            (row.throttledHours, row.minWarningHours),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
    axis.axhline(min_warning_hours, color="#2ca02c", linestyle=":", linewidth=1)
    axis.set_xlabel("cluster-hours throttled (cost)")
    axis.set_ylabel("warning before the hard limit, worst episode (hours)")
    axis.set_title("Threshold trade-off: soft/hard MinFreePercentage candidates", fontsize=11)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    return _png(figure)


def balance_png(balance: pd.DataFrame, limit: int = 60) -> bytes | None:
    """Used % of each volume grouped by broker; skewed volumes in red."""
    if balance.empty:
        return None
    ordered = balance.sort_values(["brokerId", "volumeName"]).head(limit)
    figure, axis = plt.subplots(figsize=(max(6.0, 0.22 * len(ordered) + 2.0), 3.8))
    colours = ["#d62728" if skewed else "#1f77b4" for skewed in ordered["volumeSkewed"]]
    positions = np.arange(len(ordered))
    axis.bar(positions, ordered["usedPercent"], color=colours)
    brokers = ordered["brokerId"].to_numpy()
    for index in range(1, len(brokers)):
        if brokers[index] != brokers[index - 1]:
            axis.axvline(index - 0.5, color="grey", linewidth=0.6)
    groups = sorted(set(brokers.tolist()))
    centres = [float(np.mean(np.nonzero(brokers == broker)[0])) for broker in groups]
    axis.set_xticks(
        centres,
        [f"broker {broker}" for broker in groups],
        fontsize=8,
        rotation=90 if len(groups) > 12 else 0,
    )
    axis.set_ylabel("used %")
    axis.set_ylim(0, 100)
    axis.set_title(
        "Used % per volume, grouped by broker (red: skewed within its broker)", fontsize=11
    )
    axis.grid(axis="y", alpha=0.3)
    return _png(figure)


def weekly_growth_png(growth: pd.DataFrame, limit: int = 12) -> bytes | None:
    """GiB gained per week by each broker, one line a broker, the fastest growers last week
    first (at most ``limit`` brokers)."""
    known = growth[growth["growthBytesPerWeek"].notna()]
    if known.empty:
        return None
    latest = known.sort_values("week").groupby("brokerId")["growthBytesPerWeek"].first()
    shown = latest.sort_values(ascending=False).index[:limit]
    figure, axis = plt.subplots(figsize=(8.0, 4.0))
    for broker in shown:
        points = growth[growth["brokerId"] == broker].sort_values("week", ascending=False)
        ends = pd.to_datetime(points["weekEnd"], utc=True)
        axis.plot(
            ends,
            points["growthBytesPerWeek"] / 1024.0**3,
            marker="o",
            linewidth=1.4,
            label=f"broker {broker}",
        )
    ends = sorted(pd.to_datetime(growth["weekEnd"].unique(), utc=True))
    axis.set_xticks(ends, [end.strftime("%Y-%m-%d") for end in ends], fontsize=8)
    axis.axhline(0.0, color="black", linewidth=0.8)
    axis.set_xlabel("week ending (UTC)")
    axis.set_ylabel("growth (GiB per week)")
    axis.set_title("Weekly growth of consumed bytes per broker", fontsize=11)
    axis.grid(alpha=0.3)
    axis.legend(
        fontsize=8, ncol=2, framealpha=0.9, title="fastest last week first", title_fontsize=8
    )
    return _png(figure)


def fleet_totals_png(hours: pd.DataFrame, fleet: pd.Series, bucket_hours: float) -> bytes | None:
    """The fleet's used % per bucket (``hours``: ``bucket``, ``consumed``, ``capacity``), the
    70/80/90 % levels, and the forecast crossings of ``fleet`` (its ``capacity_totals`` row)
    joined to the newest hour by the trend."""
    if hours.empty:
        return None
    figure, axis = plt.subplots(figsize=(8.0, 3.4))
    days = hours["bucket"].to_numpy(dtype=np.float64) * bucket_hours / 24.0
    percent = 100.0 * hours["consumed"] / hours["capacity"]
    axis.plot(days, percent, color="#08519c", linewidth=1.2, label="fleet used %")
    ahead = [(0.0, float(fleet["usedPercent"]))]
    for level, colour in ((70, "#fdae6b"), (80, "#ff7f0e"), (90, "#7f0000")):
        axis.axhline(level, color=colour, linestyle=":", linewidth=1.2, label=f"{level} %")
        when = fleet.get(f"hoursTo{level}")
        if fleet.get(f"state{level}") == "forecast" and when is not None and not _missing(when):
            ahead.append((float(when) * bucket_hours / 24.0, float(level)))
    if len(ahead) > 1:
        x, y = zip(*ahead, strict=True)
        axis.plot(x, y, color="#d62728", linestyle="--", marker="o", label="trend crossings")
    axis.axvline(0.0, color="grey", linewidth=0.8)
    axis.set_ylim(0, 105)
    axis.set_xlabel("days from the evaluation time")
    axis.set_ylabel("used %")
    axis.set_title("Fleet used % and its 70/80/90 % crossings", fontsize=11)
    axis.grid(alpha=0.3)
    axis.legend(loc="lower left", fontsize=8, ncol=3, framealpha=0.9)
    return _png(figure)


def _missing(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return math.isnan(float(value))
    return value is pd.NA or value is pd.NaT
