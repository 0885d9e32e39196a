"""Incremental ingest of the topic usage topic (or JSONL files) into the usage dataset.

The same mechanism as the snapshot ingest (``spark_history/ingest.py``: Structured Streaming,
``trigger(availableNow=True)``, its own checkpoint, the file sink's ``_spark_metadata`` log):
re-running never duplicates a row. Messages are judged by ``spark_history.usage_documents``
(the decider's strict ``decode_usage``; a Kafka record's key must be its document's
``brokerId``) inside ``mapInArrow``; skipped messages are counted per reason through
``DataFrame.observe``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import partial
from typing import Any, TextIO

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention
from pyspark.sql import types as T  # noqa: N812 - Spark's convention

from spark_history.ingest import (
    MESSAGE_METRICS,
    IngestCounts,
    JsonlSource,
    KafkaSource,
    append_dated_rows,
    spread_messages,
)
from spark_history.usage_documents import (
    USAGE_REJECTION_LABELS,
    USAGE_ROW_COLUMNS,
    USAGE_ROW_DDL,
    usage_rows,
    usage_verdict,
)

_JUDGED_DDL = "messageRow boolean, rejection string, " + USAGE_ROW_DDL


def judged_schema() -> T.StructType:
    """What :func:`judge_messages` yields: per message, one row flagged ``messageRow`` (its
    ``rejection``, and its first usage row, if any), then its other usage rows."""
    schema = T._parse_datatype_string(_JUDGED_DDL)
    assert isinstance(schema, T.StructType)
    return schema


def _arrow_schema(schema: T.StructType) -> Any:
    """The Arrow schema of ``schema`` (built on the driver: parsing DDL needs the session)."""
    arrow = {
        "boolean": pa.bool_(),
        "string": pa.string(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "double": pa.float64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema(
        [(field.name, arrow[field.dataType.simpleString()]) for field in schema.fields]
    )


def _judge_batches(batches: Iterator[Any], check_key: bool, schema: Any) -> Iterator[Any]:
    for batch in batches:
        names = list(batch.schema.names)
        values = _bytes_list(batch.column(names.index("value")))
        keys = (
            _bytes_list(batch.column(names.index("key")))
            if "key" in names
            else [None] * batch.num_rows
        )
        rows: list[dict[str, Any]] = []
        for key, value in zip(keys, values, strict=True):
            verdict = usage_verdict(key, value, check_key)
            made = [] if verdict.document is None else usage_rows(verdict.document)
            first = made[0] if made else {}
            rows.append({**first, "messageRow": True, "rejection": verdict.rejection})
            rows.extend({**row, "messageRow": False} for row in made[1:])
        yield from pa.Table.from_pylist(rows, schema=schema).to_batches()


def _bytes_list(column: Any) -> list[bytes | None]:
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.binary())
    values: list[bytes | None] = column.to_pylist()
    return values


def judge_messages(messages: DataFrame, check_key: bool) -> DataFrame:
    """Usage messages (binary ``key`` and ``value``) to judged rows (:func:`judged_schema`)."""
    schema = judged_schema()
    return messages.select("key", "value").mapInArrow(
        partial(_judge_batches, check_key=check_key, schema=_arrow_schema(schema)), schema
    )


def usage_rejection_metrics() -> list[Column]:
    message = F.col("messageRow")
    metrics = [
        F.count_if(message).alias("messages"),
        F.count_if(message & F.col("rejection").isNull()).alias("valid"),
    ]
    metrics += [
        F.count_if(message & (F.col("rejection") == label)).alias(label)
        for label in USAGE_REJECTION_LABELS
    ]
    return metrics


def usage_dataset_rows(judged: DataFrame) -> DataFrame:
    """The dataset's rows (:data:`USAGE_ROW_COLUMNS`) of judged messages."""
    rows = judged.where(F.col("kind").isNotNull())
    return rows.withColumn("date", F.to_date(F.col("surveyedAt"))).select(*USAGE_ROW_COLUMNS)


def run_usage_ingest(
    session: SparkSession,
    source: KafkaSource | JsonlSource,
    checkpoint: str,
    output: str,
    stream: TextIO = sys.stderr,
) -> IngestCounts:
    """Append every usage message not yet ingested to ``output``; the counts of this run."""
    messages = spread_messages(session, source)
    judged = judge_messages(messages, check_key=isinstance(source, KafkaSource))
    observed = judged.observe(MESSAGE_METRICS, *usage_rejection_metrics())
    return append_dated_rows(session, usage_dataset_rows(observed), checkpoint, output, stream)


def describe_usage_counts(counts: IngestCounts) -> str:
    skipped = (
        ", ".join(f"{name} {count}" for name, count in sorted(counts.skipped.items()) if count)
        or "none"
    )
    return (
        f"{counts.messages} usage messages in {counts.batches} batches: {counts.valid} valid, "
        f"{counts.rows} usage rows written; skipped: {skipped}"
    )
