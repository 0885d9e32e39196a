"""The job on a real Spark standalone cluster, submitted with spark-submit as a user would.

A master and one worker (2 cores, 2 GiB: in cluster deploy mode the driver takes one of them)
start on loopback from pyspark's own jars (``spark-class org.apache.spark.deploy.master.Master``
/ ``...worker.Worker``). The project's code goes to the executors in the ``--py-files`` zip
(``spark_history.package``); the dependencies come from the interpreter named by
``spark.pyspark.python`` (this one). Every path is a ``file://`` URI. Checked, in client and in
cluster deploy mode: spark-submit's ``--conf`` wins over the job's defaults, executors import
the shipped zip, and the Parquet dataset, the CSVs and the HTML land at the URIs given.

Cluster deploy mode: spark-submit refuses a Python file as the application on a standalone
master, so the driver is Spark's own ``org.apache.spark.deploy.PythonRunner`` (the class
spark-submit itself runs for a Python application in client mode) submitted as a JVM
application; the master starts it on the worker, and it runs ``job.py`` there
(docs/history.md, "Deploy mode").
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyspark
import pytest

from spark_history import synthetic
from spark_history.package import ZIP_NAME, build_zip
from spark_history.synthetic_jsonl import write_jsonl

pytestmark = pytest.mark.spark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
JOB = Path(__file__).resolve().parents[2] / "spark_history" / "job.py"
START_TIMEOUT = 120.0
SUBMIT_TIMEOUT = 420.0
DRIVER_JAVA_OPTIONS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED "
    "-Dio.netty.tryReflectionSetAccessible=true"
)
"""What Arrow needs on Java 17. spark-submit gives them to a driver it runs itself, the
standalone worker does not give them to a driver it starts (without them, Arrow fails and
pandas conversions fall back to the slow path)."""


@dataclass(frozen=True)
class Standalone:
    url: str
    logs: Path


def _environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYSPARK")}
    env.pop("PYTHONPATH", None)
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1")
    env["SPARK_DAEMON_MEMORY"] = "256m"
    return env


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except (OSError, ValueError):  # not serving yet, or not yet serving JSON
        return 0


def _logged(log: Path, pattern: str, process: subprocess.Popen[bytes], deadline: float) -> str:
    """The first group of ``pattern`` once ``process`` has written it to ``log``."""
    while (found := re.search(pattern, log.read_text(errors="replace"))) is None:
        assert time.monotonic() < deadline, log.read_text(errors="replace")[-2000:]
        assert process.poll() is None, log.read_text(errors="replace")[-2000:]
        time.sleep(0.5)
    return found.group(1)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    logs = tmp_path_factory.mktemp("standalone")
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    processes: list[subprocess.Popen[bytes]] = []
    deadline = time.monotonic() + START_TIMEOUT
    try:
        # Port 0 everywhere: each service binds a port of the kernel's choosing and logs it.
        # A port picked here and bound later can be taken meanwhile by another suite, and a
        # Spark service then moves to the next port while we would ask the other process.
        with (logs / "master.log").open("wb") as log:
            processes.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.master.Master", "--host",
                     "127.0.0.1", "--port", "0", "--webui-port", "0"],
                    stdout=log, stderr=subprocess.STDOUT, env=_environment(),
                )
            )  # fmt: skip
        master = processes[0]
        url = _logged(
            logs / "master.log", r"Starting Spark master at (spark://\S+)", master, deadline
        )
        ui_port = int(
            _logged(logs / "master.log", r"service 'MasterUI' on port (\d+)", master, deadline)
        )
        with (logs / "worker.log").open("wb") as log:
            processes.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", url,
                     "--cores", "2", "--memory", "2g", "--host", "127.0.0.1",
                     "--webui-port", "0", "--work-dir", str(logs / "work")],
                    stdout=log, stderr=subprocess.STDOUT, env=_environment(),
                )
            )  # fmt: skip
        while _alive_workers(ui_port) < 1:
            assert time.monotonic() < deadline, (logs / "worker.log").read_text()[-2000:]
            assert all(process.poll() is None for process in processes)
            time.sleep(1.0)
        yield Standalone(url, logs)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _common_conf() -> list[str]:
    return [
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        "--conf", "spark.executor.memory=512m",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=3",
    ]  # fmt: skip


def _run_submit(cluster: Standalone, name: str, command: list[str]) -> str:
    """Runs spark-submit from an empty directory (nothing of the checkout is importable by
    accident); returns its output, which is also kept beside the cluster's logs."""
    workdir = cluster.logs / "submit"
    workdir.mkdir(exist_ok=True)
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=SUBMIT_TIMEOUT,
        cwd=workdir,
        env=_environment(),
        check=False,
    )
    output = result.stdout + result.stderr
    (cluster.logs / f"submit-{name}.log").write_text(output)
    assert result.returncode == 0, output[-3000:]
    return output


