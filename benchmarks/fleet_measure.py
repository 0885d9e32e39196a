"""Pure helpers of the fleet-scale benchmark (``benchmarks.history_fleet_scale``): the
``[history] <step>: <s> s`` lines of a run, which process a command line is, the series of a
Prometheus textfile, and the model that extrapolates the measured sizes to a larger fleet.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from spark_history.forecast.vocabulary import ForecastParams

_STEP = re.compile(r"^\[history\] (?P<name>.+): (?P<seconds>\d+(?:\.\d+)?) s$")

STAGE_WINDOW_DAYS: Mapping[str, float | None] = {
    "forecast": 7.0,
    "topics and headroom": 7.0,
    "cluster replay of the limits": 30.0,
    "balance": 7.0,
    "usage series of the plotted volumes": 7.0,
    "weekly growth per broker": 35.0,
    "data quality and clock skew": 30.0,
    "fleet and broker totals": 7.0,
    "backtest of the forecast": 30.0,
    "plots and files": None,
}
"""Days of history each step of ``history report`` reads (None: no history read, its cost
follows the number of volumes): the forecast's 7-day lookback, the replay's 30 days, the
weekly growth's ``growth_weeks + 1`` = 5 weeks; every read prunes date partitions
(``broker_samples.window_rows``, ``usage_forecast._usage_window``)."""


CALIBRATING_STEPS = frozenset({"forecast", "topics and headroom"})
"""Steps that calibrate a band at past origins of the lookback window of a sample of the volumes
(the trend's and the mechanism's): besides the rows they read, a forecast per sampled volume and
origin."""


def calibration_origins(days: float, params: ForecastParams | None = None) -> int:
    """The origins a volume's band is calibrated at with ``days`` of hourly history: every
    ``calibration_step_hours`` once ``fit_hours`` lie behind, within the lookback, each with a
    bucket after it (``rolling_origin.origins_of`` on the lookback window's buckets); none
    below ``fit_hours`` and one more hour."""
    params = params or ForecastParams()
    buckets = int(min(days * 24.0, params.lookback_hours))
    first = int(params.fit_hours) - 1
    return len(range(first, buckets - 1, int(params.calibration_step_hours)))


def parse_size(text: str) -> tuple[int, float]:
    """A fleet size written ``BROKERS:DAYS`` (``1000:1``), as ``argparse`` types want it."""
    brokers, _, days = text.partition(":")
    try:
        size = int(brokers), float(days)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not BROKERS:DAYS, e.g. 1000:1") from None
    if size[0] < 1 or not size[1] > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: brokers and days must be above zero")
    return size


def parse_steps(stderr: str) -> dict[str, float]:
    """The seconds of every ``[history]`` step in ``stderr``, in order, a repeated step summed."""
    steps: dict[str, float] = {}
    for line in stderr.splitlines():
        match = _STEP.match(line.strip())
        if match:
            name = match["name"]
            steps[name] = steps.get(name, 0.0) + float(match["seconds"])
    return steps


DRIVER_JVM, DRIVER_PYTHON, EXECUTOR_JVM, EXECUTOR_PYTHON = (
    "driver JVM",
    "driver Python",
    "executor JVM",
    "executor Python",
)


def process_role(command: Sequence[str]) -> str | None:
    """Which part of a Spark application a process is, from its command line; None for the
    others (the master, the worker, shells)."""
    text = " ".join(command)
    if not command:
        return None
    program = command[0].rsplit("/", 1)[-1]
    if program == "java":
        if "org.apache.spark.deploy.SparkSubmit" in text:
            return DRIVER_JVM
        if "CoarseGrainedExecutorBackend" in text:
            return EXECUTOR_JVM
        return None
    if program.startswith("python"):
        if "pyspark.daemon" in text or "pyspark.worker" in text:
            return EXECUTOR_PYTHON
        if any(part.endswith("job.py") for part in command):
            return DRIVER_PYTHON
    return None


def prometheus_series(text: str) -> dict[str, int]:
    """How many series (sample lines) a textfile holds, per metric name."""
    counts: dict[str, int] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name = re.split(r"[{ ]", line, maxsplit=1)[0]
        counts[name] = counts.get(name, 0) + 1
    return counts


@dataclass(frozen=True, slots=True)
class CostModel:
    """``seconds = fixed + sum(per_unit[i] x units[i])``; no cost per unit is negative."""

    fixed: float
    per_unit: tuple[float, ...]

    def at(self, units: Sequence[float]) -> float:
        return self.fixed + sum(
            cost * count for cost, count in zip(self.per_unit, units, strict=True)
        )


def fit_costs(points: Iterable[tuple[Sequence[float], float]]) -> CostModel:
    """The least-squares ``CostModel`` through ``(units, seconds)`` points. A unit that does
    not vary between the points is not told apart from the fixed cost, and a unit whose cost
    comes out negative (a fit on too few sizes) is dropped and the rest fitted again. When no
    unit varies (one point, or sizes alike): through the origin in the first unit every point
    has."""
    pairs = [(np.asarray(units, dtype=np.float64), seconds) for units, seconds in points]
    if not pairs:
        raise ValueError("no points to fit")
    units = np.vstack([unit for unit, _ in pairs])
    seconds = np.array([value for _, value in pairs])
    width = units.shape[1]
    kept = [column for column in range(width) if np.ptp(units[:, column]) > 0]
    while kept:
        design = np.column_stack([np.ones(len(pairs)), units[:, kept]])
        solution = np.linalg.lstsq(design, seconds, rcond=None)[0]
        negative = [column for column, cost in zip(kept, solution[1:], strict=True) if cost < 0]
        if not negative:
            per_unit = np.zeros(width)
            per_unit[kept] = solution[1:]
            return CostModel(float(solution[0]), tuple(float(cost) for cost in per_unit))
        kept.remove(negative[0])
    present = [column for column in range(width) if units[:, column].all()]
    per_unit = np.zeros(width)
    if present:
        per_unit[present[0]] = float(seconds.mean()) / float(units[:, present[0]].mean())
    return CostModel(0.0, tuple(float(cost) for cost in per_unit))


def rows_read(rows_per_day: float, days: float, window_days: float | None) -> float:
    """Rows a step reads of ``days`` of history when it reads only its window."""
    if window_days is None:
        return rows_per_day * days
    return rows_per_day * min(days, window_days)


@dataclass(frozen=True, slots=True)
class Measured:
    """One run: its fleet and history, rows per day, each step's seconds."""

    volumes: int
    days: float
    volume_rows_per_day: float
    usage_rows_per_day: float
    steps: Mapping[str, float]


def _stage_units(
    run: Measured, stage: str, volumes: int | None = None, days: float | None = None
) -> tuple[float, float, float]:
    """A step's work: (rows it reads, volumes, volume-origins it calibrates). The rows are the
    volume plus usage rows in its window (a step not in :data:`STAGE_WINDOW_DAYS` is taken to
    read the whole history; one that reads no history, none), at ``run``'s rows per volume and
    day; volume-origins only for :data:`CALIBRATING_STEPS`, of at most
    ``ForecastParams.calibration_volumes`` volumes (the sample that calibrates the bands)."""
    count = run.volumes if volumes is None else volumes
    history = run.days if days is None else days
    window = STAGE_WINDOW_DAYS.get(stage, history)
    per_day = (run.volume_rows_per_day + run.usage_rows_per_day) * count / run.volumes
    rows = 0.0 if window is None else rows_read(per_day, history, window)
    calibrating = min(count, ForecastParams().calibration_volumes)
    origins = calibrating * calibration_origins(history) if stage in CALIBRATING_STEPS else 0
    return rows, float(count), float(origins)


def extrapolate(runs: Sequence[Measured], volumes: int, days: float) -> dict[str, float]:
    """Each step's seconds for ``volumes`` x ``days``: per step, a fixed cost plus a cost per
    row read, per volume (its Python groups) and per volume-origin calibrated, fitted on the
    measured runs (:func:`fit_costs`; work as :func:`_stage_units` counts it)."""
    stages: list[str] = []
    for run in runs:
        stages += [stage for stage in run.steps if stage not in stages]
    result: dict[str, float] = {}
    for stage in stages:
        model = fit_costs(
            (_stage_units(run, stage), run.steps[stage]) for run in runs if stage in run.steps
        )
        target = _stage_units(runs[-1], stage, volumes=volumes, days=days)
        result[stage] = max(0.0, model.at(target))
    return result


def held_out(runs: Sequence[Measured]) -> list[float]:
    """Each run's seconds of steps as the fit on the other runs predicts them (leave one out):
    how far the extrapolation can be trusted."""
    predicted = []
    for run in runs:
        others = [other for other in runs if other is not run]
        predicted.append(sum(extrapolate(others, run.volumes, run.days).values()))
    return predicted
