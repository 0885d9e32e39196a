"""Loading the history for the analyses: the Parquet dataset, or JSONL snapshot files.

``--input`` accepts either, so the analyses work on an ingested dataset and on a file an
operator just exported; which one is decided from what is on disk (a Spark streaming sink's
``_spark_metadata`` log, ``*.parquet`` files or ``date=`` partitions mean Parquet).
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.errors import HistoryUsageError
from spark_history.snapshot_rows import (
    VOLUME_ROW_COLUMNS,
    classify_messages,
    only_volumes,
    tombstone_rows,
    volume_rows,
)


def is_parquet_dataset(path: Path) -> bool:
    if path.is_file():
        return path.suffix == ".parquet"
    if (path / "_spark_metadata").is_dir():
        return True
    return any(path.glob("date=*")) or any(path.rglob("*.parquet"))


def load_history(session: SparkSession, path: Path) -> DataFrame:
    """Volume rows (the dataset's columns) from ``path``, without tombstone rows."""
    return only_volumes(_load_rows(session, path))


def load_tombstones(session: SparkSession, path: Path) -> DataFrame:
    """(``brokerId``, ``snapshotAt``) of the tombstones the ingest recorded (none in JSONL)."""
    return tombstone_rows(_load_rows(session, path))


def _load_rows(session: SparkSession, path: Path) -> DataFrame:
    if not path.exists():
        raise HistoryUsageError(f"input {path} does not exist")
    if is_parquet_dataset(path):
        return session.read.parquet(str(path)).select(*VOLUME_ROW_COLUMNS)
    if path.is_dir() and not any(child.is_file() for child in path.rglob("*")):
        raise HistoryUsageError(f"input {path} holds no files")
    lines = session.read.option("recursiveFileLookup", "true").text(str(path))
    messages = lines.where(F.length(F.trim(F.col("value"))) > 0).select(
        F.lit(None).cast("binary").alias("key"), F.col("value")
    )
    return volume_rows(classify_messages(messages, check_key=False))
