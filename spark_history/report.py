"""``history report``: one self-contained HTML page plus the tables behind it.

Why one file with embedded PNGs: operators mail it, attach it to a ticket or open it from an
artifact store, where relative links to images break. The CSV/JSON files beside it
(forecast.csv, thresholds.csv, balance.csv, summary.json) are the same numbers for machines.
"""

from __future__ import annotations

import base64
import html
import json
import math
from dataclasses import asdict, dataclass
from datetime import datetime

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from schemas.wire_types import format_instant
from spark_history import storage
from spark_history.advice import advice_text, limits_in_force
from spark_history.balance import balance
from spark_history.envelope_forecast import ForecastParams
from spark_history.forecast import forecast_volumes
from spark_history.report_plots import (
    balance_png,
    days_to_full_png,
    tradeoff_png,
    usage_forecast_png,
)
from spark_history.session import step
from spark_history.thresholds import IN_FORCE, TuningParams, threshold_tradeoffs

REPORT_FILE = "report.html"


@dataclass(frozen=True, slots=True)
class ReportFiles:
    html: str
    forecast_csv: str
    thresholds_csv: str
    balance_csv: str
    summary_json: str


def worst_first(forecast: pd.DataFrame) -> pd.DataFrame:
    """Soonest to fill first, then the fullest of those not forecast to fill."""
    return forecast.sort_values(
        ["hoursToFull", "usedPercent"], ascending=[True, False], na_position="last"
    )


def usage_series(
    rows: DataFrame, at: datetime, lookback_hours: float, volumes: pd.DataFrame
) -> pd.DataFrame:
    """Hourly min/max used % and the latest limits (as used %) of the chosen volumes."""
    if volumes.empty:
        return pd.DataFrame()
    wanted = rows.sparkSession.createDataFrame(volumes[["brokerId", "volumeName"]])
    at_epoch = at.timestamp()
    offset = (F.unix_micros(F.col("snapshotAt")) / 1e6 - F.lit(at_epoch)) / 3600.0
    window = rows.join(F.broadcast(wanted), ["brokerId", "volumeName"]).where(
        (F.col("snapshotAt") <= F.lit(at)) & (offset > -float(lookback_hours))
    )
    used = 100.0 * F.col("consumed") / F.col("capacity")
    hourly = window.groupBy("brokerId", "volumeName", F.ceil(offset).alias("bucket")).agg(
        F.max(used).alias("maxPercent"),
        F.min(used).alias("minPercent"),
        F.max_by(
            100.0 - 100.0 * F.col("softThresholdBytes") / F.col("capacity"), "snapshotAt"
        ).alias("softPercent"),
        F.max_by(
            100.0 - 100.0 * F.col("hardThresholdBytes") / F.col("capacity"), "snapshotAt"
        ).alias("hardPercent"),
    )
    series = hourly.toPandas()
    series["hours"] = series["bucket"].astype(float) - 0.5
    return series.sort_values(["brokerId", "volumeName", "hours"])


def write_report(
    rows: DataFrame,
    at: datetime,
    output_dir: str,
    *,
    forecast_params: ForecastParams,
    tuning: TuningParams,
    max_plotted: int = 12,
    tombstones: DataFrame | None = None,
) -> ReportFiles:
    """Run the three analyses on ``rows`` and write the report files into ``output_dir`` (a
    Hadoop URI or a path: see ``storage``)."""
    session = rows.sparkSession
    with step("forecast"):
        forecast = worst_first(forecast_volumes(rows, at, forecast_params, tombstones).toPandas())
    with step("cluster replay of the limits"):
        replay = threshold_tradeoffs(rows, at, tuning, tombstones)
        tradeoffs = replay.table
        advice = advice_text(tradeoffs, limits_in_force(rows, at), tuning.lookback_hours / 24.0)
    with step("balance"):
        skew = balance(rows, at).toPandas().sort_values(["brokerId", "volumeName"])
    with step("usage series of the plotted volumes"):
        plotted = forecast.head(max_plotted)
        series = usage_series(rows, at, forecast_params.lookback_hours, plotted)

    files = ReportFiles(
        html=storage.join(output_dir, REPORT_FILE),
        forecast_csv=storage.join(output_dir, "forecast.csv"),
        thresholds_csv=storage.join(output_dir, "thresholds.csv"),
        balance_csv=storage.join(output_dir, "balance.csv"),
        summary_json=storage.join(output_dir, "summary.json"),
    )
    with step("plots and files"):
        storage.write_text(session, files.forecast_csv, forecast.to_csv(index=False))
        storage.write_text(session, files.thresholds_csv, tradeoffs.to_csv(index=False))
        storage.write_text(session, files.balance_csv, skew.to_csv(index=False))
        summary = _summary(
            at,
            advice=advice,
            forecast=forecast,
            tradeoffs=tradeoffs,
            skew=skew,
            forecast_params=forecast_params,
            tuning=tuning,
        )
        storage.write_text(
            session, files.summary_json, json.dumps(summary, indent=2, default=str) + "\n"
        )
        storage.write_text(
            session,
            files.html,
            _html(
                at,
                forecast=forecast,
                tradeoffs=tradeoffs,
                skew=skew,
                series=series,
                plotted=plotted,
                summary=summary,
                forecast_params=forecast_params,
                tuning=tuning,
            ),
        )
    return files


