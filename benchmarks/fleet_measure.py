"""Pure helpers of the fleet-scale benchmark (``benchmarks.history_fleet_scale``): the
``[history] <step>: <s> s`` lines of a run, which process a command line is, the series of a
Prometheus textfile, and the model that extrapolates the measured sizes to a larger fleet.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

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
"""Steps that calibrate a band at past origins of every volume's lookback window (the trend's
and the mechanism's): besides the rows they read, a forecast per volume and origin."""


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
class Line:
    """``intercept + slope * x``, least squares."""

    intercept: float
    slope: float

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x


def fit_line(points: Iterable[tuple[float, float]]) -> Line:
    """The least-squares line through ``points`` (one point: through the origin)."""
    pairs = list(points)
    if not pairs:
        raise ValueError("no points to fit")
    if len({x for x, _ in pairs}) == 1:
        x, y = pairs[0][0], sum(y for _, y in pairs) / len(pairs)
        return Line(0.0, y / x if x else 0.0)
    count = len(pairs)
    mean_x = sum(x for x, _ in pairs) / count
    mean_y = sum(y for _, y in pairs) / count
    spread = sum((x - mean_x) ** 2 for x, _ in pairs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in pairs) / spread
    return Line(mean_y - slope * mean_x, slope)


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


def _stage_x(
    run: Measured, stage: str, volumes: int | None = None, days: float | None = None
) -> float:
    """A step's work unit: the rows it reads (volume plus usage rows in its window; a step not
    in :data:`STAGE_WINDOW_DAYS` is taken to read the whole history), or the volumes for a
    step that reads no history. Rows per volume and day stay those of ``run``."""
    count = run.volumes if volumes is None else volumes
    if stage in STAGE_WINDOW_DAYS and STAGE_WINDOW_DAYS[stage] is None:
        return float(count)
    per_day = (run.volume_rows_per_day + run.usage_rows_per_day) * count / run.volumes
    return rows_read(per_day, run.days if days is None else days, STAGE_WINDOW_DAYS.get(stage))


def extrapolate(runs: Sequence[Measured], volumes: int, days: float) -> dict[str, float]:
    """Each step's seconds for ``volumes`` x ``days``: a line per step through the measured
    (work, seconds) points, work as :func:`_stage_x` counts it. A calibrating step's line is
    fitted on the runs whose history is too short for an origin, and its runs with origins
    give the seconds per volume and origin beyond that line (:func:`calibration_origins`)."""
    stages: list[str] = []
    for run in runs:
        stages += [stage for stage in run.steps if stage not in stages]
    result: dict[str, float] = {}
    for stage in stages:
        measured = [run for run in runs if stage in run.steps]
        calibrated = [run for run in measured if calibration_origins(run.days)]
        split = stage in CALIBRATING_STEPS and calibrated and len(calibrated) < len(measured)
        lined = (
            [run for run in measured if not calibration_origins(run.days)] if split else measured
        )
        line = fit_line((_stage_x(run, stage), run.steps[stage]) for run in lined)
        target = line.at(_stage_x(runs[-1], stage, volumes=volumes, days=days))
        if split:
            per_origin = [
                (run.steps[stage] - line.at(_stage_x(run, stage)))
                / (run.volumes * calibration_origins(run.days))
                for run in calibrated
            ]
            target += sum(per_origin) / len(per_origin) * volumes * calibration_origins(days)
        result[stage] = max(0.0, target)
    return result