def _job_lines(output: str) -> str:
    """The job's own lines and Python's warnings among Spark's (Spark logs at INFO under
    spark-submit's log4j)."""
    return "\n".join(
        line
        for line in output.splitlines()
        if line.startswith(("[history]", "volume-quota", "wrote", "ingested"))
        or "Warning: " in line
    )


def _submit(cluster: Standalone, package: Path, *job: str) -> str:
    """Client deploy mode: the driver runs here, in spark-submit; returns the job's lines."""
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master", cluster.url,
        "--deploy-mode", "client",
        "--py-files", str(package),
        *_common_conf(),
        "--conf", "spark.driver.memory=768m",
        str(JOB), *job,
    ]  # fmt: skip
    # spark-submit merges the Python driver's stderr into its stdout.
    return _job_lines(_run_submit(cluster, f"client-{job[0]}", command))


def _submit_cluster_mode(cluster: Standalone, package: Path, *job: str) -> str:
    """Cluster deploy mode: the master starts the driver on the worker; spark-submit waits
    for it to finish. Returns the job's lines from the driver's stdout in the worker's work
    directory (where a user finds them)."""
    core_jar = next((SPARK_HOME / "jars").glob("spark-core_*.jar"))
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master", cluster.url,
        "--deploy-mode", "cluster",
        "--class", "org.apache.spark.deploy.PythonRunner",
        "--conf", "spark.standalone.submit.waitAppCompletion=true",
        "--files", package.as_uri(),
        "--conf", f"spark.submit.pyFiles={ZIP_NAME}",
        "--conf", f"spark.driver.extraJavaOptions={DRIVER_JAVA_OPTIONS}",
        *_common_conf(),
        "--conf", "spark.driver.memory=512m",
        core_jar.as_uri(), str(JOB), str(package), *job,
    ]  # fmt: skip
    output = _run_submit(cluster, f"cluster-{job[0]}", command)
    driver = re.search(r"Driver successfully submitted as (driver-\S+)", output)
    assert driver, output[-3000:]
    assert f"State of driver {driver.group(1)} is FINISHED" in output, output[-3000:]
    return _job_lines((cluster.logs / "work" / driver.group(1) / "stdout").read_text())


@pytest.mark.parametrize("deploy_mode", ["client", "cluster"])
def test_ingest_and_report_on_a_standalone_cluster(
    standalone: Standalone, tmp_path: Path, deploy_mode: str
) -> None:
    submit = _submit if deploy_mode == "client" else _submit_cluster_mode
    config = synthetic.HistoryConfig(history_hours=3 * 24, interval_seconds=1800)
    source = tmp_path / "in" / "snapshots.jsonl"
    write_jsonl(synthetic.history_frame(synthetic.make_traces(5, 6, config), 5, config), source)
    package = build_zip(tmp_path / "dist")
    dataset, checkpoint = (tmp_path / "dataset").as_uri(), (tmp_path / "ck").as_uri()

    ingest = submit(standalone, package, "ingest", "--source", "jsonl", "--input",
                    source.parent.as_uri(), "--checkpoint", checkpoint,
                    "--output", dataset)  # fmt: skip
    assert f"spark.submit.deployMode={deploy_mode}" in ingest, ingest
    # spark-submit's --conf wins over the job's default of 8 shuffle partitions.
    assert "spark.sql.shuffle.partitions=3" in ingest
    assert f"executors import spark_history from ./{ZIP_NAME}/" in ingest, ingest
    assert "ingested " in ingest, ingest
    assert (tmp_path / "dataset" / "_spark_metadata").is_dir()
    assert any((tmp_path / "dataset").glob("date=*/*.parquet"))

    report = tmp_path / "out" / "report"
    result = submit(standalone, package, "report", "--input", dataset, "--at",
                    config.at.isoformat(), "--output-dir", report.as_uri())  # fmt: skip
    assert "spark.sql.shuffle.partitions=3" in result
    assert "Arrow optimization" not in result, "Arrow failed: the driver lacks its JVM options"
    forecast = pd.read_csv(report / "forecast.csv")
    assert len(forecast) == 6
    assert (report / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((report / "summary.json").read_text())["volumes"] == 6
    assert (report / "hours_to_full.prom").read_text().count("\n") > 6
