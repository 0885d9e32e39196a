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

from dataclasses import dataclass
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


def glob_escape(path: str) -> str:
    """Hadoop reads a path Spark is given as a glob: escape its special characters."""
    return "".join(f"\\{char}" if char in "*?[]{}\\" else char for char in path)


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


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What Hadoop's ``FileStatus`` says about one file (the file sink's log keeps the same)."""

    uri: str
    """The fully qualified path as a URI string (``Path.toUri().toString()``)."""
    size: int
    modification_time: int
    replication: int
    block_size: int


def file_info(session: SparkSession, uri: str) -> FileInfo:
    filesystem, path = _filesystem(session, uri)
    status = filesystem.getFileStatus(path)
    return FileInfo(
        uri=str(filesystem.makeQualified(status.getPath()).toUri().toString()),
        size=int(status.getLen()),
        modification_time=int(status.getModificationTime()),
        replication=int(status.getReplication()),
        block_size=int(status.getBlockSize()),
    )


def list_files(session: SparkSession, uri: str) -> list[str]:
    """URIs of every file under the directory ``uri``, recursively (empty when absent)."""
    filesystem, path = _filesystem(session, uri)
    if not filesystem.exists(path):
        return []
    found = []
    files = filesystem.listFiles(path, True)
    while files.hasNext():
        found.append(str(files.next().getPath().toString()))
    return sorted(found)


def read_text(session: SparkSession, uri: str) -> str:
    filesystem, path = _filesystem(session, uri)
    stream = filesystem.open(path)
    try:
        jvm: Any = session.sparkContext._jvm
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data).decode("utf-8")


def rename(session: SparkSession, source: str, target: str) -> None:
    """Move the file ``source`` to ``target`` (which must not exist); parents are made."""
    filesystem, path = _filesystem(session, source)
    _, destination = _filesystem(session, target)
    filesystem.mkdirs(destination.getParent())
    if not filesystem.rename(path, destination):
        raise OSError(f"cannot rename {source} to {target}")


def delete(session: SparkSession, uri: str, recursive: bool = False) -> None:
    """Delete ``uri`` if it exists."""
    filesystem, path = _filesystem(session, uri)
    if filesystem.exists(path):
        filesystem.delete(path, recursive)


def replace_atomically(session: SparkSession, uri: str, text: str, staging: str) -> None:
    """Write ``text`` to ``staging``, then rename it over ``uri`` in one step where the
    filesystem can (HDFS, local: Hadoop's ``FileContext`` rename with ``OVERWRITE``, as
    Spark's own metadata logs do), so a reader sees the old file or the new one."""
    write_text(session, staging, text)
    context = session.sparkContext
    jvm: Any = context._jvm
    filesystem, target = _filesystem(session, uri)
    _, source = _filesystem(session, staging)
    # A local disk keeps a checksum beside the file (.name.crc); the staged file has none, so
    # the old one would be left to fail the next read of the new file.
    checksum = jvm.org.apache.hadoop.fs.Path(target.getParent(), f".{target.getName()}.crc")
    if filesystem.exists(checksum):
        filesystem.delete(checksum, False)
    files = jvm.org.apache.hadoop.fs.FileContext.getFileContext(
        target.toUri(), context._jsc.hadoopConfiguration()
    )
    rename_options = getattr(jvm.org.apache.hadoop.fs, "Options$Rename")
    gateway: Any = context._gateway
    overwrite = gateway.new_array(rename_options, 1)
    overwrite[0] = rename_options.OVERWRITE
    files.rename(source, target, overwrite)
