"""The override topic in the history: records ingested as Kafka kept them (once, however often
the ingest runs), and ``history report`` following the overrides they set, judged with the
decider's own settings."""

from __future__ import annotations

import base64
import csv
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from pyspark.sql import SparkSession

from schemas.wire_types import format_instant
from spark_history import synthetic
from spark_history.commands import main
from spark_history.ingest import JsonlSource
from spark_history.override_history import OverrideRecord
from spark_history.override_ingest import load_override_records, run_override_ingest
from spark_history.synthetic_jsonl import write_jsonl
from tests.spark_history_pure.override_factory import (
    OPERATOR,
    OperatorSigner,
    override_record,
    override_value,
)

pytestmark = pytest.mark.spark

AT = datetime.fromisoformat("2026-11-22T12:00:00+00:00")
SIGNER = OperatorSigner(AT - timedelta(days=10))
SPARK = ["--master", "local[2]"]


def _hours_before(hours: float) -> datetime:
    return AT - timedelta(hours=hours)


def _jsonl_line(record: OverrideRecord) -> str:
    """One record in the JSONL format of ``spark_history.override_ingest``."""
    return json.dumps(
        {
            "receivedAt": format_instant(record.arrived_at),
            "key": None if record.key is None else record.key.decode(),
            "value": None if record.value is None else record.value.decode(),
            "headers": [
                {"key": name, "value": None if value is None else base64.b64encode(value).decode()}
                for name, value in record.headers
            ],
            "partition": record.partition,
            "offset": record.offset,
        }
    )


def _write(path: Path, records: list[OverrideRecord]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(_jsonl_line(record) + "\n" for record in records))


def _operator_records() -> list[OverrideRecord]:
    """A signed PAUSE from 30 h to 10 h before AT, and an unsigned OPEN inside it."""
    pause = override_value("PAUSE", _hours_before(30), _hours_before(10))
    forged = override_value("OPEN", _hours_before(20), _hours_before(15))
    return [
        override_record(pause, _hours_before(30), SIGNER, 0),
        override_record(forged, _hours_before(20), None, 1),
    ]


def test_records_are_kept_as_kafka_kept_them_and_ingested_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    first = _operator_records()
    _write(inbox / "one.jsonl", first)
    checkpoint, dataset = (tmp_path / "ck").as_uri(), (tmp_path / "overrides").as_uri()
    counts = run_override_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset)
    assert (counts.messages, counts.rows) == (2, 2)
    assert load_override_records(spark, dataset) == first
    assert run_override_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset).rows == 0
    tombstone = override_record(None, _hours_before(12), SIGNER, 2)
    _write(inbox / "two.jsonl", [tombstone])
    again = run_override_ingest(spark, JsonlSource(inbox.as_uri()), checkpoint, dataset)
    assert again.rows == 1
    loaded = sorted(load_override_records(spark, dataset), key=lambda record: record.offset)
    assert loaded == [*first, tombstone]


def test_report_counts_the_hours_an_operator_forced_apart(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = synthetic.HistoryConfig(history_hours=3 * 24, interval_seconds=900)
    snapshots = tmp_path / "snapshots.jsonl"
    write_jsonl(synthetic.history_frame(synthetic.make_traces(3, 4, config), 3, config), snapshots)
    _write(tmp_path / "overrides.jsonl", _operator_records())
    ca_file = tmp_path / "operators-ca.pem"
    ca_file.write_bytes(SIGNER.ca.public_bytes(serialization.Encoding.PEM))
    ingest = ["ingest", "--source", "jsonl", "--input", str(snapshots), *SPARK]
    ingest += ["--checkpoint", str(tmp_path / "ck"), "--output", str(tmp_path / "history")]
    ingest += ["--override-output", str(tmp_path / "overrides")]
    ingest += ["--override-checkpoint", str(tmp_path / "ck-overrides")]
    ingest += ["--override-input", str(tmp_path / "overrides.jsonl")]
    assert main(ingest) == 0
    assert "ingested 2 override records" in capsys.readouterr().out
    report = ["report", "--input", str(tmp_path / "history"), "--at", format_instant(AT)]
    report += ["--output-dir", str(tmp_path / "report"), "--max-plotted", "1", *SPARK]
    report += ["--override-dataset", str(tmp_path / "overrides")]
    report += ["--override-signatures", "require", "--override-signers", OPERATOR]
    report += ["--signature-ca-file", str(ca_file)]
    assert main(report) == 0
    assert "1 in force at some time in the history, 1 records refused (unsigned)" in (
        capsys.readouterr().err
    )
    with (tmp_path / "report" / "thresholds.csv").open() as stream:
        rows = list(csv.DictReader(stream))
    # The buckets ending 29 h to 11 h before AT lie wholly in the PAUSE: 19 h, for the limits
    # in force and every candidate; the unsigned OPEN inside it changed nothing.
    assert {float(row["overridePausedHours"]) for row in rows} == {19.0}
    assert {float(row["overrideOpenHours"]) for row in rows} == {0.0}
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert "19 h forced PAUSE" in summary["thresholdAdvice"]
