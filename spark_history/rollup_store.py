"""Where the hourly rollup of a history dataset lives, and how it is kept: the snapshot
history's (``hourly_rollup``, :data:`SNAPSHOTS`) and the usage history's (``usage_rollup``,
:data:`USAGE`), the same way.

Layout, inside the dataset (Spark's reader of the dataset reads only the files its
``_spark_metadata`` log lists, and a plain Parquet reader skips ``_`` directories, so neither
sees it)::

    <dataset>/_rollup/hourly/date=2026-11-22/part-....parquet   the rollup rows of that date
    <dataset>/_rollup/hourly/_manifests/date=2026-11-22.json    what they were computed from

A date's manifest lists the raw files (as the dataset's log lists them) its rollup was computed
from and the rollup files that hold it, and is written last, each time by a rename over the old
one. Readers read only the rollup files of manifests whose raw file list is the one the log
lists now: a date whose raw partition changed since (an ingest appended a file) is **stale**,
and so is a date without a manifest (never computed, or a refresh that crashed before its
manifest). A stale date is never read from the rollup: the analyses compute its hours from the
raw rows in the run (:func:`load_rollup`), and the next :func:`refresh_rollup` brings it up to
date. When the date only gained raw files (an ingest appends; ``rollup_manifests.compare``),
the refresh reads the date's stored rollup and the new files only, and extends the rollup
with them (``RollupKind.extend``: every rollup column is an aggregate that the rollup of the
old rows and the new rows determines); otherwise it recomputes the date from all its raw
rows. An hourly ingest therefore costs the new hour's rows and a read of the day's rollup,
not a read of the whole day. The new rollup files replace the old ones only when the new
manifest is written. Files a crashed refresh left in a date directory are unlisted, so unread,
and deleted by the next refresh.

``history ingest`` refreshes after its run (and after ``--compact-min-files``); the compaction
rewrites a date's files without changing its rows, so it moves a valid manifest to the new
files (:func:`restamp`) instead of recomputing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import sys
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TextIO
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import sink_log, storage
from spark_history.clock_skew import RECEIVED_AT
from spark_history.hourly_rollup import ROLLUP_COLUMNS, extend_rollup, hourly_rollup
from spark_history.rollup_manifests import Manifest, RollupState, compare
from spark_history.snapshot_rows import VOLUME_ROW_COLUMNS
from spark_history.usage_documents import USAGE_ROW_COLUMNS
from spark_history.usage_rollup import extend_usage_rollup, usage_rollup

ROLLUP_DIR = "_rollup/hourly"
MANIFEST_DIR = "_manifests"
STAGING_DIR = "_staging"
DATE_PREFIX = "date="


@dataclass(frozen=True, slots=True)
class RollupKind:
    """What a dataset's rollup is: its name in messages, the raw columns it is computed from,
    how, its columns, and how a stored rollup takes in raw rows appended since (``extend``:
    the stored rows and the new raw rows to the rollup of all)."""

    name: str
    raw_columns: tuple[str, ...]
    compute: Callable[[DataFrame], DataFrame]
    columns: tuple[str, ...]
    extend: Callable[[DataFrame, DataFrame], DataFrame]


SNAPSHOTS = RollupKind(
    "hourly rollup",
    (*VOLUME_ROW_COLUMNS, RECEIVED_AT),
    hourly_rollup,
    ROLLUP_COLUMNS,
    extend_rollup,
)
"""The snapshot history's: a row per volume and hour (``hourly_rollup``)."""
USAGE = RollupKind(
    "hourly usage rollup", USAGE_ROW_COLUMNS, usage_rollup, USAGE_ROW_COLUMNS, extend_usage_rollup
)
"""The usage history's: its rows an hourly analysis reads (``usage_rollup``)."""


@dataclass(frozen=True, slots=True)
class RefreshResult:
    dates: tuple[str, ...]
    rows: int
    name: str = SNAPSHOTS.name
    extended: tuple[str, ...] = ()
    """Of ``dates``, those extended with their new raw files only."""

    def describe(self) -> str:
        if not self.dates:
            return f"{self.name} up to date"
        recomputed = len(self.dates) - len(self.extended)
        parts = [f"{recomputed} date(s) recomputed"] if recomputed else []
        parts += [f"{len(self.extended)} extended with new files"] if self.extended else []
        return f"{self.name}: {', '.join(parts)} ({self.rows} rows)"


