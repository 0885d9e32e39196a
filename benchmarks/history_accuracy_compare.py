"""Forecast accuracy on seven generators against predict_linear over 6 h and 72 h, in one run.

Generator 1 is ``spark_history.synthetic`` (the one the forecast was developed on); generator
2 is ``benchmarks.history_scenarios`` (weekly cycles, AR(1) noise, acceleration, disk
replacement, resize, gaps, full volumes, retired brokers, duplicates, a skewed clock), written
after reading the forecast; generator 3 is ``benchmarks.history_scenarios_blind``, written
without reading it (Kafka topic streams with segment retention and the same kinds of events);
generator 4 is ``benchmarks.history_scenarios_fresh``, written without reading the forecast or
the other generators, after generator 3's scores had been seen (a fresh blind set);
generator 5 is ``benchmarks.history_scenarios_field``, written the same way after generator
4's scores had been seen and scored once, with the forecast as it then stood; generator 6
is ``benchmarks.history_scenarios_sre``, written the same way after generator 5's scores had
been seen and the next-day floor built on them; generator 7 is
``benchmarks.history_scenarios_cloud``, written the same way after generator 6's scores had
been seen and the window band built on them. The
envelope forecast runs with the pandas engine (the same per-volume code as on Spark; a test
checks they agree). Scored per method, in the same run:

- fills within the horizon (not full or retired): forecast, missed, median and p90 absolute
  error in hours;
- false fills on volumes that do not fill within the horizon;
- band coverage (envelope only): the share of forecast fills whose true time lies in
  [hoursToFullLow, hoursToFullHigh] (the band named 90%);
- how far the band commits (envelope only): the share of bands open on the late side (a
  lower bound only), and of the closed ones their coverage and median high / low;
- fills within 48 h (``URGENT_HOURS``): how many, missed, median absolute error;
- full volumes reported full (hours 0) and retired volumes left unforecast (generator 2).

Run: ``python -m benchmarks.history_accuracy_compare [--volumes N] [--seed S]
[--generators 1,2,3,4,5,6,7]`` (``--generators 1,2`` skips the blind generators 3-7 without
importing their modules).
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

import numpy as np
import pandas as pd

from benchmarks import history_scenarios
from benchmarks.machine import describe_machine
from spark_history import synthetic
from spark_history.envelope_forecast import ForecastParams
from spark_history.pandas_forecast import forecast_volumes_pandas
from spark_history.predict_linear import FloatArray, predict_linear_hours

Key = tuple[int, str]
URGENT_HOURS = 48.0
"""Fills this soon are the ones an operator must not learn about late."""


@dataclass(frozen=True)
class Case:
    kind: str
    fill_hours: float | None
    retired: bool = False


@dataclass(frozen=True)
class Prediction:
    hours: float | None
    low: float | None = None
    high: float | None = None
    trend: str = ""


def _linear(
    frame: pd.DataFrame, at: pd.Timestamp, horizon: float, window: float
) -> dict[Key, Prediction]:
    result = {}
    for key, group in frame.groupby(["brokerId", "volumeName"], sort=False):
        broker, volume = cast(tuple[int, str], key)
        seconds = (group["snapshotAt"] - at).dt.total_seconds().to_numpy(dtype=np.float64)
        hours: FloatArray = np.asarray(seconds / 3600.0, dtype=np.float64)
        predicted = predict_linear_hours(
            hours,
            group["consumed"].to_numpy(dtype=np.float64),
            float(group["capacity"].iloc[-1]),
            horizon,
            window_hours=window,
        )
        result[(int(broker), str(volume))] = Prediction(predicted)
    return result


def _envelope(
    frame: pd.DataFrame, at: datetime, params: ForecastParams, tombstones: pd.DataFrame | None
) -> dict[Key, Prediction]:
    table = forecast_volumes_pandas(frame, at, params, tombstones)
    result = {}
    for row in table.to_dict("records"):
        hours = float(row["hoursToFull"])
        low, high = float(row["hoursToFullLow"]), float(row["hoursToFullHigh"])
        result[(int(row["brokerId"]), str(row["volumeName"]))] = Prediction(
            None if math.isnan(hours) else hours,
            None if math.isnan(low) else low,
            math.inf if math.isnan(high) else high,
            str(row["trend"]),
        )
    return result


def score(
    cases: dict[Key, Case], predictions: dict[Key, Prediction], horizon: float
) -> dict[str, object]:
    errors, covered, fills, missed, false_fills, quiet = [], 0, 0, 0, 0, 0
    urgent: list[float] = []  # absolute errors on fills within URGENT_HOURS (inf: missed)
    bands: list[tuple[float, float, bool]] = []  # (low, high, covered); high inf: open
    full_ok = full = retired = retired_ok = 0
    for key, case in cases.items():
        predicted = predictions.get(key, Prediction(None))
        if case.retired:
            retired += 1
            retired_ok += predicted.hours is None
            continue
        if case.fill_hours == 0.0:
            full += 1
            full_ok += predicted.hours == 0.0
            continue
        if case.fill_hours is not None and case.fill_hours <= horizon:
            fills += 1
            if case.fill_hours <= URGENT_HOURS:
                urgent.append(
                    math.inf if predicted.hours is None else abs(predicted.hours - case.fill_hours)
                )
            if predicted.hours is None:
                missed += 1
                continue
            errors.append(abs(predicted.hours - case.fill_hours))
            if predicted.low is not None and predicted.high is not None:
                inside = predicted.low <= case.fill_hours <= predicted.high
                covered += inside
                bands.append((predicted.low, predicted.high, inside))
        else:
            quiet += 1
            false_fills += predicted.hours is not None
    array = np.asarray(errors)
    return {
        "fills": fills,
        "missed": missed,
        "median": float(np.median(array)) if array.size else math.nan,
        "p90": float(np.percentile(array, 90)) if array.size else math.nan,
        "falseFills": f"{false_fills} / {quiet}",
        "coverage": f"{100.0 * covered / array.size:.0f}%" if array.size and covered else "-",
        "urgent": _urgent(urgent),
        "width": _width(bands),
        "full": f"{full_ok} / {full}" if full else "-",
        "retired": f"{retired_ok} / {retired}" if retired else "-",
    }


def _urgent(errors: list[float]) -> str:
    """Fills within ``URGENT_HOURS``: how many, how many missed, the median absolute error
    of the others."""
    if not errors:
        return "-"
    found = [error for error in errors if math.isfinite(error)]
    median = f"{float(np.median(found)):.1f} h" if found else "-"
    return f"{len(errors)}, {len(errors) - len(found)} missed, {median}"


def _width(bands: list[tuple[float, float, bool]]) -> str:
    """How far the bands commit: the share open on the late side (a lower bound only), and
    of the closed ones the coverage and the median of high / low (those starting after
    now)."""
    if not bands:
        return "-"
    closed = [(low, high, inside) for low, high, inside in bands if math.isfinite(high)]
    share = f"{100.0 * (len(bands) - len(closed)) / len(bands):.0f}% open"
    if not closed:
        return share
    ratios = [high / low for low, high, _ in closed if low > 0]
    median = f", median high/low {float(np.median(ratios)):.1f}" if ratios else ""
    inside = sum(inside for _, _, inside in closed)
    return f"{share}; closed: {inside} / {len(closed)} covered{median}"


def _missed_by_kind(
    cases: dict[Key, Case], predictions: dict[Key, Prediction], horizon: float
) -> str:
    """Missed / fills within the horizon, per kind of volume."""
    fills: dict[str, list[int]] = {}
    for key, case in cases.items():
        if case.retired or case.fill_hours in (None, 0.0) or case.fill_hours > horizon:
            continue
        entry = fills.setdefault(case.kind, [0, 0])
        entry[1] += 1
        entry[0] += predictions.get(key, Prediction(None)).hours is None
    return ", ".join(
        f"{kind} missed {miss}/{total}" for kind, (miss, total) in sorted(fills.items())
    )


def first_generator(
    seed: int, volumes: int
) -> tuple[pd.DataFrame, None, dict[Key, Case], datetime]:
    config = synthetic.HistoryConfig(interval_seconds=300.0)
    traces = synthetic.make_traces(seed, volumes, config)
    frame = synthetic.history_frame(traces, seed, config)
    cases = {
        (trace.broker_id, trace.volume_name): Case(trace.kind, trace.true_fill_hours)
        for trace in traces
    }
    return frame, None, cases, config.at


class ScenarioModule(Protocol):
    """``history_scenarios`` and ``history_scenarios_blind``: the same interface."""

    AT: datetime

    def generate(
        self, seed: int, volumes: int, horizon_hours: float
    ) -> tuple[pd.DataFrame, pd.DataFrame, Sequence[Any]]: ...


def scenario_generator(
    module: ScenarioModule, seed: int, volumes: int, horizon: float
) -> tuple[pd.DataFrame, pd.DataFrame, dict[Key, Case], datetime]:
    """Generator 2 (``history_scenarios``) or 3 (``history_scenarios_blind``, written blind)."""
    frame, tombstones, truths = module.generate(seed, volumes, horizon)
    cases = {
        (truth.broker_id, truth.volume_name): Case(truth.kind, truth.fill_hours, truth.retired)
        for truth in truths
    }
    return frame, tombstones, cases, module.AT


def blind_generator(
    key: str, seed: int, volumes: int, horizon: float
) -> tuple[pd.DataFrame, pd.DataFrame, dict[Key, Case], datetime]:
    """Generator 3 to 7, imported only when asked for (``--generators`` may leave them
    out)."""
    module = cast(ScenarioModule, importlib.import_module(f"benchmarks.{_BLIND_MODULES[key]}"))
    return scenario_generator(module, seed, volumes, horizon)


def _generator_names(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [part for part in chosen if part not in _GENERATOR_NAMES]
    if unknown or not chosen:
        known = ",".join(_GENERATOR_NAMES)
        raise argparse.ArgumentTypeError(f"generators must be among {known}, got {text!r}")
    return chosen


_GENERATOR_NAMES = {
    "1": "1 (synthetic.py)",
    "2": "2 (history_scenarios.py)",
    "3": "3 (history_scenarios_blind.py, blind)",
    "4": "4 (history_scenarios_fresh.py, blind)",
    "5": "5 (history_scenarios_field.py, blind)",
    "6": "6 (history_scenarios_sre.py, blind)",
    "7": "7 (history_scenarios_cloud.py, blind)",
}
_BLIND_MODULES = {
    "3": "history_scenarios_blind",
    "4": "history_scenarios_fresh",
    "5": "history_scenarios_field",
    "6": "history_scenarios_sre",
    "7": "history_scenarios_cloud",
}


def _build(
    key: str, seed: int, volumes: int, horizon: float
) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[Key, Case], datetime]:
    if key == "1":
        return first_generator(seed, volumes)
    if key == "2":
        return scenario_generator(history_scenarios, seed, volumes, horizon)
    return blind_generator(key, seed, volumes, horizon)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--volumes", type=int, default=160)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--generators",
        type=_generator_names,
        default=list(_GENERATOR_NAMES),
        help="comma-separated generators to run (default all: 1-7)",
    )
    arguments = parser.parse_args(argv)
    params = ForecastParams()
    horizon = params.horizon_hours
    print(f"machine: {describe_machine()}")
    print(
        "| generator | method | fills | missed | median abs err (h) | p90 (h) | false fills "
        "| 90% band coverage | band: open late side; closed bands "
        "| fills within 48 h: missed, median abs err "
        "| full reported full | retired not forecast |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    generators = {
        _GENERATOR_NAMES[key]: _build(key, arguments.seed, arguments.volumes, horizon)
        for key in sorted(set(arguments.generators))
    }
    for name, (frame, tombstones, cases, at) in generators.items():
        stamp = pd.Timestamp(at)
        started = time.monotonic()
        methods = {
            "envelope forecast": _envelope(frame, at, params, tombstones),
            "predict_linear 6 h": _linear(frame, stamp, horizon, 6.0),
            "predict_linear 72 h": _linear(frame, stamp, horizon, 72.0),
        }
        for method, predictions in methods.items():
            print(
                f"{name} {method}: {_missed_by_kind(cases, predictions, horizon)}", file=sys.stderr
            )
            result = score(cases, predictions, horizon)
            print(
                f"| {name} | {method} | {result['fills']} | {result['missed']} | "
                f"{result['median']:.1f} | {result['p90']:.1f} | {result['falseFills']} | "
                f"{result['coverage'] if method.startswith('envelope') else '-'} | "
                f"{result['width'] if method.startswith('envelope') else '-'} | "
                f"{result['urgent']} | {result['full']} | {result['retired']} |"
            )
        print(
            f"generator {name}: {len(frame):,} rows, {len(cases)} volumes, "
            f"{time.monotonic() - started:.0f} s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
