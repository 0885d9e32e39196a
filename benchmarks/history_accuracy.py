"""Forecast accuracy: the history forecast against Prometheus ``predict_linear`` (6 h window).

Both methods see the same synthetic traces, generated in this run with known fill times, and
are scored the same way:

- error in hours (median and p90 absolute error) over the volumes that fill within the
  horizon and that the method did forecast to fill;
- missed fills: volumes that fill within the horizon and got no forecast;
- false fills on plateaued volumes: retention plateaus, sawtooth, idle and near-full-but-
  cleaned volumes (none ever fills) that the method says will fill within the horizon.

The forecast runs on Spark (``spark_trend.forecast_volumes``, local mode) unless
``--engine pandas`` is given (same code per volume, no Spark).

Run: ``python -m benchmarks.history_accuracy`` (``--help`` for the knobs).
"""

# ruff: noqa: PLC0415 - the Spark engine is imported only when chosen

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import cast

import numpy as np
import pandas as pd

from benchmarks.machine import describe_machine
from spark_history import synthetic
from spark_history.forecast.predict_linear import (
    BASELINE_WINDOW_HOURS,
    FloatArray,
    predict_linear_hours,
)
from spark_history.forecast.trend import ForecastParams


@dataclass
class Score:
    fills: int = 0
    scored: int = 0
    missed: int = 0
    plateaued: int = 0
    false_fills_plateaued: int = 0
    errors: list[float] = field(default_factory=list)
    relative: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, float | int | None]:
        errors = np.asarray(self.errors)
        return {
            "fillsWithinHorizon": self.fills,
            "forecast": self.scored,
            "missedFills": self.missed,
            "medianAbsErrorHours": float(np.median(errors)) if errors.size else None,
            "p90AbsErrorHours": float(np.percentile(errors, 90)) if errors.size else None,
            "medianRelErrorPercent": float(np.median(self.relative)) if self.relative else None,
            "plateauedVolumes": self.plateaued,
            "falseFillsOnPlateaued": self.false_fills_plateaued,
        }


def score(
    traces: Sequence[synthetic.Trace],
    predictions: dict[tuple[int, str], float | None],
    horizon_hours: float,
) -> Score:
    result = Score()
    for trace in traces:
        predicted = predictions.get((trace.broker_id, trace.volume_name))
        truth = trace.true_fill_hours
        if truth is not None and truth <= horizon_hours:
            result.fills += 1
            if predicted is None:
                result.missed += 1
            else:
                result.scored += 1
                result.errors.append(abs(predicted - truth))
                result.relative.append(100.0 * abs(predicted - truth) / max(truth, 1.0))
        if trace.plateaued:
            result.plateaued += 1
            if predicted is not None:
                result.false_fills_plateaued += 1
    return result


def baseline_predictions(
    frame: pd.DataFrame, config: synthetic.HistoryConfig, horizon_hours: float
) -> dict[tuple[int, str], float | None]:
    at = pd.Timestamp(config.at)
    predictions: dict[tuple[int, str], float | None] = {}
    for key, group in frame.groupby(["brokerId", "volumeName"], sort=False):
        broker, volume = cast(tuple[int, str], key)
        seconds = (group["snapshotAt"] - at).dt.total_seconds().to_numpy(dtype=np.float64)
        hours: FloatArray = np.asarray(seconds / 3600.0, dtype=np.float64)
        predictions[(int(broker), str(volume))] = predict_linear_hours(
            hours,
            group["consumed"].to_numpy(dtype=np.float64),
            float(group["capacity"].iloc[-1]),
            horizon_hours,
        )
    return predictions


def envelope_predictions(
    frame: pd.DataFrame, config: synthetic.HistoryConfig, params: ForecastParams, engine: str
) -> dict[tuple[int, str], float | None]:
    if engine == "pandas":
        from spark_history.forecast.pandas_trend import forecast_volumes_pandas

        table = forecast_volumes_pandas(frame, config.at, params)
    else:
        from spark_history.forecast.spark_trend import forecast_volumes
        from spark_history.session import SessionSettings, build_session

        session = build_session(SessionSettings(master="local[2]"))
        rows = session.createDataFrame(frame.astype({"volumeName": object, "path": object}))
        table = forecast_volumes(rows, config.at, params).toPandas()
    return {
        (int(broker), str(volume)): None if math.isnan(hours) else float(hours)
        for broker, volume, hours in zip(
            table["brokerId"].tolist(),
            table["volumeName"].tolist(),
            table["hoursToFull"].astype(float).tolist(),
            strict=True,
        )
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--volumes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--interval-seconds", type=float, default=60.0)
    parser.add_argument("--engine", choices=("spark", "pandas"), default="spark")
    parser.add_argument("--json", help="also write the results to this file")
    arguments = parser.parse_args(argv)

    config = synthetic.HistoryConfig(interval_seconds=arguments.interval_seconds)
    params = ForecastParams()
    started = time.monotonic()
    traces = synthetic.make_traces(arguments.seed, arguments.volumes, config)
    frame = synthetic.history_frame(traces, arguments.seed, config)
    print(
        f"{len(traces)} volumes, {len(frame):,} snapshots over "
        f"{config.history_hours / 24:g} days (seed {arguments.seed}), generated in "
        f"{time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )

    results: dict[str, dict[str, object]] = {}
    methods: list[tuple[str, Callable[[], dict[tuple[int, str], float | None]]]] = [
        (
            "forecast",
            lambda: envelope_predictions(frame, config, params, arguments.engine),
        ),
        (
            f"predict_linear {BASELINE_WINDOW_HOURS:g} h",
            lambda: baseline_predictions(frame, config, params.horizon_hours),
        ),
    ]
    for name, predict in methods:
        started = time.monotonic()
        predictions = predict()
        elapsed = time.monotonic() - started
        results[name] = {
            **score(traces, predictions, params.horizon_hours).summary(),
            "seconds": elapsed,
        }

    kinds = {
        kind: sum(1 for trace in traces if trace.kind == kind) for kind in synthetic.TRACE_KINDS
    }
    print(f"machine: {describe_machine()}")
    print(f"traces: {kinds}; horizon {params.horizon_hours / 24:g} days; engine {arguments.engine}")
    print(
        "| method | fills in horizon | forecast | missed | median abs err (h) | "
        "p90 abs err (h) | median rel err | false fills on plateaued |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, result in results.items():
        print(
            f"| {name} | {result['fillsWithinHorizon']} | {result['forecast']} | "
            f"{result['missedFills']} | {_fmt(result['medianAbsErrorHours'])} | "
            f"{_fmt(result['p90AbsErrorHours'])} | {_fmt(result['medianRelErrorPercent'])}% | "
            f"{result['falseFillsOnPlateaued']} / "
            f"{result['plateauedVolumes']} |"
        )
    if arguments.json:
        with open(arguments.json, "w") as stream:
            json.dump(
                {
                    "config": {**asdict(config), "at": str(config.at), "kinds": list(config.kinds)},
                    "seed": arguments.seed,
                    "results": results,
                },
                stream,
                indent=2,
            )
    return 0


def _fmt(value: object) -> str:
    return "-" if value is None else f"{float(value):.1f}"  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
