"""The history commands: CSV columns, a self-contained report, one-line errors with exit 2."""

from __future__ import annotations

import base64
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_history import synthetic
from spark_history.commands import main
from spark_history.synthetic_jsonl import write_jsonl

pytestmark = pytest.mark.spark

CONFIG = synthetic.HistoryConfig(history_hours=4 * 24, interval_seconds=900)
AT = "2026-11-22T12:00:00Z"
SPARK = ["--master", "local[2]"]


@pytest.fixture(scope="module")
def history_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("history") / "snapshots.jsonl"
    traces = synthetic.make_traces(8, 12, CONFIG)
    write_jsonl(synthetic.history_frame(traces, 8, CONFIG), path)
    return path


def test_forecast_writes_one_row_per_volume(
    spark: SparkSession, history_file: Path, tmp_path: Path
) -> None:
    output = tmp_path / "forecast.csv"
    status = main(
        ["forecast", "--input", str(history_file), "--at", AT, "--output", str(output), *SPARK]
    )
    assert status == 0
    with output.open() as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 12
    for column in (
        "brokerId",
        "volumeName",
        "hoursToFull",
        "hoursToFullLow",
        "hoursToFullHigh",
        "usedPercent",
        "trend",
    ):
        assert column in rows[0]
    assert any(row["hoursToFull"] == "" for row in rows)  # plateaued volumes
    assert any(row["hoursToFull"] != "" for row in rows)


def test_ingest_then_forecast_from_the_parquet_dataset(
    spark: SparkSession, history_file: Path, tmp_path: Path
) -> None:
    dataset = tmp_path / "dataset"
    assert (
        main(
            [
                "ingest",
                "--source",
                "jsonl",
                "--input",
                str(history_file),
                "--checkpoint",
                str(tmp_path / "ck"),
                "--output",
                str(dataset),
                *SPARK,
            ]
        )
        == 0
    )
    output = tmp_path / "forecast.csv"
    assert (
        main(["forecast", "--input", str(dataset), "--at", AT, "--output", str(output), *SPARK])
        == 0
    )
    assert len(output.read_text().splitlines()) == 13


def test_report_is_one_html_file_with_embedded_images(
    spark: SparkSession, history_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    assert (
        main(
            [
                "report",
                "--input",
                str(history_file),
                "--at",
                AT,
                "--output-dir",
                str(out),
                "--max-plotted",
                "3",
                *SPARK,
            ]
        )
        == 0
    )
    html = (out / "report.html").read_text()
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    assert len(images) >= 4  # days-to-full, three volumes, balance
    assert all(base64.b64decode(image).startswith(b"\x89PNG") for image in images)
    assert "src='http" not in html
    assert 'src="http' not in html
    for name in ("forecast.csv", "thresholds.csv", "balance.csv", "summary.json"):
        assert (out / name).is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["volumes"] == 12


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["forecast", "--input", "/nonexistent/x", "--at", AT, "--output", "o.csv"],
            "does not exist",
        ),
        (
            ["forecast", "--input", "{input}", "--at", "yesterday", "--output", "o.csv"],
            "not an ISO 8601 time",
        ),
        (
            ["report", "--input", "{input}", "--at", "2026-11-22T12:00:00", "--output-dir", "d"],
            "has no offset",
        ),
        (["ingest", "--source", "jsonl", "--checkpoint", "c", "--output", "o"], "needs --input"),
        (
            [
                "ingest",
                "--source",
                "jsonl",
                "--input",
                "{input}",
                "--checkpoint",
                "c",
                "--output",
                "o",
                "--compact-min-files",
                "1",
            ],
            "--compact-min-files must be at least 2",
        ),
        (["compact", "--dataset", "/nonexistent/x"], "does not exist"),
        (["compact", "--dataset", "{input}", "--min-files", "0"], "--min-files must be at least 2"),
        (
            ["report", "--input", "{input}", "--output-dir", "d", "--growth-weeks", "0"],
            "--growth-weeks must be at least 1",
        ),
        (
            ["forecast", "--input", "{input}", "--output", "f.csv", "--history-bucket", "1.5s"],
            "history_bucket (--history-bucket, VOLUME_QUOTA_HISTORY_BUCKET)",
        ),
        (
            ["report", "--input", "{input}", "--output-dir", "d", "--history-bucket", "2d"],
            "history_bucket (--history-bucket, VOLUME_QUOTA_HISTORY_BUCKET)",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    arguments: list[str], message: str, history_file: Path, tmp_path: Path
) -> None:
    argv = [part.replace("{input}", str(history_file)) for part in arguments]
    result = subprocess.run(
        [sys.executable, "-m", "spark_history", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
