"""``history report`` at fleet scale on a Spark standalone cluster, with the usage dataset.

For each ``--days`` size, a fleet of ``--brokers`` x ``--volumes-per-broker`` volumes sampled
every minute, and its topic usage surveyed every minute (``benchmarks.fleet_datasets``: 8-20
topics per volume summing to the volume's allocated bytes, retention configs every 5 min), is
written as two date-partitioned Parquet datasets (not timed; the time is reported, and a
dataset already written under ``--workdir`` is reused). Then ``job.py report --usage-dataset``
is submitted with spark-submit to a standalone master and one worker with ``--cores`` cores
(``benchmarks.history_cluster_throughput.standalone``), the code shipped with ``--py-files``.

Measured per size: the submission's wall time and each ``[history]`` step's seconds,
the peak resident memory of the driver's JVM and Python process and of the executor's JVM and
Python workers (sampled from /proc every 0.5 s, and each process's VmHWM), rows read and rows
per second per core, the series in ``hours_to_full.prom``; then each step extrapolated to
``--target-brokers`` x ``--target-days`` (``benchmarks.fleet_measure.extrapolate``). The load
average is printed before and after every run: the figures are only as quiet as the machine.

Run: ``python -m benchmarks.history_fleet_scale --brokers 1000 --volumes-per-broker 16
--days 1 --days 3 --days 10 --cores 2 --workdir /tmp/vq-fleet-scale``.
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


def submit_report(
    master: str,
    package: Path,
    data: Path,
    out: Path,
    memory: SparkMemory,
) -> Submission:
    """``job.py report --usage-dataset`` on the standalone cluster, timed and sampled."""
    at = synthetic.HistoryConfig().at.isoformat()
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"), "--master", master,
        "--driver-memory", memory.driver, "--executor-memory", memory.executor,
        "--py-files", str(package),
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", "spark.ui.enabled=false",
        str(JOB), "report", "--input", (data / "volumes").as_uri(), "--at", at,
        "--usage-dataset", (data / "usage").as_uri(), "--output-dir", out.as_uri(),
    ]  # fmt: skip
    sampler = MemorySampler()
    sampler.start()
    started = time.monotonic()
    # spark-submit's PythonRunner sends the Python driver's stderr (the step lines) to stdout.
    result = subprocess.run(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=spark_environment(),
        check=False,
    )
    elapsed = time.monotonic() - started
    peaks = sampler.stop()
    (out.parent / f"{out.name}.log").write_text(result.stdout)
    return Submission(elapsed, parse_steps(result.stdout), peaks, result.stdout, result.returncode)


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
    parser.add_argument("--days", type=float, action="append", required=True,
                        help="days of history of one size; repeatable")  # fmt: skip
    parser.add_argument("--brokers", type=int, default=1000, help="default: %(default)s")
    parser.add_argument("--volumes-per-broker", type=int, default=16, help="default: %(default)s")
    parser.add_argument("--cores", type=int, default=2, help="the worker's cores")
    parser.add_argument("--worker-memory", default="12g", help="the worker's memory (%(default)s)")
    parser.add_argument("--driver-memory", default="4g", help="spark-submit's (%(default)s)")
    parser.add_argument("--executor-memory", default="8g", help="spark-submit's (%(default)s)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/vq-fleet-scale"),
                        help="datasets (kept and reused), reports, logs")  # fmt: skip
    parser.add_argument(
        "--target-brokers",
        type=int,
        default=10_000,
        help="extrapolate to this fleet (%(default)s brokers)",
    )
    parser.add_argument(
        "--target-days", type=float, default=90.0, help="... and this history (%(default)s days)"
    )
    arguments = parser.parse_args(argv)
    workdir: Path = arguments.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    memory = SparkMemory(arguments.driver_memory, arguments.executor_memory)
    print(f"machine: {describe_machine()}", flush=True)
    package = build_zip(workdir / "dist")
    at = synthetic.HistoryConfig().at
    measured: list[Measured] = []
    with standalone(workdir, arguments.cores, arguments.worker_memory) as master:
        for days in arguments.days:
            shape = FleetShape(arguments.brokers, arguments.volumes_per_broker, days, at)
            name = f"b{shape.brokers}-v{shape.volumes_per_broker}-d{days:g}"
            written = ensure_fleet(shape, workdir / name)
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
                    volumes,
                    days,
                    written.volume_rows / days,
                    written.usage_rows / days,
                    run.steps,
                )
            )
            (workdir / f"{name}.json").write_text(
                json.dumps(
                    {"seconds": run.seconds, "steps": run.steps,
                     "sampled": run.peaks.sampled, "highWater": run.peaks.high_water,
                     "cpuSeconds": run.peaks.cpu_seconds(),
                     "volumeRows": written.volume_rows, "usageRows": written.usage_rows,
                     "writeSeconds": written.seconds, "cores": arguments.cores}
                )
            )  # fmt: skip
    if measured:
        target = extrapolate(
            measured,
            arguments.target_brokers * arguments.volumes_per_broker,
            arguments.target_days,
        )
        total = sum(target.values())
        print(
            f"extrapolated to {arguments.target_brokers:,} x {arguments.volumes_per_broker} "
            f"volumes, {arguments.target_days:g} days: {total:,.0f} s of steps on "
            f"{arguments.cores} cores = {total * arguments.cores / 3600:,.1f} core-hours"
        )
        for stage, seconds in target.items():
            print(f"  {stage}: {seconds:,.0f} s")
    print(f"load average at the end: {_load()}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
