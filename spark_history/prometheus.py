"""Hours to full as Prometheus metrics, in node_exporter's textfile format.

Point node_exporter's ``--collector.textfile.directory`` at the directory the file is written
to (the report writes ``hours_to_full.prom``; ``history forecast --prometheus-textfile URI``
writes it anywhere), and alert on the forecast, e.g.::

    volume_quota_history_hours_to_full < 72

Volumes not forecast to fill within the horizon have ``+Inf``; full volumes ``0``; volumes
with no forecast (retired, error, too little data) have no ``hours_to_full`` sample, only
``volume_quota_history_forecast_info`` with their trend.
"""

from __future__ import annotations

import math

import pandas as pd

_HELP = {
    "volume_quota_history_hours_to_full": "Forecast hours until the volume is full (+Inf: not "
    "within the horizon).",
    "volume_quota_history_hours_to_full_low": "Low end of the 90% band of hours to full.",
    "volume_quota_history_hours_to_full_high": "High end of the 90% band of hours to full.",
    "volume_quota_history_used_ratio": "Used fraction of the volume at its newest snapshot.",
    "volume_quota_history_forecast_info": "1 per volume, labelled with its forecast trend.",
}
_NO_FORECAST = {"retired", "error", "insufficient-data"}


def _escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _float(value: object) -> float:
    if value is None:
        return math.nan
    return float(value)  # type: ignore[arg-type]


def _number(value: float) -> str:
    if math.isnan(value):
        return "+Inf"
    return repr(float(value))


def textfile(forecast: pd.DataFrame, generated_at: float) -> str:
    """The metrics of every volume of the forecast table."""
    samples: dict[str, list[str]] = {name: [] for name in _HELP}
    for record in forecast.to_dict("records"):
        row = {str(key): value for key, value in record.items()}
        labels = f'broker="{row["brokerId"]}",volume="{_escape(row["volumeName"])}"'
        trend = str(row["trend"])
        samples["volume_quota_history_forecast_info"].append(
            f'{{{labels},trend="{_escape(trend)}"}} 1'
        )
        used = _float(row["usedPercent"])
        if not math.isnan(used):
            samples["volume_quota_history_used_ratio"].append(f"{{{labels}}} {used / 100.0!r}")
        if trend in _NO_FORECAST:
            continue
        for name, column in (
            ("volume_quota_history_hours_to_full", "hoursToFull"),
            ("volume_quota_history_hours_to_full_low", "hoursToFullLow"),
            ("volume_quota_history_hours_to_full_high", "hoursToFullHigh"),
        ):
            samples[name].append(f"{{{labels}}} {_number(_float(row[column]))}")
    lines = []
    for name, help_text in _HELP.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        lines += [f"{name}{sample}" for sample in samples[name]]
    lines += [
        "# HELP volume_quota_history_forecast_timestamp_seconds When the forecast was made.",
        "# TYPE volume_quota_history_forecast_timestamp_seconds gauge",
        f"volume_quota_history_forecast_timestamp_seconds {generated_at!r}",
    ]
    return "\n".join(lines) + "\n"
