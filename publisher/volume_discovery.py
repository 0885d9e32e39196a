"""Finding the volumes behind the log dirs: one volume per filesystem, however many dirs it holds.

Each log dir is mapped to its filesystem by ``st_dev``; the device and mount point come from the
mount table (``psutil.disk_partitions(all=True)``), the longest mount point containing the dir
winning. Filesystems with a real device are named by it (``/dev/nvme1n1``); those without one
(tmpfs, overlay) by their mount point, which is unique where a device name like ``tmpfs`` is not.
Per-volume limit overrides are attached here, matched by log dir, mount point or device.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

from publisher.mount_points import Mount, containing_mount, has_own_device
from publisher.volumes import Volume, VolumeLimitOverride


class VolumeDiscoveryError(ValueError):
    """A log dir or override that cannot be mapped to a volume: a configuration mistake."""


@dataclass(frozen=True, slots=True)
class _Filesystem:
    device_id: int
    mount: Mount | None


def read_mount_table() -> list[Mount]:
    return [
        Mount(partition.device, partition.mountpoint, partition.fstype)
        for partition in psutil.disk_partitions(all=True)
    ]


def discover_volumes(
    log_dirs: Sequence[Path],
    overrides: Sequence[VolumeLimitOverride] = (),
    mounts: Sequence[Mount] | None = None,
) -> list[Volume]:
    """The volumes holding ``log_dirs``, with their limit overrides, sorted by name."""
    mount_table = read_mount_table() if mounts is None else list(mounts)
    groups: dict[object, list[str]] = {}
    filesystems: dict[object, _Filesystem] = {}
    for log_dir in log_dirs:
        real_dir = os.path.realpath(log_dir)
        try:
            device_id = os.stat(real_dir).st_dev
        except OSError as error:
            raise VolumeDiscoveryError(f"log dir {log_dir}: {error.strerror or error}") from None
        mount = containing_mount(real_dir, mount_table)
        key: object = mount.device if mount and has_own_device(mount.device) else device_id
        groups.setdefault(key, []).append(str(log_dir))
        filesystems.setdefault(key, _Filesystem(device_id, mount))
    volumes = [_volume(filesystems[key], dirs) for key, dirs in groups.items()]
    return sorted(_apply_overrides(volumes, overrides), key=lambda volume: volume.name)


def _volume(filesystem: _Filesystem, log_dirs: list[str]) -> Volume:
    mount = filesystem.mount
    if mount is None:
        device = f"dev:{os.major(filesystem.device_id)}:{os.minor(filesystem.device_id)}"
        return Volume(name=device, mount_point=log_dirs[0], log_dirs=tuple(log_dirs))
    name = mount.device if has_own_device(mount.device) else mount.mount_point
    return Volume(name=name, mount_point=mount.mount_point, log_dirs=tuple(log_dirs))


def _apply_overrides(
    volumes: list[Volume], overrides: Sequence[VolumeLimitOverride]
) -> list[Volume]:
    by_name = {volume.name: volume for volume in volumes}
    for override in overrides:
        target = _matching_volume(override.volume, list(by_name.values()))
        if target is None:
            known = ", ".join(sorted(by_name))
            raise VolumeDiscoveryError(
                f"volume limit for {override.volume!r} matches no log dir volume "
                f"(volumes: {known}; name one by log dir, mount point or device)"
            )
        by_name[target.name] = replace(
            target,
            soft_limit=override.soft_limit or target.soft_limit,
            hard_limit=override.hard_limit or target.hard_limit,
        )
    return list(by_name.values())


def _matching_volume(reference: str, volumes: list[Volume]) -> Volume | None:
    normalized = os.path.normpath(reference)
    for volume in volumes:
        names = {volume.name, os.path.normpath(volume.mount_point)}
        names.update(os.path.normpath(log_dir) for log_dir in volume.log_dirs)
        if reference in names or normalized in names:
            return volume
    try:
        device_id = os.stat(reference).st_dev
    except OSError:
        return None
    for volume in volumes:
        if any(_same_device(log_dir, device_id) for log_dir in volume.log_dirs):
            return volume
    return None


def _same_device(path: str, device_id: int) -> bool:
    try:
        return os.stat(path).st_dev == device_id
    except OSError:
        return False
