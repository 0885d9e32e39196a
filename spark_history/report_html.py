"""The report page: one self-contained HTML file, images embedded as base64 PNGs.

Sections, in the order a capacity planner reads them: the volumes full now or filling soonest,
their usage plots, the backtest of the forecast, the fleet and broker totals with their
70/80/90 % crossings, the threshold advice (limits in force beside the recommendation), the
cluster's incidents under the limits in force, weekly growth per broker, data quality (with
clock skew), and balance.
"""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from schemas.wire_types import format_instant
from spark_history.forecast.trend import ForecastParams
from spark_history.report_capacity import NO_RACK_NOR_CLUSTER, CapacityPanels
from spark_history.report_planning import WEEK_DAYS, Planning, headroom_text
from spark_history.report_plots import (
    balance_png,
    days_to_full_png,
    fleet_totals_png,
    tradeoff_png,
    usage_forecast_png,
    weekly_growth_png,
)
from spark_history.thresholds import TuningParams
from spark_history.weekly_growth import growth_pivot

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
img { max-width: 100%; display: block; margin: 0.8em 0; }
table.data { border-collapse: collapse; font-size: 0.85em; }
table.data td, table.data th { padding: 2px 8px; border-bottom: 1px solid #ddd; }
.empty { color: #777; font-style: italic; }
"""

FORECAST_SHOWN = [
    "brokerId",
    "volumeName",
    "usedPercent",
    "method",
    "trend",
    "growthPercentPerDay",
    "daysToFull",
    "hoursToFull",
    "hoursToFullLow",
    "hoursToFullHigh",
    "drivers",
    "reason",
]


@dataclass(frozen=True, slots=True)
class ReportData:
    at: datetime
    forecast: pd.DataFrame
    tradeoffs: pd.DataFrame
    incidents: pd.DataFrame
    quality: pd.DataFrame
    growth: pd.DataFrame
    skew: pd.DataFrame
    series: pd.DataFrame
    plotted: pd.DataFrame
    summary: dict[str, object]
    forecast_params: ForecastParams
    tuning: TuningParams
    planning: Planning
    capacity: CapacityPanels


def img(png: bytes | None, alt: str) -> str:
    if png is None:
        return f"<p class='empty'>No figure: {html.escape(alt)} has no data.</p>"
    encoded = base64.b64encode(png).decode("ascii")
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{encoded}'>"


def table(frame: pd.DataFrame, columns: list[str], limit: int = 50) -> str:
    if frame.empty:
        return "<p class='empty'>Nothing to show.</p>"
    shown = frame[[column for column in columns if column in frame.columns]].head(limit).copy()
    for column in shown.columns:
        if shown[column].dtype.kind == "f":
            shown[column] = shown[column].map(lambda v: "" if math.isnan(v) else f"{v:,.1f}")
        elif shown[column].dtype.kind in "Ob":  # text, and booleans that may be unknown
            shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else v)
    return shown.to_html(index=False, escape=True, na_rep="", border=0, classes="data")


def _usage_figures(data: ReportData) -> str:
    figures = []
    series = data.series
    for _, volume in data.plotted.iterrows():
        if series.empty:
            break
        mask = (series["brokerId"] == volume["brokerId"]) & (
            series["volumeName"] == volume["volumeName"]
        )
        points = series[mask]
        if points.empty or volume["trend"] in ("retired", "error"):
            continue
        row = volume.copy()
        row["softPercent"] = points["softPercent"].iloc[-1]
        row["hardPercent"] = points["hardPercent"].iloc[-1]
        png = usage_forecast_png(points, row, data.forecast_params.horizon_hours)
        figures.append(img(png, f"usage of {volume['volumeName']}"))
    return "".join(figures) or "<p class='empty'>No volumes.</p>"


def _threshold_section(data: ReportData) -> str:
    advice = str(data.summary["thresholdAdvice"])
    tuning = data.tuning
    return f"""<h2>Threshold advice</h2>
<p id="threshold-advice">{html.escape(advice)} Minimum warning asked:
{tuning.min_warning_hours:g} h. Hours are cluster-hours: an hour counts once, in the worst state
the whole cluster was in (the consumer's rule), whatever the number of volumes.</p>
{img(tradeoff_png(data.tradeoffs, tuning.min_warning_hours), "threshold trade-off")}
{table(data.tradeoffs, list(data.tradeoffs.columns), limit=200)}"""


def _incident_section(data: ReportData) -> str:
    count = len(data.incidents)
    return f"""<h2 id="incidents">Incidents under the limits in force ({count})</h2>
<p>Runs of hours in which the whole cluster was throttled or paused, newest first, with the
broker whose volume set the cluster's factor for most of the run.</p>
{table(data.incidents, list(data.incidents.columns), limit=100)}"""


def _quality_section(data: ReportData) -> str:
    return f"""<h2 id="data-quality">Data quality</h2>
<p>{html.escape(str(data.summary["dataQuality"]))}</p>
{table(data.quality, list(data.quality.columns), limit=200)}
<p>Clock skew: snapshotAt minus the Kafka record timestamp of its message, in seconds
(median and largest in magnitude per broker); clockSkewed when the median is beyond the limit,
empty when the history kept no record timestamp for the broker.</p>"""


def _growth_section(data: ReportData) -> str:
    weeks = f" over the last {int(data.growth['week'].max()) + 1}" if len(data.growth) else ""
    pivot = growth_pivot(data.growth)
    return f"""<h2 id="weekly-growth">Weekly growth per broker</h2>
<p>GiB gained per week by each broker's volumes together,{weeks} weeks ending at the
evaluation time: the change of the week's mean hourly peak usage from the week before. Empty
where a week, or the one before it, has less than a day of snapshots.</p>
{img(weekly_growth_png(data.growth), "weekly growth per broker")}
{table(pivot, list(pivot.columns), limit=200)}"""


CAPACITY_SHOWN = [
    "group",
    "usedPercent",
    "trend",
    "growthPercentPerDay",
    *(f"{name}{level}" for level in (70, 80, 90) for name in ("state", "at")),
]
BROKERS_SHOWN = 20


def _capacity_section(data: ReportData) -> str:
    totals = data.capacity.totals
    params = data.forecast_params
    bucket_hours = params.bucket_seconds / 3600.0
    fleet = totals.table[totals.table["group"] == "fleet"]
    png = None if fleet.empty else fleet_totals_png(totals.fleet_hours, fleet.iloc[0], bucket_hours)
    shown = totals.table.copy()
    for level in (70, 80, 90):  # 2026-12-20 14:05, UTC: short enough not to wrap
        shown[f"at{level}"] = shown[f"at{level}"].map(
            lambda at: None if pd.isna(at) else str(at).replace("T", " ").rstrip("Z")
        )
    return f"""<h2 id="capacity-totals">Fleet and broker totals</h2>
<p id="capacity-sentence">{html.escape(totals.sentence)}</p>
<p>Used and capacity bytes summed over the newest snapshot of each volume per hour (the fleet:
every broker of this dataset), the trend of the per-volume forecast (the least-squares line
over the last {params.fit_hours:g} h), and when each total crosses 70, 80 and 90 % of its
capacity now: crossed (since when, within the {params.lookback_hours / 24:g} days read),
forecast (around when; times in UTC) or none within {params.horizon_hours / 24:g} days. The fleet
first, then the {BROKERS_SHOWN} brokers soonest to cross 80 % (capacity_totals.csv has every
broker). {html.escape(NO_RACK_NOR_CLUSTER)}</p>
{img(png, "fleet used percent")}
{table(shown, CAPACITY_SHOWN, limit=1 + BROKERS_SHOWN)}"""


def _backtest_section(data: ReportData) -> str:
    panel = data.capacity.backtest
    shown = panel.table.assign(
        bandCoveragePercent=100.0 * pd.to_numeric(panel.table["bandCoverage"])
    ).drop(columns=["bandCoverage", "bandsOpen"])
    sampled = ""
    if panel.volumes_in_window > panel.volumes:
        sampled = f" (a fixed sample of the {panel.volumes_in_window} volumes there)"
    return f"""<h2 id="backtest">Backtest: the forecast against predict_linear</h2>
<p id="backtest-sentence">{html.escape(panel.sentence)}</p>
<p>At a few rolling origins of each of the {panel.volumes} volumes' history in the report's
window{sampled}, each forecaster sees the history up to the origin only and what followed scores it,
per horizon in hours: misses (real crossings of the hard limit it did not predict), false fills
(predicted crossings that did not happen), the median and 90th percentile error in % of
capacity, and how often the forecast's band covered (bands given, covering; backtest.csv also
counts the open ones). 'history backtest' scores every origin.</p>
{table(shown, list(shown.columns))}"""


MECHANISM_SHOWN = ["brokerId", "volumeName", "hoursToHardLimit", "drivers", "prevention", "reason"]


def _planning_section(planned: Planning) -> str:
    if planned.topics is None or planned.mechanism is None:
        topics = mechanism = (
            "<p class='empty'>No topic usage: run the report with --usage-dataset (the "
            "dataset 'history ingest --usage-output' writes).</p>"
        )
    else:
        topics = table(planned.topics, list(planned.topics.columns))
        mechanism = table(planned.mechanism, MECHANISM_SHOWN)
    return f"""<h2 id="headroom">Headroom after losing the largest broker</h2>
<p>{html.escape(headroom_text(planned.headroom))}</p>
<h2 id="topic-growth">Topics that grew the fleet this week</h2>
<p>Per topic, bytes gained over the last {WEEK_DAYS:g} days on every broker and volume that
names it (net of what retention deleted), largest first.</p>
{topics}
<h2 id="mechanism-forecast">Volumes filled by their topics</h2>
<p>Each topic projected at its write rate up to what its retention keeps, the volume's path
their sum: when it reaches the hard limit, which topics drive it, and which retention would
prevent it (hoursToHardLimit in hours, empty when not within the horizon).</p>
{mechanism}"""


def render(data: ReportData) -> str:
    at = html.escape(format_instant(data.at))
    summary = data.summary
    skewed = data.skew[data.skew["volumeSkewed"] | data.skew["brokerSkewed"]]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>volume-quota history report {at}</title>
<style>{_STYLE}</style></head><body>
<h1>Volume history report at {at}</h1>
<p>{summary["volumes"]} volumes on {summary["brokers"]} brokers; {summary["volumesFull"]} full
now; {summary["volumesForecastToFill"]} forecast to fill within
{data.forecast_params.horizon_hours / 24:g} days; {summary["skewedVolumes"]} skewed volumes.</p>
<h2>Days until full</h2>
<p>method: <em>mechanism</em> where the usage history has the volume's topics (each at its write
rate up to what its retention keeps; drivers names the topics that fill it), <em>trend</em>
(the 72 h line, with its calibrated band) elsewhere.</p>
{img(days_to_full_png(data.forecast), "days until full")}
{table(data.forecast, FORECAST_SHOWN)}
<h2>Usage and forecast, worst {len(data.plotted)} volumes</h2>
{_usage_figures(data)}
{_backtest_section(data)}
{_capacity_section(data)}
{_threshold_section(data)}
{_incident_section(data)}
{_planning_section(data.planning)}
{_growth_section(data)}
{_quality_section(data)}
<h2>Balance (JBOD skew)</h2>
{img(balance_png(data.skew), "balance")}
{table(skewed, list(skewed.columns))}
</body></html>
"""
