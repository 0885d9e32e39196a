"""Volume discovery against the real ``stat`` of temporary dirs and a given mount table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from publisher.mount_points import Mount
from publisher.volume_discovery import VolumeDiscoveryError, discover_volumes, read_mount_table
from volume_quota.limit_parsing import parse_limit, parse_volume_limit_override


def test_log_dirs_on_one_filesystem_are_one_volume(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    mounts = [Mount("/dev/test0", "/", "ext4")]
    (volume,) = discover_volumes([first, second], mounts=mounts)
    assert volume.name == "/dev/test0"
    assert volume.mount_point == "/"
    assert volume.log_dirs == (str(first), str(second))


def test_deviceless_filesystems_are_named_by_mount_point(tmp_path: Path) -> None:
    (volume,) = discover_volumes([tmp_path], mounts=[Mount("tmpfs", "/", "tmpfs")])
    assert volume.name == "/"


def test_unknown_mount_falls_back_to_the_device_number(tmp_path: Path) -> None:
    (volume,) = discover_volumes([tmp_path], mounts=[])
    device = os.stat(tmp_path).st_dev
    assert volume.name == f"dev:{os.major(device)}:{os.minor(device)}"
    assert volume.mount_point == str(tmp_path)


def test_symlinked_log_dirs_resolve(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    mounts = [Mount("/dev/root", "/", "ext4"), Mount("/dev/data", str(real), "xfs")]
    (volume,) = discover_volumes([link], mounts=mounts)
    assert volume.name == "/dev/data"
    assert volume.log_dirs == (str(link),)


def test_overrides_attach_by_log_dir_mount_point_or_device(tmp_path: Path) -> None:
    mounts = [Mount("/dev/test0", "/", "ext4")]
    for reference in (str(tmp_path), "/", "/dev/test0", str(tmp_path) + "/"):
        override = parse_volume_limit_override(f"{reference}:soft=MinFreePercentage:25")
        (volume,) = discover_volumes([tmp_path], [override], mounts=mounts)
        assert volume.soft_limit == parse_limit("MinFreePercentage:25"), reference
        assert volume.hard_limit is None


def test_overrides_combine(tmp_path: Path) -> None:
    overrides = [
        parse_volume_limit_override(f"{tmp_path}:soft=MinFreePercentage:25"),
        parse_volume_limit_override("/dev/test0:hard=MinFreeBytes:1GiB"),
    ]
    (volume,) = discover_volumes([tmp_path], overrides, mounts=[Mount("/dev/test0", "/", "ext4")])
    assert volume.soft_limit == parse_limit("MinFreePercentage:25")
    assert volume.hard_limit == parse_limit("MinFreeBytes:1GiB")


def test_an_override_for_another_path_on_the_same_filesystem_matches(tmp_path: Path) -> None:
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    override = parse_volume_limit_override(f"{sibling}:soft=MinFreePercentage:25")
    (volume,) = discover_volumes([log_dir], [override], mounts=[Mount("tmpfs", "/", "tmpfs")])
    assert volume.soft_limit is not None


def test_an_override_matching_nothing_is_an_error(tmp_path: Path) -> None:
    override = parse_volume_limit_override("/dev/elsewhere:soft=MinFreePercentage:25")
    with pytest.raises(VolumeDiscoveryError, match="matches no log dir volume"):
        discover_volumes([tmp_path], [override], mounts=[Mount("/dev/test0", "/", "ext4")])


def test_a_missing_log_dir_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(VolumeDiscoveryError, match="No such file"):
        discover_volumes([tmp_path / "gone"], mounts=[])


def test_the_real_mount_table_has_a_root() -> None:
    assert any(mount.mount_point == "/" for mount in read_mount_table())
