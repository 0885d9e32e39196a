"""Which mount holds a path: the longest mount point that is a path prefix of it (pure)."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Mount:
    device: str
    mount_point: str
    fstype: str = ""


def containing_mount(path: str, mounts: Sequence[Mount]) -> Mount | None:
    """The mount whose mount point is the longest prefix of absolute ``path``, by whole path
    components. When one mount point is listed several times (a mount stacked over another),
    the last listed is on top and wins, as in ``/proc/self/mounts``."""
    best: Mount | None = None
    best_length = -1
    normalized = posixpath.normpath(path)
    for mount in mounts:
        mount_point = posixpath.normpath(mount.mount_point)
        if not _is_within(normalized, mount_point):
            continue
        if len(mount_point) >= best_length:
            best = mount
            best_length = len(mount_point)
    return best


def _is_within(path: str, mount_point: str) -> bool:
    if mount_point == "/":
        return path.startswith("/")
    return path == mount_point or path.startswith(mount_point + "/")


def has_own_device(device: str) -> bool:
    """True for a block device path (``/dev/...``); false for tmpfs, overlay, proc..."""
    return device.startswith("/dev/")
