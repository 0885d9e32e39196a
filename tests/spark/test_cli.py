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
            "invalid setting compact_min_files (--compact-min-files, "
            "VOLUME_QUOTA_COMPACT_MIN_FILES): Input should be greater than or equal to 2",
        ),
        (["compact", "--dataset", "/nonexistent/x"], "does not exist"),
        (
            ["compact", "--dataset", "{input}", "--min-files", "0"],
            "invalid setting min_files (--min-files, VOLUME_QUOTA_MIN_FILES): Input should be "
            "greater than or equal to 2",
        ),
        (
            ["report", "--input", "{input}", "--output-dir", "d", "--growth-weeks", "0"],
            "invalid setting growth_weeks (--growth-weeks, VOLUME_QUOTA_GROWTH_WEEKS): Input "
            "should be greater than or equal to 1",
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


@pytest.fixture
def in_tmp_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Relative paths of a run land in the test's own directory."""
    monkeypatch.chdir(tmp_path)


FORECAST = ["forecast", "--input", "{input}", "--output", "f.csv"]
REPORT = ["report", "--input", "{input}", "--output-dir", "d"]
INGEST = ["ingest", "--source", "kafka", "--checkpoint", "c", "--output", "o"]
COMPACT = ["compact", "--dataset", "{input}"]


@pytest.mark.parametrize(
    ("arguments", "flag", "problem"),
    [
        ([*FORECAST, "--horizon-days", "0"], "--horizon-days", "greater than 0"),
        ([*FORECAST, "--lookback-days", "-1"], "--lookback-days", "greater than 0"),
        ([*FORECAST, "--retired-after-hours", "x"], "--retired-after-hours", "valid number"),
        ([*FORECAST, "--horizon-days", "inf"], "--horizon-days", "finite number"),
        ([*REPORT, "--calibration-volumes", "0"], "--calibration-volumes", "greater than or"),
        ([*FORECAST, "--at", "2026-11-22"], "--at", "has no offset"),
        ([*FORECAST, "--mechanism-output", "m.csv"], "--usage-dataset", "needs --usage-dataset"),
        ([*REPORT, "--soft-grid", "5,101"], "--soft-grid", "less than or equal to 100"),
        ([*REPORT, "--hard-grid", "-1"], "--hard-grid", "greater than or equal to 0"),
        ([*REPORT, "--soft-grid", ","], "--soft-grid", "the list is empty"),
        ([*REPORT, "--soft-grid", "5,ten"], "--soft-grid", "valid number"),
        ([*REPORT, "--min-warning-hours", "0"], "--min-warning-hours", "greater than 0"),
        ([*REPORT, "--replay-days", "0"], "--replay-days", "greater than 0"),
        ([*REPORT, "--stale-after-minutes", "0"], "--stale-after-minutes", "greater than 0"),
        ([*REPORT, "--on-missing", "CLOSE"], "--on-missing", "'PAUSE' or 'OPEN'"),
        ([*REPORT, "--max-plotted", "0"], "--max-plotted", "greater than or equal to 1"),
        ([*REPORT, "--max-clock-skew-seconds", "0"], "--max-clock-skew-seconds", "greater"),
        ([*COMPACT, "--max-rows-per-file", "0"], "--max-rows-per-file", "greater than or equal"),
        ([*INGEST, "--bootstrap-servers", "broker"], "--bootstrap-servers", "is not HOST:PORT"),
        ([*INGEST, "--tls-cert-file", "c.pem"], "--tls-key-file", "is required with"),
        (
            [*INGEST, "--tls-ca-file", "ca.pem", "--tls-truststore-file", "t.p12"],
            "--tls-truststore-file",
            "not both",
        ),
        (
            [*INGEST, "--tls-cert-file", "c", "--tls-key-file", "k", "--tls-keystore-file", "s"],
            "--tls-keystore-file",
            "not both",
        ),
        ([*INGEST, "--kafka-option", "no-equals"], "--kafka-option", "is not KEY=VALUE"),
        ([*INGEST, "--usage-input", "u.jsonl"], "--usage-input", "needs --usage-output"),
        (INGEST, "--bootstrap-servers", "--source kafka needs"),
        (["ingest", "--source", "jsonl", "--input", "{input}", "--checkpoint", "c", "--output",
          "o", "--usage-output", "u"], "--usage-checkpoint", "--usage-output needs"),
        (["ingest", "--source", "jsonl", "--input", "{input}", "--checkpoint", "c", "--output",
          "o", "--override-output", "v"], "--override-checkpoint", "--override-output needs"),
        ([*INGEST, "--override-input", "v.jsonl"], "--override-input", "needs --override-output"),
        (["report", "--input", "{input}", "--output-dir", "d", "--override-dataset", "{input}",
          "--override-signatures", "require", "--override-signers", "CN=alice"],
         "--signature-ca-file", "=require needs"),
        (["report", "--input", "{input}", "--output-dir", "d", "--override-signatures", "require"],
         "--override-signers", "=require needs"),
    ],
)  # fmt: skip
@pytest.mark.usefixtures("in_tmp_path")
def test_a_bad_setting_is_one_line_naming_its_flag_and_exit_2(
    arguments: list[str],
    flag: str,
    problem: str,
    history_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [part.replace("{input}", str(history_file)) for part in arguments]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("volume-quota: error: ")
    assert f"({flag}, VOLUME_QUOTA_" in lines[0]
    assert problem in lines[0]


@pytest.mark.usefixtures("in_tmp_path")
def test_the_history_job_reaches_kafka_with_mutual_tls_only(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("VOLUME_QUOTA_SASL_USERNAME", "history")
    assert main(INGEST) == 2
    protocol, username = capsys.readouterr().err.strip().splitlines()
    # The job has no flag for either: the lines name what the user can change.
    assert "invalid setting security_protocol (VOLUME_QUOTA_SECURITY_PROTOCOL): " in protocol
    assert "mutual TLS (SSL) only" in protocol
    assert "invalid setting sasl_username (VOLUME_QUOTA_SASL_USERNAME): does not apply" in username
    with pytest.raises(SystemExit):
        main([*INGEST, "--help"])
    options = capsys.readouterr().out
    assert "--tls-ca-file" in options
    assert "--security-protocol" not in options
    assert "--sasl-username" not in options


def test_a_bad_value_in_the_environment_or_the_config_file_names_it(
    history_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    forecast = [part.replace("{input}", str(history_file)) for part in FORECAST]
    monkeypatch.setenv("VOLUME_QUOTA_LOOKBACK_DAYS", "0")
    assert main(forecast) == 2
    assert "VOLUME_QUOTA_LOOKBACK_DAYS" in capsys.readouterr().err
    monkeypatch.delenv("VOLUME_QUOTA_LOOKBACK_DAYS")
    config = tmp_path / "history.toml"
    config.write_text('max_plotted = 0\nlog_dirs = ["/kafka"]\n')
    report = [part.replace("{input}", str(history_file)) for part in REPORT]
    assert main([*report, "--config", str(config)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "max_plotted (--max-plotted, VOLUME_QUOTA_MAX_PLOTTED)" in line
    config.write_text("max_plotted = 3\nmax_plotd = 4\n")
    assert main([*report, "--config", str(config)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"unknown setting 'max_plotd' in {config}" in line
