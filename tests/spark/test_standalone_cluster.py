"""The job on a real Spark standalone cluster, submitted with spark-submit as a user would.

A master and one worker (1 core, 1 GiB) start on loopback from pyspark's own jars
(``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``). The project's
code goes to the executors in the ``--py-files`` zip (``spark_history.package``); the
dependencies come from the interpreter named by ``spark.pyspark.python`` (this one). Every
path is a ``file://`` URI. Checked: spark-submit's ``--conf`` wins over the job's defaults,
executors import the shipped zip, and the Parquet dataset, the CSVs and the HTML land at the
URIs given.
"""

from __future__ import annotations

import json
import os
import socket
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


@dataclass(frozen=True)
class Standalone:
    url: str
    logs: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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
    except OSError:
        return 0


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    logs = tmp_path_factory.mktemp("standalone")
    port, ui_port, worker_ui = _free_port(), _free_port(), _free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with (logs / "master.log").open("wb") as log:
            processes.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.master.Master", "--host",
                     "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)],
                    stdout=log, stderr=subprocess.STDOUT, env=_environment(),
                )
            )  # fmt: skip
        with (logs / "worker.log").open("wb") as log:
            processes.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.worker.Worker",
                     f"spark://127.0.0.1:{port}", "--cores", "1", "--memory", "1g",
                     "--host", "127.0.0.1", "--webui-port", str(worker_ui),
                     "--work-dir", str(logs / "work")],
                    stdout=log, stderr=subprocess.STDOUT, env=_environment(),
                )
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while _alive_workers(ui_port) < 1:
            assert time.monotonic() < deadline, (logs / "worker.log").read_text()[-2000:]
            assert all(process.poll() is None for process in processes)
            time.sleep(1.0)
        yield Standalone(f"spark://127.0.0.1:{port}", logs)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _submit(cluster: Standalone, package: Path, *job: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master", cluster.url,
        "--deploy-mode", "client",
        "--py-files", str(package),
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        "--conf", "spark.executor.memory=512m",
        "--conf", "spark.driver.memory=768m",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=3",
        str(JOB), *job,
    ]  # fmt: skip
    # From an empty directory: nothing of the checkout is importable by accident.
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
    (cluster.logs / f"submit-{job[0]}.log").write_text(result.stdout + result.stderr)
    # The job's own lines. spark-submit merges the Python driver's stderr into its stdout, and
    # Spark logs at INFO under spark-submit's default log4j.
    result.stderr = "\n".join(
        line
        for line in (result.stdout + result.stderr).splitlines()
        if line.startswith(("[history]", "volume-quota", "wrote", "ingested"))
    )
    return result


def test_ingest_and_report_on_a_standalone_cluster(standalone: Standalone, tmp_path: Path) -> None:
    config = synthetic.HistoryConfig(history_hours=3 * 24, interval_seconds=1800)
    source = tmp_path / "in" / "snapshots.jsonl"
    write_jsonl(synthetic.history_frame(synthetic.make_traces(5, 6, config), 5, config), source)
    package = build_zip(tmp_path / "dist")
    dataset, checkpoint = (tmp_path / "dataset").as_uri(), (tmp_path / "ck").as_uri()

    ingest = _submit(standalone, package, "ingest", "--source", "jsonl", "--input",
                     source.parent.as_uri(), "--checkpoint", checkpoint,
                     "--output", dataset)  # fmt: skip
    assert ingest.returncode == 0, ingest.stderr[-3000:]
    # spark-submit's --conf wins over the job's default of 8 shuffle partitions.
    assert "spark.sql.shuffle.partitions=3" in ingest.stderr
    assert f"executors import spark_history from ./{ZIP_NAME}/" in ingest.stderr, ingest.stderr
    assert (tmp_path / "dataset" / "_spark_metadata").is_dir()
    assert any((tmp_path / "dataset").glob("date=*/*.parquet"))

    report = tmp_path / "out" / "report"
    result = _submit(standalone, package, "report", "--input", dataset, "--at",
                     config.at.isoformat(), "--output-dir", report.as_uri())  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "spark.sql.shuffle.partitions=3" in result.stderr
    forecast = pd.read_csv(report / "forecast.csv")
    assert len(forecast) == 6
    assert (report / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((report / "summary.json").read_text())["volumes"] == 6
