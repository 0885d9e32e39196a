"""The Parquet file sink's ``_spark_metadata`` log, as text: which files a Spark reader reads.

The format is Spark's ``FileStreamSinkLog`` (version 1): one file per micro-batch, named by
its batch id, and every ``compactInterval``-th one (10 by default) a ``<id>.compact`` file that
lists every file committed up to it. Each log file is the line ``v1`` followed by one JSON
object per data file (``path``, ``size``, ``isDir``, ``modificationTime``,
``blockReplication``, ``blockSize``, ``action``). A reader of the dataset reads the newest
compact file and the batch files after it (Spark's ``CompactibleFileStreamLog.allFiles``), and
reads only the data files listed there.

Pure functions on names and text: the compaction (``compaction.py``) does the I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

LOG_DIR = "_spark_metadata"
VERSION_LINE = "v1"
COMPACT_SUFFIX = ".compact"
ADD_ACTION = "add"

Entry = dict[str, object]


def batch_id(name: str) -> int | None:
    """The batch id a log file name stands for (``12``, ``19.compact``), else None."""
    stem = name.removesuffix(COMPACT_SUFFIX)
    return int(stem) if stem.isdigit() else None


def live_logs(names: Iterable[str]) -> list[str]:
    """The log files a reader reads, oldest first: the newest compact file (if any) and every
    batch file after it. Older batch files Spark keeps around are not read."""
    batches: list[tuple[int, str]] = []
    for name in names:
        number = batch_id(name)
        if number is not None:
            batches.append((number, name))
    batches.sort()
    compacts = [number for number, name in batches if name.endswith(COMPACT_SUFFIX)]
    start = compacts[-1] if compacts else -1
    return [name for number, name in batches if number >= start]


def parse_log(text: str) -> list[Entry]:
    """The entries of one log file; a version other than ``v1`` is refused."""
    lines = text.split("\n")
    if lines[0].strip() != VERSION_LINE:
        raise ValueError(f"unsupported file sink log version {lines[0][:20]!r}")
    return [json.loads(line) for line in lines[1:] if line.strip()]


def render_log(entries: Sequence[Entry]) -> str:
    """One log file's text, as Spark writes it (no newline after the last entry)."""
    return "\n".join(
        [VERSION_LINE, *(json.dumps(entry, separators=(",", ":")) for entry in entries)]
    )


def file_entry(
    uri: str, size: int, modification_time: int, replication: int, block_size: int
) -> Entry:
    """The entry Spark writes for a data file it added."""
    return {
        "path": uri,
        "size": size,
        "isDir": False,
        "modificationTime": modification_time,
        "blockReplication": replication,
        "blockSize": block_size,
        "action": ADD_ACTION,
    }


def partition_of(path: str) -> str | None:
    """The partition directory (``date=2026-11-22``) a listed file is in, else None."""
    parent = path.rstrip("/").rsplit("/", 2)
    return parent[-2] if len(parent) == 3 and "=" in parent[-2] else None


def _normal(uri: str) -> str:
    """``file:///x`` and ``file:/x`` are the same file (Spark writes the first, Hadoop's
    ``makeQualified`` gives the second)."""
    scheme, separator, rest = uri.partition(":///")
    return f"{scheme}:/{rest}" if separator and "/" not in scheme else uri


def crowded_partitions(entries: Iterable[Entry], root: str, min_files: int) -> dict[str, list[str]]:
    """Partitions of the dataset at ``root`` with at least ``min_files`` listed data files,
    and those files' paths. Files the log lists outside ``root`` (a dataset copied elsewhere
    still lists the original's files) are left alone."""
    prefix = _normal(root).rstrip("/") + "/"
    files: dict[str, list[str]] = {}
    for entry in entries:
        path = str(entry["path"])
        partition = partition_of(path)
        inside = _normal(path).startswith(prefix)
        if inside and partition is not None and entry.get("action", ADD_ACTION) == ADD_ACTION:
            files.setdefault(partition, []).append(path)
    return {name: paths for name, paths in sorted(files.items()) if len(paths) >= min_files}


def swap(
    logs: Mapping[str, Sequence[Entry]], removed: set[str], added: Sequence[Entry]
) -> list[tuple[str, list[Entry]]]:
    """The log files to rewrite so that readers see ``added`` instead of ``removed``.

    ``logs``: the live log files (:func:`live_logs`) in order, with their entries. The added
    entries go into the newest file, which comes first in the result: written first, readers
    never miss a row (they may see the old and the new files together until the rest is
    written). Idempotent: applied again, it changes nothing.
    """
    if not logs:
        raise ValueError("the file sink log is empty")
    names = list(logs)
    present = {str(entry["path"]) for entries in logs.values() for entry in entries}
    missing = [entry for entry in added if str(entry["path"]) not in present]
    changed = []
    for name in reversed(names):
        entries = [entry for entry in logs[name] if str(entry["path"]) not in removed]
        if name == names[-1]:
            entries += missing
        if len(entries) != len(logs[name]) or (name == names[-1] and missing):
            changed.append((name, entries))
    return changed