def rollup_root(dataset_root: str) -> str:
    return storage.join(dataset_root, ROLLUP_DIR)


def has_sink_log(session: SparkSession, dataset: str) -> bool:
    return storage.exists(session, storage.join(dataset, sink_log.LOG_DIR))


def listed_by_date(session: SparkSession, root: str) -> dict[str, tuple[str, ...]]:
    """The files the dataset's log lists now, per date (``2026-11-22``), sorted."""
    log_dir = storage.join(root, sink_log.LOG_DIR)
    files: dict[str, list[str]] = {}
    for name in sink_log.live_logs(storage.child_names(session, log_dir)):
        for entry in sink_log.parse_log(storage.read_text(session, storage.join(log_dir, name))):
            if entry.get("action", sink_log.ADD_ACTION) != sink_log.ADD_ACTION:
                continue
            path = str(entry["path"])
            partition = sink_log.partition_of(path)
            if partition is not None and partition.startswith(DATE_PREFIX):
                files.setdefault(partition.removeprefix(DATE_PREFIX), []).append(path)
    return {date: tuple(sorted(set(paths))) for date, paths in sorted(files.items())}


def read_manifests(session: SparkSession, root: str) -> list[Manifest]:
    directory = storage.join(rollup_root(root), MANIFEST_DIR)
    return [
        Manifest.from_json(storage.read_text(session, storage.join(directory, name)))
        for name in sorted(storage.child_names(session, directory))
        if name.startswith(DATE_PREFIX) and name.endswith(".json")
    ]


def rollup_state(session: SparkSession, dataset: str, kind: RollupKind) -> RollupState:
    """The state of ``dataset``'s rollup (a dataset written by ``history ingest``)."""
    root = storage.qualified(session, dataset)
    return compare(listed_by_date(session, root), read_manifests(session, root), kind.columns)


def refresh_rollup(
    session: SparkSession,
    dataset: str,
    stream: TextIO = sys.stderr,
    *,
    kind: RollupKind,
) -> RefreshResult:
    """Bring the rollup (of ``kind``) of every stale date of ``dataset`` up to date: a date
    whose raw files were only added to since its rollup (an ingest appended) is extended with
    the new files' rows, read with its stored rollup and nothing else; any other stale date is
    recomputed from all its raw rows. Drop the rollup of dates no longer in the dataset, and
    delete what a crashed refresh left."""
    root = storage.qualified(session, dataset)
    listed = listed_by_date(session, root)
    state = compare(listed, read_manifests(session, root), kind.columns)
    hourly = rollup_root(root)
    _drop_unlisted(session, hourly, {**state.valid, **state.appended})
    for date in state.gone:
        _remove_date(session, hourly, date)
    if not state.stale:
        return RefreshResult((), 0, kind.name)
    print(
        f"[history] {kind.name}: {len(state.stale)} date(s) to refresh, "
        f"{len(state.appended)} of them by extension",
        file=stream,
    )
    raw = {date: listed[date] for date in state.stale}
    staging = storage.join(hourly, f"{STAGING_DIR}/{uuid.uuid4().hex}")
    rollup = _refreshed(session, root, kind, state, raw)
    rollup.repartition("date").write.partitionBy("date").parquet(staging)
    counts = {}
    if storage.any_file(session, staging, ".parquet"):  # none when the dates hold tombstones only
        counted = session.read.parquet(staging).groupBy("date").count().collect()
        counts = {str(row["date"]): int(row["count"]) for row in counted}
    for date, files in raw.items():
        _install(
            session, hourly, staging, Manifest(date, files, (), counts.get(date, 0), kind.columns)
        )
    storage.delete(session, storage.join(hourly, STAGING_DIR), recursive=True)
    return RefreshResult(state.stale, sum(counts.values()), kind.name, tuple(state.appended))


