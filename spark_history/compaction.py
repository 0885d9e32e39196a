"""Small-file compaction of the history dataset: rewrite crowded date partitions into few files.

Each ingest run adds one file per date partition it touches, so an hourly schedule leaves 24
files a day. The dataset is read through the file sink's ``_spark_metadata`` log
(``sink_log``), which lists the files readers see: merging files means rewriting that log too,
and doing it so that neither an interruption nor a reader ever loses a row.

Steps, for every date partition with at least ``min_files`` listed files:

1. Spark reads the listed files of those partitions and writes them, sorted by broker, volume
   and time, into a staging directory ``_compaction/<id>/`` inside the dataset (ignored by
   readers: Spark reads only files the log lists). The row counts of both sides must agree.
2. A journal ``_compaction/<id>.json`` records the files replaced and the moves to make. From
   here on the compaction is rolled forward, never back.
3. The new files move into their partitions (still unlisted, so still invisible).
4. The log files that list the old files are rewritten (each written beside and renamed over,
   atomically on HDFS and local disks): the newest first, with the new files added, so a
   reader in between sees old and new files together (a duplicate the analyses ignore) but
   never neither.
   The hourly rollup's manifest of each compacted date then names the new files, where it
   named exactly the old ones (``rollup_store.restamp``: the rows are the same).
5. The old files are deleted, then the journal and the staging directory.

Every compaction first finishes any journal left by an interrupted one (each step checks what
is done), and removes staging directories that never got a journal.

The compaction must not run while an ingest writes to the same dataset (both rewrite the log).
``history ingest --compact-min-files`` runs it after the ingest's own query, in the same
process; ``history compact`` is for an existing dataset, outside the ingest schedule.
"""

from __future__ import annotations

import json
import sys
import uuid
from dataclasses import dataclass
from typing import TextIO
from urllib.parse import unquote

from pyspark.sql import SparkSession

from spark_history import rollup_store, sink_log, storage
from spark_history.errors import HistoryUsageError

COMPACTION_DIR = "_compaction"
PARTITION_COLUMN = "date"
DEFAULT_MIN_FILES = 2
DEFAULT_MAX_ROWS_PER_FILE = 5_000_000
_LOG_STAGING = ".compaction-"
"""Marks the log files a compaction writes beside the one it replaces."""


@dataclass(frozen=True, slots=True)
class Journal:
    """What one compaction replaces: written before anything visible changes."""

    stage: str
    removed: tuple[str, ...]
    """The replaced files, as the log lists them."""
    moves: tuple[tuple[str, str], ...]
    """(staged file, its place in the dataset) for every new file."""

    def to_json(self) -> str:
        return json.dumps(
            {"stage": self.stage, "removed": self.removed, "moves": self.moves}, indent=1
        )

    @staticmethod
    def from_json(text: str) -> Journal:
        data = json.loads(text)
        return Journal(
            stage=str(data["stage"]),
            removed=tuple(str(path) for path in data["removed"]),
            moves=tuple((str(source), str(target)) for source, target in data["moves"]),
        )


@dataclass(frozen=True, slots=True)
class CompactionResult:
    partitions: int
    files_before: int
    files_after: int
    rows: int
    resumed: int
    """Interrupted compactions finished first."""

    def describe(self) -> str:
        text = (
            f"{self.partitions} partitions: {self.files_before} files rewritten into "
            f"{self.files_after} ({self.rows} rows)"
        )
        return text + (
            f"; {self.resumed} interrupted compaction(s) finished" if self.resumed else ""
        )


def compact_dataset(
    session: SparkSession,
    dataset: str,
    min_files: int = DEFAULT_MIN_FILES,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    stream: TextIO = sys.stderr,
) -> CompactionResult:
    """Rewrite every date partition of ``dataset`` that holds at least ``min_files`` listed
    files into ``ceil(rows / max_rows_per_file)`` files."""
    root = storage.qualified(session, dataset)
    if not storage.exists(session, storage.join(root, sink_log.LOG_DIR)):
        raise HistoryUsageError(
            f"{dataset} is not a dataset written by 'history ingest' (no {sink_log.LOG_DIR} log)"
        )
    resumed = resume(session, root)
    entries = [entry for _, found in _live_logs(session, root).items() for entry in found]
    crowded = sink_log.crowded_partitions(entries, root, min_files)
    if not crowded:
        return CompactionResult(0, 0, 0, 0, resumed)
    stage = uuid.uuid4().hex
    staging = storage.join(root, f"{COMPACTION_DIR}/{stage}")
    old = [path for paths in crowded.values() for path in paths]
    print(f"[history] compacting {len(old)} files of {len(crowded)} partitions", file=stream)
    rows = _rewrite(session, root, old, staging, max_rows_per_file)
    moves = [
        (temporary, storage.join(root, "/".join(temporary.rsplit("/", 2)[-2:])))
        for temporary in storage.list_files(session, staging)
        if temporary.endswith(".parquet")
    ]
    journal = Journal(stage, tuple(old), tuple(moves))
    storage.replace_text(session, _journal_uri(root, stage), journal.to_json())
    _finish(session, root, journal)
    return CompactionResult(len(crowded), len(old), len(moves), rows, resumed)


