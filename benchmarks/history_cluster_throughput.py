"""History job throughput on a Spark standalone cluster (1 worker, 1 core), via spark-submit.

For each size, a week of one-minute snapshots (``spark_history.synthetic``) is written as a
date-partitioned Parquet dataset with pandas (not timed; the ingest is measured elsewhere),
then ``job.py report`` (forecast, cluster replay of 34 candidates over 30 days, balance,
plots, files) is submitted to a standalone master and one worker started from pyspark's jars,
the project shipped with ``--py-files``. Rows per second per core = rows / wall seconds of
the submission (JVM start and executor launch included) / cores.

Run: ``python -m benchmarks.history_cluster_throughput --rows 10000000 --rows 20000000``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pyspark

from benchmarks.machine import describe_machine
from spark_history import synthetic
from spark_history.package import build_zip

SPARK_HOME = Path(pyspark.__file__).resolve().parent
JOB = Path(__file__).resolve().parents[1] / "spark_history" / "job.py"
FLEET_ROWS = 20.7e9
VOLUMES_PER_BROKER = 4


def with_limits(frame: pd.DataFrame) -> pd.DataFrame:
    """A synthetic history's rows with the stored limits a snapshot carries: 10/5 % free."""
    return frame.assign(
        softLimitType="MinFreePercentage",
        softLimitLevel=10.0,
        hardLimitType="MinFreePercentage",
        hardLimitLevel=5.0,
        softThresholdBytes=frame["capacity"] * 0.10,
        hardThresholdBytes=frame["capacity"] * 0.05,
        free=frame["capacity"] - frame["consumed"],
    )


def write_dataset(rows: int, target: Path, seed: int = 5) -> int:
    config = synthetic.HistoryConfig(interval_seconds=60.0, missing_fraction=0.0)
    per_volume = int(config.history_hours * 3600 / config.interval_seconds)
    volumes = max(VOLUMES_PER_BROKER, round(rows / per_volume / 4) * 4)
    traces = synthetic.make_traces(seed, volumes, config)
    written = 0
    for start in range(0, volumes, 64):
        frame = synthetic.history_frame(traces[start : start + 64], seed + start, config)
        frame = with_limits(frame).assign(date=frame["snapshotAt"].dt.date.astype(str))
        frame.to_parquet(target, partition_cols=["date"], index=False)
        written += len(frame)
    return written


def spark_environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYSPARK")}
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1")
    return env


@contextmanager
def standalone(workdir: Path, cores: int, memory: str) -> Iterator[str]:
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    log = (workdir / "cluster.log").open("wb")
    master = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
         "--port", "17177", "--webui-port", "18180"],
        stdout=log, stderr=subprocess.STDOUT, env=spark_environment(),
    )  # fmt: skip
    worker = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.worker.Worker", "spark://127.0.0.1:17177",
         "--cores", str(cores), "--memory", memory, "--host", "127.0.0.1",
         "--webui-port", "18181", "--work-dir", str(workdir / "work")],
        stdout=log, stderr=subprocess.STDOUT, env=spark_environment(),
    )  # fmt: skip
    try:
        time.sleep(25.0)
        yield "spark://127.0.0.1:17177"
    finally:
        for process in (worker, master):
            process.terminate()
            process.wait(timeout=60)
        log.close()


def submit(master: str, package: Path, dataset: Path, out: Path, executor_memory: str) -> float:
    at = synthetic.HistoryConfig().at.isoformat()
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"), "--master", master,
        "--py-files", str(package),
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", f"spark.executor.memory={executor_memory}",
        "--conf", "spark.ui.enabled=false",
        str(JOB), "report", "--input", dataset.as_uri(), "--at", at,
        "--output-dir", out.as_uri(),
    ]  # fmt: skip
    started = time.monotonic()
    result = subprocess.run(
        command, capture_output=True, text=True, env=spark_environment(), check=False
    )
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(result.stdout[-3000:] + result.stderr[-3000:])
    return elapsed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, action="append", required=True)
    parser.add_argument("--executor-memory", default="2g")
    arguments = parser.parse_args(argv)
    print(f"machine: {describe_machine()}; load average {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="vq-cluster-bench-") as scratch:
        workdir = Path(scratch)
        package = build_zip(workdir / "dist")
        datasets = {}
        for rows in arguments.rows:
            datasets[rows] = (workdir / f"dataset-{rows}", 0)
            written = write_dataset(rows, datasets[rows][0])
            datasets[rows] = (datasets[rows][0], written)
        print("| volume rows | cores | report s | rows/s per core | core-hours, 20.7 B rows |")
        print("|---|---|---|---|---|")
        with standalone(workdir, 1, "3g") as master:
            for rows, (dataset, written) in datasets.items():
                seconds = submit(
                    master, package, dataset, workdir / f"out-{rows}", arguments.executor_memory
                )
                rate = written / seconds
                print(
                    f"| {written:,} | 1 | {seconds:.1f} | {rate:,.0f} | "
                    f"{FLEET_ROWS / rate / 3600:,.0f} |",
                    flush=True,
                )
        print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