def _refreshed(
    session: SparkSession,
    root: str,
    kind: RollupKind,
    state: RollupState,
    raw: dict[str, tuple[str, ...]],
) -> DataFrame:
    """The new rollup rows of the stale dates, whose raw files are ``raw``."""
    whole = [path for date, paths in raw.items() if date not in state.appended for path in paths]
    parts = [kind.compute(_raw_rows(session, root, whole, kind.raw_columns))] if whole else []
    if state.appended:
        added = [
            path
            for date, manifest in state.appended.items()
            for path in sorted(set(raw[date]) - set(manifest.raw_files))
        ]
        stored = [uri for manifest in state.appended.values() for uri in manifest.rollup_files]
        old = _stored_rows(session, rollup_root(root), stored, kind)
        parts.append(kind.extend(old, _raw_rows(session, root, added, kind.raw_columns)))
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.unionByName(part)
    return frame


def _stored_rows(
    session: SparkSession, hourly: str, files: Sequence[str], kind: RollupKind
) -> DataFrame:
    """The stored rollup rows of ``files`` (URIs a manifest lists), ``date`` included."""
    paths = [storage.glob_escape(unquote(uri)) for uri in files]
    return session.read.option("basePath", hourly).parquet(*paths).select(*kind.columns)


def _raw_rows(
    session: SparkSession, root: str, files: Sequence[str], columns: tuple[str, ...]
) -> DataFrame:
    """The ``columns`` of exactly ``files`` (as the log lists them), ``date`` included;
    ``receivedAt`` is null in files written without it."""
    paths = [storage.glob_escape(unquote(uri)) for uri in files]
    frame = session.read.option("basePath", root).option("mergeSchema", "true").parquet(*paths)
    if RECEIVED_AT in columns and RECEIVED_AT not in frame.columns:
        frame = frame.withColumn(RECEIVED_AT, F.lit(None).cast("timestamp"))
    return frame.select(*columns)


def _install(session: SparkSession, hourly: str, staging: str, manifest: Manifest) -> None:
    """Move the staged files of one date beside its current ones, write its manifest (the
    switch), then delete the files it no longer lists."""
    directory = storage.join(hourly, f"{DATE_PREFIX}{manifest.date}")
    staged = storage.join(staging, f"{DATE_PREFIX}{manifest.date}")
    moved = []
    for source in storage.list_files(session, staged):
        if source.endswith(".parquet"):
            target = storage.join(directory, source.rsplit("/", 1)[-1])
            storage.rename(session, source, target)
            moved.append(storage.file_info(session, target).uri)
    final = dataclasses.replace(manifest, rollup_files=tuple(sorted(moved)))
    _write_manifest(session, hourly, final)
    _drop_unlisted(session, hourly, {manifest.date: final}, only=[manifest.date])


def _manifest_uri(hourly: str, date: str) -> str:
    return storage.join(hourly, f"{MANIFEST_DIR}/{DATE_PREFIX}{date}.json")


def _write_manifest(session: SparkSession, hourly: str, manifest: Manifest) -> None:
    uri = _manifest_uri(hourly, manifest.date)
    staging = storage.join(hourly, f"{MANIFEST_DIR}/.{DATE_PREFIX}{manifest.date}.json.tmp")
    storage.replace_atomically(session, uri, manifest.to_json(), staging=staging)


def _drop_unlisted(
    session: SparkSession,
    hourly: str,
    manifests: dict[str, Manifest],
    only: Sequence[str] | None = None,
) -> None:
    """Delete the rollup files of date directories that no manifest in ``manifests`` lists
    (files of stale dates too: they are recomputed)."""
    names = [f"{DATE_PREFIX}{date}" for date in only] if only is not None else None
    for name in names or storage.child_names(session, hourly):
        if not name.startswith(DATE_PREFIX):
            continue
        manifest = manifests.get(name.removeprefix(DATE_PREFIX))
        keep = {_normal(uri) for uri in manifest.rollup_files} if manifest else set()
        for uri in storage.list_files(session, storage.join(hourly, name)):
            if _normal(_data_file(storage.file_info(session, uri).uri)) not in keep:
                storage.delete(session, uri)