def _summary(
    at: datetime,
    *,
    advice: str,
    forecast: pd.DataFrame,
    tradeoffs: pd.DataFrame,
    skew: pd.DataFrame,
    forecast_params: ForecastParams,
    tuning: TuningParams,
) -> dict[str, object]:
    filling = forecast[forecast["hoursToFull"].notna()]
    soonest = None
    if not filling.empty:
        first = filling.iloc[0]
        soonest = {
            "brokerId": int(first["brokerId"]),
            "volumeName": first["volumeName"],
            "hoursToFull": float(first["hoursToFull"]),
        }
    best = tradeoffs[tradeoffs["recommended"]]
    recommendation = None
    if not best.empty:
        row = best.iloc[0]
        recommendation = {
            "softLimit": {"type": "MinFreePercentage", "level": float(row["softPercent"])},
            "hardLimit": {"type": "MinFreePercentage", "level": float(row["hardPercent"])},
            "minWarningHours": _or_none(row["minWarningHours"]),
            "clusterThrottledHours": float(row["throttledHours"]),
            "clusterPausedHours": float(row["pausedHours"]),
        }
    current = tradeoffs[tradeoffs["limits"] == IN_FORCE].iloc[0]
    return {
        "at": format_instant(at),
        "volumes": len(forecast),
        "brokers": int(forecast["brokerId"].nunique()) if len(forecast) else 0,
        "volumesForecastToFill": len(filling),
        "soonestToFill": soonest,
        "trends": {str(k): int(v) for k, v in forecast["trend"].value_counts().items()},
        "thresholdAdvice": advice,
        "thresholdRecommendation": recommendation,
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


def _img(png: bytes | None, alt: str) -> str:
    if png is None:
        return f"<p class='empty'>No figure: {html.escape(alt)} has no data.</p>"
    encoded = base64.b64encode(png).decode("ascii")
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{encoded}'>"


def _table(frame: pd.DataFrame, columns: list[str], limit: int = 50) -> str:
    if frame.empty:
        return "<p class='empty'>Nothing to show.</p>"
    shown = frame[columns].head(limit).copy()
    for column in shown.columns:
        if shown[column].dtype.kind == "f":
            shown[column] = shown[column].map(lambda v: "" if math.isnan(v) else f"{v:,.1f}")
    return shown.to_html(index=False, escape=True, na_rep="", border=0, classes="data")


def _html(
    at: datetime,
    *,
    forecast: pd.DataFrame,
    tradeoffs: pd.DataFrame,
    skew: pd.DataFrame,
    series: pd.DataFrame,
    plotted: pd.DataFrame,
    summary: dict[str, object],
    forecast_params: ForecastParams,
    tuning: TuningParams,
) -> str:
    usage_figures = []
    for _, volume in plotted.iterrows():
        mask = (
            (series["brokerId"] == volume["brokerId"])
            & (series["volumeName"] == volume["volumeName"])
            if not series.empty
            else None
        )
        points = series[mask] if mask is not None else series
        if points.empty:
            continue
        row = volume.copy()
        row["softPercent"] = points["softPercent"].iloc[-1]
        row["hardPercent"] = points["hardPercent"].iloc[-1]
        png = usage_forecast_png(points, row, forecast_params.horizon_hours)
        usage_figures.append(_img(png, f"usage of {volume['volumeName']}"))
    advice = str(summary["thresholdAdvice"])
    forecast_columns = [
        "brokerId",
        "volumeName",
        "usedPercent",
        "trend",
        "growthPercentPerDay",
        "daysToFull",
        "hoursToFull",
        "hoursToFullLow",
        "hoursToFullHigh",
    ]
    skewed = skew[skew["volumeSkewed"] | skew["brokerSkewed"]]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>volume-quota history report {html.escape(format_instant(at))}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1100px; color: #222; }}
h1 {{ font-size: 1.5em; }} h2 {{ font-size: 1.2em; margin-top: 2em; }}
img {{ max-width: 100%; display: block; margin: 0.8em 0; }}
table.data {{ border-collapse: collapse; font-size: 0.85em; }}
table.data td, table.data th {{ padding: 2px 8px; border-bottom: 1px solid #ddd; }}
.empty {{ color: #777; font-style: italic; }}
</style></head><body>
<h1>Volume history report at {html.escape(format_instant(at))}</h1>
<p>{summary["volumes"]} volumes on {summary["brokers"]} brokers;
{summary["volumesForecastToFill"]} forecast to fill within
{forecast_params.horizon_hours / 24:g} days; {summary["skewedVolumes"]} skewed volumes.</p>
<h2>Days until full</h2>
{_img(days_to_full_png(forecast), "days until full")}
{_table(forecast, forecast_columns)}
<h2>Usage and forecast, worst {len(plotted)} volumes</h2>
{"".join(usage_figures) or "<p class='empty'>No volumes.</p>"}
<h2>Threshold trade-off</h2>
<p id="threshold-advice">{html.escape(advice)} Minimum warning asked:
{tuning.min_warning_hours:g} h. Hours are cluster-hours: an hour counts once, in the worst state
the whole cluster was in (the consumer's rule), whatever the number of volumes.</p>
{_img(tradeoff_png(tradeoffs, tuning.min_warning_hours), "threshold trade-off")}
{_table(tradeoffs, list(tradeoffs.columns), limit=200)}
<h2>Balance (JBOD skew)</h2>
{_img(balance_png(skew), "balance")}
{_table(skewed, list(skewed.columns))}
</body></html>
"""
