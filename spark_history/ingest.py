"""Incremental ingest: snapshot messages (Kafka topic or JSONL files) to a Parquet dataset.

Why Structured Streaming with ``trigger(availableNow=True)`` for what is a batch job: it is the
one Spark mechanism that remembers what was already read (the checkpoint holds the Kafka
offsets or the list of processed files) *and* commits output atomically with that progress.
The file sink writes each micro-batch's files and then records them in the dataset's
``_spark_metadata`` log under the batch id; the checkpoint records the batch as done only after
that. A crash between the two re-runs the same batch with the same id and the sink ignores a
batch id it already committed, and files of a failed attempt are never listed in the log,
which every Spark reader of the dataset honours. So re-running an ingest never duplicates a
row. (Read the dataset with Spark, or with a reader that honours ``_spark_metadata``; a raw
glob of ``*.parquet`` can see the orphaned files of a crashed attempt.)

Skipped messages (tombstones, invalid values, key mismatches) are counted through
``DataFrame.observe``, per rejection reason, and read back from the query's progress. Progress
is polled from the driver, not pushed to a Python ``StreamingQueryListener``: a Python listener
is a Py4J callback from the JVM, and in cluster deploy mode its last call raced the driver's
exit (an ``ERROR StreamingQueryListenerBus`` in the driver's log).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention
from pyspark.sql.streaming.listener import StreamingQueryProgress

from spark_history import storage
from spark_history.errors import HistoryUsageError
from spark_history.snapshot_rows import classify_messages, rejection_metrics, volume_rows

MESSAGE_METRICS = "snapshot_messages"
ROW_METRICS = "volume_rows"


@dataclass(frozen=True, slots=True)
class KafkaSource:
    """The snapshot topic; ``options`` are passed to Spark's Kafka source as given."""

    bootstrap_servers: str
    topic: str
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class JsonlSource:
    """A JSONL file, or a directory of them, holding snapshot values one per line.

    Files are tracked by path: add new files rather than appending to one already ingested.
    """

    path: str
    """A Hadoop URI or a path."""


@dataclass(slots=True)
class IngestCounts:
    """What one ingest run read and wrote, summed over its micro-batches."""

    batches: int = 0
    messages: int = 0
    valid: int = 0
    rows: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def describe(self) -> str:
        skipped = (
            ", ".join(f"{name} {count}" for name, count in sorted(self.skipped.items()) if count)
            or "none"
        )
        return (
            f"{self.messages} messages in {self.batches} batches: {self.valid} valid, "
            f"{self.rows} volume rows written; skipped: {skipped}"
        )


def kafka_messages(
    session: SparkSession,
    source: KafkaSource,
    columns: Sequence[str] = ("key", "value", "timestamp"),
) -> DataFrame:
    """The topic's records as Spark's Kafka source gives them (``columns`` of its schema:
    with ``headers``, the records' headers too)."""
    reader = (
        session.readStream.format("kafka")
        .option("kafka.bootstrap.servers", source.bootstrap_servers)
        .option("subscribe", source.topic)
        .option("startingOffsets", "earliest")
        # Compaction leaves offset gaps by design; history loss is prevented by the schedule
        # (docs/history.md), not detectable here.
        .option("failOnDataLoss", "false")
    )
    if "headers" in columns:
        reader = reader.option("includeHeaders", "true")
    for key, value in source.options.items():
        reader = reader.option(key, value)
    return reader.load().select(*columns)


def jsonl_messages(session: SparkSession, source: JsonlSource) -> DataFrame:
    if not storage.exists(session, source.path):
        raise HistoryUsageError(f"input {source.path} does not exist")
    # The checkpoint tracks files by their full URI: qualify a relative path once, here.
    path = storage.qualified(session, source.path)
    # A file path is a glob that matches itself; a directory is searched recursively, with no
    # partition inference (its subdirectories are not "key=value" partitions).
    reader = session.readStream.format("text").option("recursiveFileLookup", "true")
    lines = reader.load(storage.glob_escape(path))
    return lines.where(F.length(F.trim(F.col("value"))) > 0).select(
        F.lit(None).cast("binary").alias("key"), F.col("value")
    )