def _data_file(uri: str) -> str:
    """The data file a local checksum file (``.name.crc``) belongs to; else ``uri``."""
    directory, _, name = uri.rpartition("/")
    if name.startswith(".") and name.endswith(".crc"):
        return f"{directory}/{name[1:].removesuffix('.crc')}"
    return uri


def _remove_date(session: SparkSession, hourly: str, date: str) -> None:
    storage.delete(session, _manifest_uri(hourly, date))
    storage.delete(session, storage.join(hourly, f"{DATE_PREFIX}{date}"), recursive=True)


def _normal(uri: str) -> str:
    scheme, separator, rest = uri.partition(":///")
    return f"{scheme}:/{rest}" if separator and "/" not in scheme else uri


def restamp(
    session: SparkSession, dataset: str, removed: Iterable[str], added: Iterable[str]
) -> list[str]:
    """After a compaction replaced the files ``removed`` of some dates by ``added`` (the same
    rows): every date whose manifest listed exactly its removed files now lists its added
    ones. A manifest that was already stale stays stale. Idempotent; the dates restamped."""
    root = storage.qualified(session, dataset)
    hourly = rollup_root(root)
    removed_by_date = _by_date(removed)
    added_by_date = _by_date(added)
    restamped = []
    for manifest in read_manifests(session, root):
        old = removed_by_date.get(manifest.date)
        if old is None or set(manifest.raw_files) != old:
            continue
        new_raw = tuple(sorted(added_by_date.get(manifest.date, set())))
        _write_manifest(
            session,
            hourly,
            dataclasses.replace(manifest, raw_files=new_raw),
        )
        restamped.append(manifest.date)
    return restamped


def _by_date(paths: Iterable[str]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in paths:
        partition = sink_log.partition_of(path)
        if partition is not None and partition.startswith(DATE_PREFIX):
            found.setdefault(partition.removeprefix(DATE_PREFIX), set()).add(path)
    return found


def load_rollup(
    session: SparkSession,
    path: str,
    rows: DataFrame,
    window: tuple[dt.datetime, float] | None = None,
    *,
    stream: TextIO = sys.stderr,
    kind: RollupKind,
) -> DataFrame:
    """The rollup (of ``kind``) of the history at ``path`` whose raw rows are ``rows``
    (``history_input.load_history``, ``spark_mechanism.load_usage``): the stored rollup of
    every valid date, and that of stale dates (or of all of them: a JSONL input, a dataset
    without the sink log) computed from ``rows`` once in this run (cached). Never a stale
    stored date. ``window``: (``at``, hours before it) that the readers need; only the dates
    it touches are read."""
    dates = None if window is None else _dates_of(*window)
    if dates is not None:
        rows = rows.where(F.col("date").between(F.lit(dates[0]), F.lit(dates[1])))
    if not has_sink_log(session, path):
        print(f"[history] no stored {kind.name}: computed from the raw rows", file=stream)
        return kind.compute(rows).cache()
    state = rollup_state(session, path, kind)
    stale = [date for date in state.stale if _inside(date, dates)]
    parts = []
    if stale:
        print(
            f"[history] {kind.name} stale or missing for {len(stale)} date(s): "
            "computed from the raw rows",
            file=stream,
        )
        wanted = [F.lit(date).cast("date") for date in stale]
        parts.append(kind.compute(rows.where(F.col("date").isin(*wanted))).cache())
    files = [
        uri
        for date, manifest in state.valid.items()
        if _inside(date, dates)
        for uri in manifest.rollup_files
    ]
    if files:
        hourly = rollup_root(storage.qualified(session, path))
        parts.append(_stored_rows(session, hourly, files, kind))
    if not parts:
        return kind.compute(rows.limit(0))
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.unionByName(part)
    return frame


def _dates_of(at: dt.datetime, lookback_hours: float) -> tuple[dt.date, dt.date]:
    start = at - dt.timedelta(hours=lookback_hours)
    return start.astimezone(dt.UTC).date(), at.astimezone(dt.UTC).date()


def _inside(day: str, dates: tuple[dt.date, dt.date] | None) -> bool:
    return dates is None or dates[0] <= dt.date.fromisoformat(day) <= dates[1]