def _rewrite(
    session: SparkSession, root: str, files: list[str], staging: str, max_rows_per_file: int
) -> int:
    """Write the rows of ``files`` into ``staging``, partitioned as the dataset; their count."""
    # The log holds URIs (percent-encoded); Spark reads paths as Hadoop globs.
    paths = [storage.glob_escape(unquote(uri)) for uri in files]
    # mergeSchema: files written before a column was added (receivedAt) lack it.
    frame = session.read.option("basePath", root).option("mergeSchema", "true").parquet(*paths)
    before = frame.count()
    order = [PARTITION_COLUMN, "brokerId", "volumeName", "snapshotAt"]
    (
        frame.repartition(PARTITION_COLUMN)
        .sortWithinPartitions(*[column for column in order if column in frame.columns])
        .write.option("maxRecordsPerFile", max_rows_per_file)
        .partitionBy(PARTITION_COLUMN)
        .parquet(staging)
    )
    after = session.read.parquet(staging).count()
    if after != before:
        storage.delete(session, staging, recursive=True)
        raise RuntimeError(f"compaction wrote {after} rows for {before}; nothing was replaced")
    return int(before)


def resume(session: SparkSession, root: str) -> int:
    """Finish every compaction a journal records, then clear the staging area; how many."""
    directory = storage.join(root, COMPACTION_DIR)
    journals = sorted(n for n in storage.child_names(session, directory) if n.endswith(".json"))
    for name in journals:
        text = storage.read_text(session, storage.join(directory, name))
        _finish(session, root, Journal.from_json(text))
    # Staging directories without a journal: interrupted before step 2, nothing replaced.
    storage.delete(session, directory, recursive=True)
    log_dir = storage.join(root, sink_log.LOG_DIR)
    for name in storage.child_names(session, log_dir):
        if name.startswith(".") and _LOG_STAGING in name:
            storage.delete(session, storage.join(log_dir, name))
    return len(journals)


def _finish(session: SparkSession, root: str, journal: Journal) -> None:
    """Steps 3 to 5 for one journal; each one skips what an earlier attempt did."""
    stage = journal.stage
    for source, target in journal.moves:
        if storage.exists(session, source):
            storage.rename(session, source, target)
        elif not storage.exists(session, target):
            raise HistoryUsageError(
                f"compaction {stage}: {target} is missing; the journal "
                f"{_journal_uri(root, stage)} cannot be completed"
            )
    added = [_entry(session, target) for _, target in journal.moves]
    log_dir = storage.join(root, sink_log.LOG_DIR)
    removed = set(journal.removed)
    for name, entries in sink_log.swap(_live_logs(session, root), removed, added):
        storage.replace_atomically(
            session,
            storage.join(log_dir, name),
            sink_log.render_log(entries),
            staging=storage.join(log_dir, f".{name}{_LOG_STAGING}{stage}.tmp"),
        )
    # The rows are the same: a rollup computed from the old files holds for the new ones.
    rollup_store.restamp(session, root, journal.removed, [str(entry["path"]) for entry in added])
    for path in journal.removed:
        storage.delete(session, unquote(path))
    directory = storage.join(root, COMPACTION_DIR)
    storage.delete(session, storage.join(directory, stage), recursive=True)
    storage.delete(session, _journal_uri(root, stage))
    if not storage.child_names(session, directory):
        storage.delete(session, directory, recursive=True)


def _entry(session: SparkSession, uri: str) -> sink_log.Entry:
    info = storage.file_info(session, uri)
    return sink_log.file_entry(
        info.uri, info.size, info.modification_time, info.replication, info.block_size
    )


def _live_logs(session: SparkSession, root: str) -> dict[str, list[sink_log.Entry]]:
    log_dir = storage.join(root, sink_log.LOG_DIR)
    names = sink_log.live_logs(storage.child_names(session, log_dir))
    return {
        name: sink_log.parse_log(storage.read_text(session, storage.join(log_dir, name)))
        for name in names
    }


def _journal_uri(root: str, stage: str) -> str:
    return storage.join(root, f"{COMPACTION_DIR}/{stage}.json")
