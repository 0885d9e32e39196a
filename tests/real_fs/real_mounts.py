"""Mounting small real filesystems for tests (needs root): tmpfs, and ext4 on a loop device.

Every mount is undone by the ``Mounts`` owner, even when the test fails; ``umount`` falls back
to a lazy unmount so a file left open cannot leave a mount behind.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path
from types import TracebackType


class Mounts:
    """Mounts filesystems and unmounts them all, newest first, on ``close``."""

    def __init__(self) -> None:
        self._mounted: list[Path] = []
        self._images: list[Path] = []

    def tmpfs(self, directory: Path, size: str = "16m") -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
            check=True,
            capture_output=True,
            timeout=30,
        )
        self._mounted.append(directory)
        return directory

    def ext4(self, directory: Path, image: Path, size_mib: int, reserved_percent: int) -> Path:
        """ext4 in a file, loop-mounted; ``reserved_percent`` of its blocks are for root only."""
        directory.mkdir(parents=True, exist_ok=True)
        with image.open("wb") as file:
            file.truncate(size_mib * 1024 * 1024)
        self._images.append(image)
        subprocess.run(
            ["mkfs.ext4", "-q", "-F", "-m", str(reserved_percent), str(image)],
            check=True,
            capture_output=True,
            timeout=60,
        )
        subprocess.run(
            ["mount", "-o", "loop", str(image), str(directory)],
            check=True,
            capture_output=True,
            timeout=30,
        )
        self._mounted.append(directory)
        return directory

    def close(self) -> None:
        problems = []
        for directory in reversed(self._mounted):
            result = subprocess.run(
                ["umount", str(directory)], capture_output=True, text=True, timeout=30, check=False
            )
            if result.returncode != 0:
                lazy = subprocess.run(
                    ["umount", "-l", str(directory)],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=False,
                )
                if lazy.returncode != 0:
                    problems.append(f"{directory}: {result.stderr.strip()}")
        self._mounted.clear()
        for image in self._images:
            image.unlink(missing_ok=True)
        self._images.clear()
        if problems:
            raise RuntimeError("could not unmount: " + "; ".join(problems))

    def __enter__(self) -> Mounts:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def fill(directory: Path, name: str, size: int) -> Path:
    """Write ``size`` bytes (really allocated, not sparse) and sync."""
    path = directory / name
    with path.open("wb") as file:
        remaining = size
        chunk = b"\xa5" * (1024 * 1024)
        while remaining > 0:
            written = file.write(chunk[: min(remaining, len(chunk))])
            remaining -= written
        file.flush()
        os.fsync(file.fileno())
    return path


def fill_to_the_last_byte(directory: Path, name: str) -> Path:
    """Write until the filesystem refuses, so nothing is left even if others write meanwhile.

    Sizing one write from statvfs races with any other writer (a broker appending to its
    segments between the measurement and the write), so this writes until ENOSPC, halving
    the chunk down to one byte, with unbuffered I/O so no refused tail is lost in a buffer.
    """
    path = directory / name
    chunk = 1024 * 1024
    with path.open("ab", buffering=0) as file:
        while chunk >= 1:
            try:
                file.write(b"\xa5" * chunk)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                chunk //= 2
        os.fsync(file.fileno())
    return path


def statvfs_sizes(directory: Path) -> tuple[int, int]:
    """(capacity, free for unprivileged writers) in bytes, straight from statvfs."""
    stats = os.statvfs(directory)
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


def is_mount_point(directory: Path) -> bool:
    return os.path.ismount(directory)
