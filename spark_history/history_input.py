"""Loading the history for the analyses: the Parquet dataset, or JSONL snapshot files.

``--input`` accepts either, so the analyses work on an ingested dataset and on a file an
operator just exported; which one is decided from what is there (a Spark streaming sink's
``_spark_metadata`` log, ``*.parquet`` files or ``date=`` partitions mean Parquet), looked at
through Hadoop's FileSystem: the input is a URI (``hdfs://``, ``s3a://``, ``file://``) or a
path, passed to Spark untouched.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention
from pyspark.sql import types as T  # noqa: N812 - Spark's convention

from spark_history import storage
from spark_history.broker_samples import window_rows
from spark_history.clock_skew import RECEIVED_AT
from spark_history.errors import HistoryUsageError
from spark_history.snapshot_rows import (
    VOLUME_ROW_COLUMNS,
    classify_messages,
    only_volumes,
    tombstone_rows,
    volume_rows,
)


def is_parquet_dataset(session: SparkSession, uri: str) -> bool:
    if storage.is_file(session, uri):
        return uri.endswith(".parquet")
    names = storage.child_names(session, uri)
    if "_spark_metadata" in names or any(name.startswith("date=") for name in names):
        return True
    return storage.any_file(session, uri, ".parquet")


def load_history(session: SparkSession, path: str) -> DataFrame:
    """Volume rows (the dataset's columns) from ``path``, without tombstone rows."""
    return only_volumes(_load_rows(session, path))


class RawWindow(NamedTuple):
    """The rows of a run's window, read from the files once and kept for every analysis of
    the run (``unpersist`` when done)."""

    rows: DataFrame
    """The volume rows: the dataset's columns plus ``receivedAt`` (null where the record's
    Kafka timestamp was not kept), so the replay refuses what the consumer refused."""
    tombstones: DataFrame
    """(``brokerId``, ``snapshotAt``, ``date``) of the tombstones the ingest recorded in the
    window (none in JSONL)."""
    receipts: DataFrame | None
    """(``brokerId``, ``snapshotAt``, ``receivedAt``, ``date``) of the volume rows; None for
    JSONL input (its values carry no Kafka timestamp)."""
    kept: DataFrame

    def unpersist(self) -> None:
        self.kept.unpersist()


WINDOW_COLUMNS: tuple[str, ...] = (*VOLUME_ROW_COLUMNS, RECEIVED_AT)
"""What a window keeps for analyses that read the raw rows."""
RECEIPT_COLUMNS: tuple[str, ...] = ("brokerId", "volumeName", "snapshotAt", RECEIVED_AT, "date")
"""What a window keeps when the hourly rollup serves every analysis of the run: the tombstones
and each message's record timestamp, which the rollup does not hold."""


def load_window(
    session: SparkSession,
    path: str,
    at: datetime,
    lookback_hours: float | None,
    *,
    columns: tuple[str, ...] = WINDOW_COLUMNS,
) -> RawWindow:
    """The rows of ``(at - lookback_hours, at]`` (date partitions pruned), persisted: once it
    is filled, the analyses of a report read Spark's cache instead of the files. ``columns``:
    those kept (:data:`RECEIPT_COLUMNS` when the analyses read the rest from the rollup)."""
    parquet = is_parquet_dataset(session, path)
    kept = window_rows(_with_receipts(session, path, parquet).select(*columns), at, lookback_hours)
    kept = kept.persist()
    rows = only_volumes(kept)
    receipts = rows.select("brokerId", "snapshotAt", RECEIVED_AT, "date") if parquet else None
    return RawWindow(rows, tombstone_rows(kept), receipts, kept)


def rows_with_receipts(session: SparkSession, path: str) -> DataFrame:
    """The volume rows of every date, with ``receivedAt``, not kept: what a stored rollup's
    stale dates are computed from (``rollup_store.load_rollup`` reads only those dates)."""
    parquet = is_parquet_dataset(session, path)
    every = _with_receipts(session, path, parquet)
    return only_volumes(every.select(*VOLUME_ROW_COLUMNS, RECEIVED_AT))


def _with_receipts(session: SparkSession, path: str, parquet: bool) -> DataFrame:
    if parquet:
        return _read_with_receipts(session, path)
    return _load_rows(session, path).withColumn(RECEIVED_AT, F.lit(None).cast("timestamp"))


def _read_with_receipts(session: SparkSession, path: str) -> DataFrame:
    """The Parquet dataset with ``receivedAt`` whichever file Spark infers the schema from
    (files written before the column existed read it as null)."""
    schema = session.read.parquet(path).schema
    if RECEIVED_AT not in schema.fieldNames():
        schema = schema.add(RECEIVED_AT, T.TimestampType())
    return session.read.schema(schema).parquet(path)


def _load_rows(session: SparkSession, path: str) -> DataFrame:
    if not storage.exists(session, path):
        raise HistoryUsageError(f"input {path} does not exist")
    if is_parquet_dataset(session, path):
        return session.read.parquet(path).select(*VOLUME_ROW_COLUMNS)
    if not storage.is_file(session, path) and not storage.any_file(session, path):
        raise HistoryUsageError(f"input {path} holds no files")
    lines = session.read.option("recursiveFileLookup", "true").text(path)
    messages = lines.where(F.length(F.trim(F.col("value"))) > 0).select(
        F.lit(None).cast("binary").alias("key"), F.col("value")
    )
    return volume_rows(classify_messages(messages, check_key=False))
