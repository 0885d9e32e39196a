"""Inputs and outputs as Hadoop URIs: ``file:///``, ``hdfs://``, ``s3a://``, or a plain path.

Every path the user gives is passed to Spark and Hadoop as the string it is: never through
``pathlib.Path``, which turns ``hdfs:///history`` into ``hdfs:/history`` and breaks
``s3a://bucket/x``. The small files the driver writes itself (forecast.csv, report.html,
summary.json, ...) go through Hadoop's ``FileSystem`` too, so they land where the user says:
on HDFS or S3 as well as on a local disk, and in cluster deploy mode (where the driver runs
on some worker) at the URI given, not on that worker's disk.

A path without a scheme is resolved by Hadoop against the driver's working directory on the
default filesystem (``fs.defaultFS``: the local disk unless the cluster says otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession


def _filesystem(session: SparkSession, uri: str) -> tuple[Any, Any]:
    context = session.sparkContext
    jvm: Any = context._jvm  # Hadoop's FileSystem is only reachable through py4j
    path = jvm.org.apache.hadoop.fs.Path(uri)
    filesystem = path.getFileSystem(context._jsc.hadoopConfiguration())
    # The local filesystem would add a hidden .crc file beside every file written.
    filesystem.setWriteChecksum(False)
    return filesystem, path


def local_path(uri: str) -> Path | None:
    """The local file ``uri`` names (a plain path or ``file:``), else None."""
    parsed = urlparse(uri)
    if parsed.scheme == "":
        return Path(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    return None


def join(uri: str, name: str) -> str:
    """``uri``/``name`` without touching the scheme or authority."""
    return f"{uri.rstrip('/')}/{name}"


def exists(session: SparkSession, uri: str) -> bool:
    filesystem, path = _filesystem(session, uri)
    return bool(filesystem.exists(path))


def is_file(session: SparkSession, uri: str) -> bool:
    filesystem, path = _filesystem(session, uri)
    return bool(filesystem.exists(path) and filesystem.getFileStatus(path).isFile())


def child_names(session: SparkSession, uri: str) -> list[str]:
    """Names directly under the directory ``uri`` (empty for a file or nothing)."""
    filesystem, path = _filesystem(session, uri)
    if not filesystem.exists(path) or filesystem.getFileStatus(path).isFile():
        return []
    return [str(status.getPath().getName()) for status in filesystem.listStatus(path)]


def any_file(session: SparkSession, uri: str, suffix: str = "") -> bool:
    """True when some file under ``uri`` (recursively) ends with ``suffix``."""
    filesystem, path = _filesystem(session, uri)
    if not filesystem.exists(path):
        return False
    files = filesystem.listFiles(path, True)
    while files.hasNext():
        if str(files.next().getPath().getName()).endswith(suffix):
            return True
    return False


def write_bytes(session: SparkSession, uri: str, data: bytes) -> None:
    """Create (or replace) the file ``uri`` with ``data``; parent directories are made."""
    filesystem, path = _filesystem(session, uri)
    stream = filesystem.create(path, True)
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


def write_text(session: SparkSession, uri: str, text: str) -> None:
    write_bytes(session, uri, text.encode("utf-8"))


def replace_text(session: SparkSession, uri: str, text: str) -> None:
    """Write ``uri`` so that a reader sees the old file or the new one, never half of one:
    a temporary file beside it, then a rename."""
    temporary = f"{uri}.tmp"
    write_text(session, temporary, text)
    filesystem, path = _filesystem(session, uri)
    _, staged = _filesystem(session, temporary)
    if filesystem.exists(path):
        filesystem.delete(path, False)
    if not filesystem.rename(staged, path):
        raise OSError(f"cannot rename {temporary} to {uri}")


def qualified(session: SparkSession, uri: str) -> str:
    """The fully qualified URI Hadoop resolves ``uri`` to (for messages)."""
    filesystem, path = _filesystem(session, uri)
    return str(filesystem.makeQualified(path).toString())
