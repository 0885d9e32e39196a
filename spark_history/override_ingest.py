"""Incremental ingest of the operator's override topic (or JSONL files) into the override dataset,
and loading it back for the limit replay.

The same mechanism as the snapshot ingest (``spark_history/ingest.py``: Structured Streaming,
``trigger(availableNow=True)``, its own checkpoint, the file sink's ``_spark_metadata`` log):
re-running never duplicates a row. Each record is kept as Kafka gave it (key, value, headers,
timestamp and its type, partition, offset): whether an override was believed is decided when
the history is analysed, by the consumer's own judgement with the decider's settings
(``spark_history.override_history``), not here.

A JSONL line stands for one record (an export, or a test), as a JSON object::

    {"receivedAt": "2026-11-20T01:10:00Z", "key": "cluster",
     "value": "{\\"schemaVersion\\": 1, ...}",
     "headers": [{"key": "vq-signature", "value": "<base64>"}], "partition": 0, "offset": 7}

``receivedAt`` is the record's Kafka timestamp; ``key`` and ``value`` are the record's bytes as
UTF-8 text (``value`` null: a tombstone), exactly as signed; header values are base64.
``headers``, ``partition`` and ``offset`` may be left out.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.ingest import (
    MESSAGE_METRICS,
    IngestCounts,
    JsonlSource,
    KafkaSource,
    append_dated_rows,
    jsonl_messages,
    kafka_messages,
)
from spark_history.override_history import OverrideRecord

OVERRIDE_ROW_COLUMNS: tuple[str, ...] = (
    "key",
    "value",
    "headers",
    "timestamp",
    "timestampType",
    "partition",
    "offset",
    "date",
)
_KAFKA_COLUMNS = ("key", "value", "headers", "timestamp", "timestampType", "partition", "offset")
_JSONL_RECORD = (
    "receivedAt string, key string, value string, "
    "headers array<struct<key: string, value: string>>, partition int, offset bigint"
)


def jsonl_override_records(session: SparkSession, source: JsonlSource) -> DataFrame:
    """The records of JSONL lines (the module's format) with the Kafka source's columns."""
    parsed = jsonl_messages(session, source).select(
        F.from_json(F.col("value").cast("string"), _JSONL_RECORD).alias("record")
    )
    headers = F.transform(
        F.coalesce(F.col("record.headers"), F.array()),
        lambda header: F.struct(
            header["key"].alias("key"), F.unbase64(header["value"]).alias("value")
        ),
    )
    return parsed.select(
        F.encode(F.col("record.key"), "UTF-8").alias("key"),
        F.encode(F.col("record.value"), "UTF-8").alias("value"),
        headers.alias("headers"),
        F.to_timestamp(F.col("record.receivedAt")).alias("timestamp"),
        F.lit(None).cast("int").alias("timestampType"),
        F.coalesce(F.col("record.partition"), F.lit(0)).alias("partition"),
        F.coalesce(F.col("record.offset"), F.lit(0).cast("bigint")).alias("offset"),
    )


def override_dataset_rows(records: DataFrame) -> DataFrame:
    """The dataset's rows (:data:`OVERRIDE_ROW_COLUMNS`): the records with a timestamp (one
    without cannot be placed in time), dated by it."""
    return (
        records.where(F.col("timestamp").isNotNull())
        .withColumn("date", F.to_date(F.col("timestamp")))
        .select(*OVERRIDE_ROW_COLUMNS)
    )


def run_override_ingest(
    session: SparkSession,
    source: KafkaSource | JsonlSource,
    checkpoint: str,
    output: str,
    stream: TextIO = sys.stderr,
) -> IngestCounts:
    """Append every override record not yet ingested to ``output``; the counts of this run."""
    if isinstance(source, KafkaSource):
        records = kafka_messages(session, source, _KAFKA_COLUMNS)
    else:
        records = jsonl_override_records(session, source)
    observed = records.observe(
        MESSAGE_METRICS,
        F.count(F.lit(1)).alias("messages"),
        F.count_if(F.col("timestamp").isNotNull()).alias("valid"),
    )
    return append_dated_rows(session, override_dataset_rows(observed), checkpoint, output, stream)


def describe_override_counts(counts: IngestCounts) -> str:
    return (
        f"{counts.messages} override records in {counts.batches} batches, {counts.rows} kept "
        "(judged when the history is analysed)"
    )


def load_override_records(session: SparkSession, dataset: str) -> list[OverrideRecord]:
    """Every record of the override dataset (a small topic: it fits the driver)."""
    # Microseconds, not the timestamp: Spark hands Python naive local times.
    micros = F.unix_micros(F.col("timestamp")).alias("micros")
    rows = session.read.parquet(dataset).select(*OVERRIDE_ROW_COLUMNS, micros).collect()
    return [
        OverrideRecord(
            key=None if row["key"] is None else bytes(row["key"]),
            value=None if row["value"] is None else bytes(row["value"]),
            headers=tuple(
                (str(header["key"]), None if header["value"] is None else bytes(header["value"]))
                for header in row["headers"] or ()
            ),
            arrived_at=datetime.fromtimestamp(int(row["micros"]) / 1e6, UTC),
            partition=int(row["partition"]),
            offset=int(row["offset"]),
        )
        for row in rows
    ]