def run_ingest(
    session: SparkSession,
    source: KafkaSource | JsonlSource,
    checkpoint: str,
    output: str,
    stream: TextIO = sys.stderr,
) -> IngestCounts:
    """Append every message not yet ingested to ``output``; returns the counts of this run."""
    messages = spread_messages(session, source)
    classified = classify_messages(messages, check_key=isinstance(source, KafkaSource))
    observed = classified.observe(MESSAGE_METRICS, *rejection_metrics())
    return append_dated_rows(session, volume_rows(observed), checkpoint, output, stream)


def spread_messages(session: SparkSession, source: KafkaSource | JsonlSource) -> DataFrame:
    """The source's raw messages (key, value, ...) spread over every core: a topic often has
    one partition and a JSONL file is read as one split, and the parse that follows is the
    expensive part."""
    if isinstance(source, KafkaSource):
        messages = kafka_messages(session, source)
    else:
        messages = jsonl_messages(session, source)
    return messages.repartition(max(2, session.sparkContext.defaultParallelism))


def append_dated_rows(
    session: SparkSession, rows: DataFrame, checkpoint: str, output: str, stream: TextIO
) -> IngestCounts:
    """Write ``rows`` (partitioned by ``date``; observed under ``MESSAGE_METRICS`` upstream)
    to ``output`` exactly once, through the checkpoint; the counts of this run."""
    rows = rows.observe(ROW_METRICS, F.count(F.lit(1)).alias("rows"))
    # Small files: without this every task writes a file into every date it saw, so an hourly
    # run on a cluster adds (tasks x dates) files. Shuffled by date, a run adds one file per
    # date partition it touches: 24 hourly runs leave 24 files in a day's partition.
    rows = rows.repartition(F.col("date"))
    # Counts are read back from the query's progress history, which must cover every batch.
    session.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(_MAX_BATCHES))
    query = (
        rows.writeStream.format("parquet")
        .option("checkpointLocation", checkpoint)
        .option("path", output)
        .partitionBy("date")
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    shown = -1
    while not query.awaitTermination(PROGRESS_POLL_SECONDS):
        shown = _show_progress(query.lastProgress, shown, stream)
    _show_progress(query.lastProgress, shown, stream)
    counts = IngestCounts()
    for progress in query.recentProgress:
        _add_progress(counts, progress.observedMetrics)
    return counts


_MAX_BATCHES = 1_000_000
PROGRESS_POLL_SECONDS = 2
"""How often the driver looks at the query's progress while it runs."""


def _add_progress(counts: IngestCounts, metrics: Mapping[str, object]) -> None:
    messages = metrics.get(MESSAGE_METRICS)
    rows = metrics.get(ROW_METRICS)
    if messages is None and rows is None:
        return
    counts.batches += 1
    if messages is not None:
        values = dict(messages.asDict())  # type: ignore[attr-defined]
        counts.messages += int(values.pop("messages") or 0)
        counts.valid += int(values.pop("valid") or 0)
        counts.skipped.update({name: int(count or 0) for name, count in values.items()})
    if rows is not None:
        counts.rows += int(rows["rows"] or 0)  # type: ignore[index]


def _show_progress(progress: StreamingQueryProgress | None, shown: int, stream: TextIO) -> int:
    """Prints the newest finished micro-batch if it was not shown yet; returns the newest
    batch id shown. At most one line per poll: batches faster than the poll are summed up in
    the run's total, not listed."""
    if progress is None or progress.batchId <= shown:
        return shown
    print(
        f"[history] ingest batch {progress.batchId}: {progress.numInputRows} messages"
        f" in {progress.batchDuration / 1000:.1f} s",
        file=stream,
        flush=True,
    )
    return progress.batchId
