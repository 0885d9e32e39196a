"""``history report`` at fleet scale on a Spark standalone cluster, with the usage dataset.

For each ``--size`` (brokers and days), a fleet of brokers x ``--volumes-per-broker`` volumes
sampled every minute, and its topic usage surveyed every minute (``benchmarks.fleet_datasets``: 8-20
topics per volume summing to the volume's allocated bytes, retention configs every 5 min), is
written as two date-partitioned Parquet datasets (not timed; the time is reported, and a
dataset already written under ``--workdir`` is reused). Their hourly rollups are kept by a
``job.py ingest`` run with nothing new to read (timed apart: the first time it computes every
date, as an ingest computes the dates it appended to). Then ``job.py report --usage-dataset``
is submitted with spark-submit to a standalone master and one worker with ``--cores`` cores
(``benchmarks.history_cluster_throughput.standalone``), the code shipped with ``--py-files``.

Measured per size: the submission's wall time and each ``[history]`` step's seconds,
the peak resident memory of the driver's JVM and Python process and of the executor's JVM and
Python workers (sampled from /proc every 0.5 s, and each process's VmHWM), rows read and rows
per second per core, the series in ``hours_to_full.prom``; then each step's cost fitted on every
size (a fixed cost, and a cost per row read, per volume and per volume-origin calibrated:
``benchmarks.fleet_measure.extrapolate``), each run predicted by the fit on the others, and
each ``--target`` extrapolated. The load average is printed before and after every run: the
figures are only as quiet as the machine.

Run: ``python -m benchmarks.history_fleet_scale --size 50:1 --size 50:3 --size 200:1 --size 1000:1
--size 1000:3 --size 50:10 --volumes-per-broker 16 --cores 2 --workdir /tmp/vq-fleet-scale``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from benchmarks.fleet_datasets import FleetShape, Written, ensure_fleet
from benchmarks.fleet_measure import (
    DRIVER_JVM,
    DRIVER_PYTHON,
    EXECUTOR_JVM,
    EXECUTOR_PYTHON,
    Measured,
    extrapolate,
    held_out,
    parse_size,
    parse_steps,
    process_role,
    prometheus_series,
)
from benchmarks.history_cluster_throughput import JOB, SPARK_HOME, spark_environment, standalone
from benchmarks.machine import describe_machine
from spark_history import synthetic
from spark_history.package import build_zip

ROLES = (DRIVER_JVM, DRIVER_PYTHON, EXECUTOR_JVM, EXECUTOR_PYTHON)
MIB = 1024**2


@dataclass
class MemoryPeaks:
    """Peak RSS per role: of the role's processes summed at one sample (``sampled``), and the
    largest single process's VmHWM (``high_water``), in bytes; and per process, its CPU
    seconds (user + system) at its last sample (``cpu``)."""

    sampled: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    high_water: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    cpu: dict[int, tuple[str, float]] = field(default_factory=dict)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds per role (a process that lived less than a sample is missed)."""
        totals = dict.fromkeys(ROLES, 0.0)
        for role, seconds in self.cpu.values():
            totals[role] += seconds
        return totals


