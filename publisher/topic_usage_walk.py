"""Walking a volume's log dirs for the per-topic survey: the thin I/O shell.

One ``os.scandir`` per log dir and per partition dir, one ``lstat`` per entry (symlinks are not
followed: a log dir holds none, and a link would count another place's bytes). A file or dir that
vanishes during the walk (a segment deleted by retention, a partition being moved) is skipped:
the survey is a picture of a moving tree, good to the bytes that changed while it was taken.
Everything else (grouping, top N) is ``publisher.topic_usage``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence

from publisher.topic_usage import BLOCK_BYTES, SEGMENT_SUFFIX, DirEntry, FileEntry, VolumeWalk
from publisher.volumes import Volume


def walk_volume(volume: Volume) -> VolumeWalk:
    """Every partition dir and file under ``volume``'s log dirs (deeper levels summed into the
    dir they are in). Raises ``OSError`` when a log dir itself cannot be read."""
    dirs: list[DirEntry] = []
    other = 0
    for log_dir in volume.log_dirs:
        for entry, info in _stat_entries(log_dir, missing_ok=False):
            if stat.S_ISDIR(info.st_mode):
                dirs.append(_walk_dir(entry.path, entry.name, info.st_blocks * BLOCK_BYTES))
            else:
                other += info.st_blocks * BLOCK_BYTES
    return VolumeWalk(volume_name=volume.name, dirs=tuple(dirs), other_bytes=other)


def _stat_entries(
    path: str, *, missing_ok: bool = True
) -> Iterator[tuple[os.DirEntry[str], os.stat_result]]:
    """Each entry of ``path`` with its ``lstat``; an entry that vanished meanwhile is skipped,
    and so is ``path`` itself when ``missing_ok``."""
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                try:
                    yield entry, entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
    except FileNotFoundError:
        if not missing_ok:
            raise


def _walk_dir(path: str, name: str, own_bytes: int) -> DirEntry:
    logs: list[FileEntry] = []
    blocks = 0
    for entry, info in _stat_entries(path):
        if entry.name.endswith(SEGMENT_SUFFIX):
            logs.append(FileEntry(entry.name, info.st_blocks * BLOCK_BYTES, info.st_mtime))
            continue
        blocks += info.st_blocks
        if stat.S_ISDIR(info.st_mode):
            own_bytes += _tree_bytes(entry.path)
    return DirEntry(name, own_bytes + blocks * BLOCK_BYTES, tuple(logs))


def _tree_bytes(path: str) -> int:
    """Allocated bytes below ``path`` (rare in a partition dir: nothing Kafka writes nests)."""
    total = 0
    for entry, info in _stat_entries(path):
        total += info.st_blocks * BLOCK_BYTES
        if stat.S_ISDIR(info.st_mode):
            total += _tree_bytes(entry.path)
    return total


def walk_volumes(volumes: Sequence[Volume]) -> list[VolumeWalk]:
    return [walk_volume(volume) for volume in volumes]
