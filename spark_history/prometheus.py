"""Hours to full as Prometheus metrics, in node_exporter's textfile format.

Point node_exporter's ``--collector.textfile.directory`` at the directory the file is written
to (the report writes ``hours_to_full.prom``; ``history forecast --prometheus-textfile URI``
writes it anywhere), and alert on the forecast, e.g.::

    volume_quota_history_hours_to_full < 72

Volumes not forecast to fill within the horizon have ``+Inf``; full volumes ``0``; volumes
with no forecast (retired, error, too little data) have no ``hours_to_full`` sample, only
``volume_quota_history_forecast_info`` with their trend.

Bounded for a large fleet: every broker gets two series (its soonest-filling volume's hours to
full, its fullest volume's used ratio), and only the ``top_volumes`` volumes that fill soonest
(then the fullest) get the per-volume series; ``volume_quota_history_volumes_omitted`` counts
the rest. So the file holds ``2 x brokers + 5 x top_volumes + 3`` samples at most: about 20,500
for 10,000 brokers of 16 volumes, not 800,000.
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
_BROKER_HELP = {
    "volume_quota_history_broker_hours_to_full": "Forecast hours until the broker's first volume "
    "is full (+Inf: none within the horizon).",
    "volume_quota_history_broker_used_ratio": "Used fraction of the broker's fullest volume.",
}
_NO_FORECAST = {"retired", "error", "insufficient-data"}
DEFAULT_TOP_VOLUMES = 100
"""Volumes with per-volume series: the ones that fill soonest, then the fullest."""


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


def _hours(row: dict[str, object]) -> float:
    """Hours to full for ranking: +Inf when not forecast to fill (or no forecast)."""
    hours = _float(row["hoursToFull"])
    return math.inf if str(row["trend"]) in _NO_FORECAST or math.isnan(hours) else hours


def _used(row: dict[str, object]) -> float:
    used = _float(row["usedPercent"])
    return -math.inf if math.isnan(used) else used / 100.0


def _broker_samples(rows: list[dict[str, object]]) -> dict[str, list[str]]:
    """Per broker: its soonest fill and its fullest volume (retired volumes left out)."""
    soonest: dict[str, float] = {}
    fullest: dict[str, float] = {}
    for row in rows:
        if str(row["trend"]) == "retired":
            continue
        broker = str(row["brokerId"])
        soonest[broker] = min(soonest.get(broker, math.inf), _hours(row))
        fullest[broker] = max(fullest.get(broker, -math.inf), _used(row))
    samples: dict[str, list[str]] = {name: [] for name in _BROKER_HELP}
    for broker in sorted(soonest, key=lambda text: (len(text), text)):
        labels = f'{{broker="{_escape(broker)}"}}'
        hours = soonest[broker]
        samples["volume_quota_history_broker_hours_to_full"].append(
            f"{labels} {'+Inf' if math.isinf(hours) else repr(hours)}"
        )
        if not math.isinf(fullest[broker]):
            samples["volume_quota_history_broker_used_ratio"].append(
                f"{labels} {fullest[broker]!r}"
            )
    return samples


def _volume_samples(rows: list[dict[str, object]]) -> dict[str, list[str]]:
    samples: dict[str, list[str]] = {name: [] for name in _HELP}
    for row in rows:
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
    return samples


def textfile(
    forecast: pd.DataFrame, generated_at: float, top_volumes: int = DEFAULT_TOP_VOLUMES
) -> str:
    """Every broker's series, and the per-volume series of the ``top_volumes`` volumes that
    fill soonest (ties: the fullest first)."""
    rows = [
        {str(key): value for key, value in record.items()} for record in forecast.to_dict("records")
    ]
    ranked = sorted(rows, key=lambda row: (_hours(row), -_used(row)))
    shown = ranked[: max(top_volumes, 0)]
    lines = []
    for helps, samples in (
        (_BROKER_HELP, _broker_samples(rows)),
        (_HELP, _volume_samples(shown)),
    ):
        for name, help_text in helps.items():
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
            lines += [f"{name}{sample}" for sample in samples[name]]
    lines += [
        "# HELP volume_quota_history_volumes_omitted Volumes without per-volume series (beyond "
        "the top volumes).",
        "# TYPE volume_quota_history_volumes_omitted gauge",
        f"volume_quota_history_volumes_omitted {len(rows) - len(shown)}",
        "# HELP volume_quota_history_forecast_timestamp_seconds When the forecast was made.",
        "# TYPE volume_quota_history_forecast_timestamp_seconds gauge",
        f"volume_quota_history_forecast_timestamp_seconds {generated_at!r}",
    ]
    return "\n".join(lines) + "\n"