def _high_water(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


class MemorySampler(threading.Thread):
    """Samples every descendant of this process every ``interval`` seconds until stopped."""

    def __init__(self, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.peaks = MemoryPeaks()
        self._stop_event = threading.Event()
        self._roles: dict[int, str | None] = {}

    def _role(self, process: psutil.Process) -> str | None:
        """The process's role; looked at again until it has one (spark-submit is a shell
        script that execs the driver's JVM: the same pid changes command line)."""
        if self._roles.get(process.pid) is None:
            try:
                self._roles[process.pid] = process_role(process.cmdline())
            except psutil.Error:
                return None
        return self._roles[process.pid]

    def sample(self) -> None:
        totals = dict.fromkeys(ROLES, 0)
        for process in psutil.Process().children(recursive=True):
            role = self._role(process)
            if role is None:
                continue
            try:
                totals[role] += process.memory_info().rss
                times = process.cpu_times()
            except psutil.Error:
                continue
            self.peaks.cpu[process.pid] = (role, times.user + times.system)
            self.peaks.high_water[role] = max(self.peaks.high_water[role], _high_water(process.pid))
        for role, total in totals.items():
            self.peaks.sampled[role] = max(self.peaks.sampled[role], total)

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.sample()

    def stop(self) -> MemoryPeaks:
        self._stop_event.set()
        self.join()
        return self.peaks


@dataclass(frozen=True, slots=True)
class Submission:
    seconds: float
    steps: dict[str, float]
    peaks: MemoryPeaks
    output: str
    returncode: int


@dataclass(frozen=True, slots=True)
class SparkMemory:
    driver: str
    executor: str


def _spark_submit(
    master: str, package: Path, options: list[str], job: list[str]
) -> subprocess.CompletedProcess[str]:
    """``spark-submit job.py <job>`` on the standalone cluster with the code shipped, its
    output in ``stdout`` (spark-submit's PythonRunner sends the Python driver's stderr, the
    step lines, to stdout)."""
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"), "--master", master, *options,
        "--py-files", str(package),
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", "spark.ui.enabled=false",
        str(JOB), *job,
    ]  # fmt: skip
    return subprocess.run(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=spark_environment(),
        check=False,
    )


def submit_report(
    master: str,
    package: Path,
    data: Path,
    out: Path,
    memory: SparkMemory,
) -> Submission:
    """``job.py report --usage-dataset`` on the standalone cluster, timed and sampled."""
    at = synthetic.HistoryConfig().at.isoformat()
    options = ["--driver-memory", memory.driver, "--executor-memory", memory.executor]
    job = ["report", "--input", (data / "volumes").as_uri(), "--at", at]
    job += ["--usage-dataset", (data / "usage").as_uri(), "--output-dir", out.as_uri()]
    sampler = MemorySampler()
    sampler.start()
    started = time.monotonic()
    result = _spark_submit(master, package, options, job)
    elapsed = time.monotonic() - started
    peaks = sampler.stop()
    (out.parent / f"{out.name}.log").write_text(result.stdout)
    return Submission(elapsed, parse_steps(result.stdout), peaks, result.stdout, result.returncode)


def submit_refresh(master: str, package: Path, data: Path, work: Path) -> float:
    """The hourly rollups of both datasets kept as ``history ingest`` keeps them: an ingest
    run with nothing new to read, which refreshes every stale date (all of them the first
    time; nothing once they are kept). Its seconds; a failure stops the benchmark."""
    inbox = work / "empty-inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    job = ["ingest", "--source", "jsonl", "--input", inbox.as_uri()]
    job += ["--checkpoint", (work / "checkpoint").as_uri(), "--output", (data / "volumes").as_uri()]
    job += ["--usage-input", inbox.as_uri(), "--usage-output", (data / "usage").as_uri()]
    job += ["--usage-checkpoint", (work / "usage-checkpoint").as_uri()]
    started = time.monotonic()
    result = _spark_submit(master, package, [], job)
    seconds = time.monotonic() - started
    (work / "refresh.log").write_text(result.stdout)
    if result.returncode != 0:
        raise SystemExit(f"the rollups' refresh failed (exit {result.returncode}):\n"
                         f"{result.stdout[-4000:]}")  # fmt: skip
    return seconds


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def _mib(value: int) -> str:
    return f"{value / MIB:,.0f}"


def size_table(
    shape: FleetShape, written: Written, run: Submission, memory: SparkMemory, cores: int
) -> str:
    """The markdown of one size: rows, rates, steps, memory."""
    rows = written.volume_rows + written.usage_rows
    cpu = run.peaks.cpu_seconds()
    lines = [
        f"### {shape.brokers:,} brokers x {shape.volumes_per_broker} volumes, {shape.days:g} days",
        "",
        f"Datasets written in {written.seconds:.0f} s (not timed): {written.volume_rows:,} "
        f"volume rows, {written.usage_rows:,} usage rows.",
        "",
        "| report s | cores | rows read | rows/s per core | driver / executor memory |",
        "|---|---|---|---|---|",
        f"| {run.seconds:.1f} | {cores} | {rows:,} | {rows / run.seconds / cores:,.0f} | "
        f"{memory.driver} / {memory.executor} |",
        "",
        "| step | s |",
        "|---|---|",
        *(f"| {name} | {seconds:.1f} |" for name, seconds in run.steps.items()),
        "",
        "| process | peak RSS, sampled (MiB) | VmHWM of the largest process (MiB) | CPU s |",
        "|---|---|---|---|",
        *(
            f"| {role} | {_mib(run.peaks.sampled[role])} | {_mib(run.peaks.high_water[role])} "
            f"| {cpu[role]:.0f} |"
            for role in ROLES
        ),
        "",
    ]
    return "\n".join(lines)


def prometheus_text(out: Path) -> str:
    counts = prometheus_series((out / "hours_to_full.prom").read_text())
    listed = ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items()))
    return f"hours_to_full.prom: {sum(counts.values()):,} series ({listed})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--size", type=parse_size, action="append", required=True,
                        metavar="BROKERS:DAYS",
                        help="a fleet of BROKERS brokers with DAYS days of history, e.g. "
                        "1000:1; repeatable, one run each, all fitted together")  # fmt: skip
    parser.add_argument("--volumes-per-broker", type=int, default=16, help="default: %(default)s")
    parser.add_argument("--cores", type=int, default=2, help="the worker's cores")
    parser.add_argument("--worker-memory", default="12g", help="the worker's memory (%(default)s)")
    parser.add_argument("--driver-memory", default="4g", help="spark-submit's (%(default)s)")
    parser.add_argument("--executor-memory", default="8g", help="spark-submit's (%(default)s)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/vq-fleet-scale"),
                        help="datasets (kept and reused), reports, logs")  # fmt: skip
    parser.add_argument("--target", type=parse_size, action="append", metavar="BROKERS:DAYS",
                        help="extrapolate to this fleet; repeatable (default: 1000:1, "
                        "1000:3, 1000:10, 10000:90)")  # fmt: skip
    parser.add_argument("--fit-only", action="store_true",
                        help="run nothing: fit the results the sizes' runs left under "
                        "--workdir")  # fmt: skip
    arguments = parser.parse_args(argv)
    workdir: Path = arguments.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {describe_machine()}", flush=True)
    if arguments.fit_only:
        measured = [
            _recorded(workdir, size, arguments.volumes_per_broker) for size in arguments.size
        ]
    else:
        measured = _run_sizes(arguments)
    if len(measured) > 2:
        print("the fit without each run, against the run:")
        for run, predicted in zip(measured, held_out(measured), strict=True):
            actual = sum(run.steps.values())
            print(
                f"  {run.volumes:,} volumes, {run.days:g} days: {predicted:,.0f} s predicted, "
                f"{actual:,.0f} s measured ({100 * (predicted - actual) / actual:+.0f} %)"
            )
    targets = arguments.target or [(1000, 1.0), (1000, 3.0), (1000, 10.0), (10_000, 90.0)]
    for brokers, days in targets if measured else []:
        target = extrapolate(measured, brokers * arguments.volumes_per_broker, days)
        total = sum(target.values())
        print(
            f"extrapolated to {brokers:,} x {arguments.volumes_per_broker} volumes, {days:g} "
            f"days: {total:,.0f} s of steps on {arguments.cores} cores = "
            f"{total * arguments.cores / 3600:,.1f} core-hours"
        )
        for stage, seconds in target.items():
            print(f"  {stage}: {seconds:,.0f} s")
    print(f"load average at the end: {_load()}")
    return 0


def _name(brokers: int, volumes_per_broker: int, days: float) -> str:
    return f"b{brokers}-v{volumes_per_broker}-d{days:g}"


def _recorded(workdir: Path, size: tuple[int, float], volumes_per_broker: int) -> Measured:
    """The result a run of ``size`` left in ``workdir`` (its ``<name>.json``)."""
    brokers, days = size
    path = workdir / f"{_name(brokers, volumes_per_broker, days)}.json"
    if not path.is_file():
        raise SystemExit(f"no result of {brokers}:{days:g} in {workdir}: run it first")
    result = json.loads(path.read_text())
    volumes = brokers * volumes_per_broker
    return Measured(
        volumes, days, result["volumeRows"] / days, result["usageRows"] / days, result["steps"]
    )


def _run_sizes(arguments: argparse.Namespace) -> list[Measured]:
    """Write each size's datasets (or reuse them), submit its report, print its tables."""
    workdir: Path = arguments.workdir
    memory = SparkMemory(arguments.driver_memory, arguments.executor_memory)
    package = build_zip(workdir / "dist")
    at = synthetic.HistoryConfig().at
    measured: list[Measured] = []
    with standalone(workdir, arguments.cores, arguments.worker_memory) as master:
        for brokers, days in arguments.size:
            shape = FleetShape(brokers, arguments.volumes_per_broker, days, at)
            name = _name(brokers, arguments.volumes_per_broker, days)
            written = ensure_fleet(shape, workdir / name)
            refresh = submit_refresh(master, package, workdir / name, workdir / f"refresh-{name}")
            print(f"{name}: hourly rollups refreshed by an ingest in {refresh:.1f} s", flush=True)
            out = workdir / f"report-{name}"
            print(f"{name}: load average before {_load()}", flush=True)
            run = submit_report(master, package, workdir / name, out, memory)
            print(f"{name}: load average after {_load()}", flush=True)
            if run.returncode != 0:
                print(f"{name}: FAILED (exit {run.returncode})\n{run.output[-4000:]}", flush=True)
                continue
            print(size_table(shape, written, run, memory, arguments.cores), flush=True)
            print(prometheus_text(out), flush=True)
            volumes = shape.brokers * shape.volumes_per_broker
            measured.append(
                Measured(
                    volumes, days, written.volume_rows / days, written.usage_rows / days, run.steps
                )
            )
            (workdir / f"{name}.json").write_text(
                json.dumps(
                    {"seconds": run.seconds, "steps": run.steps,
                     "sampled": run.peaks.sampled, "highWater": run.peaks.high_water,
                     "cpuSeconds": run.peaks.cpu_seconds(),
                     "volumeRows": written.volume_rows, "usageRows": written.usage_rows,
                     "writeSeconds": written.seconds, "refreshSeconds": refresh,
                     "cores": arguments.cores}
                )
            )  # fmt: skip
    return measured


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
