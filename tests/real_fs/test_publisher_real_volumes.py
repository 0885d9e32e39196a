"""The publisher on real filesystems: tmpfs of known size, and ext4 with root-reserved blocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from consumer.clock import SystemClock
from publisher.kafka_sink import ClientIssueCallback, DeliveryCallback
from publisher.publication_loop import LoopSettings, PublicationLoop, measuring
from publisher.publication_policy import PublicationPolicy
from publisher.publisher_metrics import PublisherMetrics
from publisher.volume_discovery import discover_volumes
from publisher.volume_measurement import measure_volumes
from schemas import VolumeSnapshot, decode_snapshot, snapshot_key
from tests.real_fs.real_mounts import Mounts, fill, is_mount_point, statvfs_sizes
from volume_quota.config import load_settings
from volume_quota.limit_parsing import parse_limit, parse_volume_limit_override
from volume_quota.one_shot import measure_snapshot

pytestmark = [pytest.mark.real_fs, pytest.mark.timeout(120)]

MIB = 1024 * 1024


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Mounts]:
    owner = Mounts()
    try:
        yield owner
    finally:
        owner.close()
        leftovers = [path for path in tmp_path.rglob("*") if path.is_dir() and is_mount_point(path)]
        assert leftovers == [], f"mounts left behind: {leftovers}"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("VOLUME_QUOTA_"):
            monkeypatch.delenv(name)


def snapshot_for(*log_dirs: Path, **settings: object) -> VolumeSnapshot:
    values = {"broker_id": "5", "log_dirs": ",".join(str(d) for d in log_dirs), **settings}
    return measure_snapshot(load_settings(values))


def test_snapshot_agrees_with_statvfs_as_the_volume_fills(tmp_path: Path, mounts: Mounts) -> None:
    data = mounts.tmpfs(tmp_path / "data0", "16m")
    (empty_volume,) = snapshot_for(data).volumes
    assert empty_volume.capacity == 16 * MIB
    assert empty_volume.consumed == 0
    assert empty_volume.volume_name == str(data)  # tmpfs has no device: named by mount point
    assert empty_volume.path == str(data)

    fill(data, "segment-0.log", 4 * MIB)
    (volume,) = snapshot_for(data).volumes
    capacity, free = statvfs_sizes(data)
    assert (volume.capacity, volume.consumed) == (capacity, capacity - free)
    assert volume.consumed == 4 * MIB

    fill(data, "segment-1.log", 9 * MIB)
    (volume,) = snapshot_for(data).volumes
    assert volume.consumed == 13 * MIB
    assert volume.free == 3 * MIB


def test_two_log_dirs_on_one_filesystem_count_once(tmp_path: Path, mounts: Mounts) -> None:
    data = mounts.tmpfs(tmp_path / "shared", "16m")
    first, second = data / "kafka-0", data / "kafka-1"
    first.mkdir()
    second.mkdir()
    fill(first, "a.log", 2 * MIB)
    fill(second, "b.log", 3 * MIB)
    snapshot = snapshot_for(first, second)
    (volume,) = snapshot.volumes
    assert volume.capacity == 16 * MIB
    assert volume.consumed == 5 * MIB
    (discovered,) = discover_volumes([first, second])
    assert discovered.log_dirs == (str(first), str(second))


def test_separate_filesystems_are_separate_volumes(tmp_path: Path, mounts: Mounts) -> None:
    small = mounts.tmpfs(tmp_path / "small", "8m")
    large = mounts.tmpfs(tmp_path / "large", "32m")
    fill(small, "x.log", 6 * MIB)
    snapshot = snapshot_for(large, small)
    sizes = {volume.volume_name: (volume.capacity, volume.consumed) for volume in snapshot.volumes}
    assert sizes == {str(large): (32 * MIB, 0), str(small): (8 * MIB, 6 * MIB)}


def test_the_longest_mount_point_wins_for_nested_mounts(tmp_path: Path, mounts: Mounts) -> None:
    outer = mounts.tmpfs(tmp_path / "outer", "16m")
    inner = mounts.tmpfs(outer / "inner", "8m")
    log_dir = inner / "kafka"
    log_dir.mkdir()
    fill(outer, "outer.log", 1 * MIB)
    (volume,) = snapshot_for(log_dir).volumes
    assert volume.volume_name == str(inner)
    assert volume.capacity == 8 * MIB
    assert volume.consumed == 0


def test_root_reserved_ext4_blocks_count_as_consumed(tmp_path: Path, mounts: Mounts) -> None:
    data = mounts.ext4(tmp_path / "ext4", tmp_path / "ext4.img", size_mib=64, reserved_percent=10)
    stats = os.statvfs(data)
    assert stats.f_bavail < stats.f_bfree  # the reserve exists
    (volume,) = snapshot_for(data).volumes
    assert volume.volume_name.startswith("/dev/loop")
    assert volume.capacity == stats.f_blocks * stats.f_frsize
    assert volume.consumed == (stats.f_blocks - stats.f_bavail) * stats.f_frsize
    reserved = (stats.f_bfree - stats.f_bavail) * stats.f_frsize
    assert volume.consumed >= reserved > 0.09 * volume.capacity


def test_server_properties_metadata_dir_is_a_volume_too(tmp_path: Path, mounts: Mounts) -> None:
    data = mounts.tmpfs(tmp_path / "data", "16m")
    metadata = mounts.tmpfs(tmp_path / "metadata", "8m")
    properties = tmp_path / "server.properties"
    properties.write_text(f"node.id=9\nlog.dirs={data}\nmetadata.log.dir={metadata}\n")
    snapshot = measure_snapshot(load_settings({"server_properties": str(properties)}))
    assert snapshot.broker_id == 9
    assert {volume.volume_name: volume.capacity for volume in snapshot.volumes} == {
        str(data): 16 * MIB,
        str(metadata): 8 * MIB,
    }


def test_a_volume_override_applies_to_its_volume_only(tmp_path: Path, mounts: Mounts) -> None:
    first = mounts.tmpfs(tmp_path / "first", "8m")
    second = mounts.tmpfs(tmp_path / "second", "8m")
    override = f"{first}:soft=MinFreePercentage:40,hard=MinFreeBytes:1MiB"
    snapshot = snapshot_for(first, second, volume_limits=[override])
    by_name = {volume.volume_name: volume for volume in snapshot.volumes}
    assert by_name[str(first)].soft_limit == parse_limit("MinFreePercentage:40")
    assert by_name[str(first)].hard_limit == parse_limit("MinFreeBytes:1MiB")
    assert by_name[str(second)].soft_limit is None
    assert parse_volume_limit_override(override).volume == str(first)


def test_once_print_end_to_end(tmp_path: Path, mounts: Mounts) -> None:
    shared = mounts.tmpfs(tmp_path / "shared", "16m")
    other = mounts.tmpfs(tmp_path / "other", "8m")
    dirs = [shared / "a", shared / "b", other / "c"]
    for directory in dirs:
        directory.mkdir()
    fill(dirs[0], "seg.log", 3 * MIB)
    fill(dirs[2], "seg.log", 5 * MIB)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("VOLUME_QUOTA_")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "volume_quota",
            "publish",
            "--once",
            "--print",
            "--broker-id",
            "42",
            "--log-dirs",
            ",".join(str(d) for d in dirs),
            "--soft-limit",
            "MinFreePercentage:15",
            "--hard-limit",
            "MinFreeBytes:1MiB",
        ],
        capture_output=True,
        timeout=60,
        env=environment,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.count(b"\n") == 1
    snapshot = decode_snapshot(result.stdout.strip(), snapshot_key(42))
    assert isinstance(snapshot, VolumeSnapshot)
    assert snapshot.hard_limit == parse_limit("MinFreeBytes:1MiB")
    volumes = {volume.volume_name: volume for volume in snapshot.volumes}
    assert set(volumes) == {str(shared), str(other)}
    for mount_point in (shared, other):
        capacity, free = statvfs_sizes(mount_point)
        volume = volumes[str(mount_point)]
        assert (volume.capacity, volume.consumed) == (capacity, capacity - free)
    assert volumes[str(shared)].consumed == 3 * MIB
    assert volumes[str(other)].consumed == 5 * MIB
    document = json.loads(result.stdout)
    assert document["brokerId"] == 42
    assert result.stderr == b""


class RecordingSink:
    """Delivers every message at once and keeps its value."""

    def __init__(self) -> None:
        self.values: list[bytes] = []

    @property
    def needs_rebuild(self) -> bool:
        return False

    def send(
        self,
        key: bytes,
        value: bytes | None,
        on_result: DeliveryCallback,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        assert value is not None
        self.values.append(value)
        on_result(None)

    def poll(self, timeout_seconds: float) -> None:
        """Nothing to serve: deliveries are reported at once."""

    def flush(self, timeout_seconds: float) -> int:
        return 0

    bootstrap_servers = "recording:9093"

    def rebuild(self, flush_timeout_seconds: float, elsewhere: bool = False) -> int:
        return 0


def test_filling_a_volume_past_its_limits_publishes_each_state_change(
    tmp_path: Path, mounts: Mounts
) -> None:
    data = mounts.tmpfs(tmp_path / "data", "16m")
    sink = RecordingSink()
    metrics = PublisherMetrics()

    def sink_factory(_on_error: ClientIssueCallback) -> RecordingSink:
        return sink

    loop = PublicationLoop(
        LoopSettings(
            soft_limit=parse_limit("MinFreeBytes:8MiB"),
            hard_limit=parse_limit("MinFreeBytes:2MiB"),
            policy=PublicationPolicy(heartbeat_interval_seconds=3600, change_threshold_percent=50),
        ),
        measure=measuring(5, discover_volumes([data]), measure_volumes),
        sink_factory=sink_factory,
        clock=SystemClock(),
        metrics=metrics,
    )
    loop.tick()  # first
    fill(data, "a.log", 4 * MIB)
    loop.tick()  # 12 MiB free: OPEN, a 25% move is under the 50% threshold
    fill(data, "b.log", 5 * MIB)
    loop.tick()  # 7 MiB free: THROTTLE
    fill(data, "c.log", 6 * MIB)
    loop.tick()  # 1 MiB free: PAUSE
    (data / "c.log").unlink()
    (data / "b.log").unlink()
    loop.tick()  # 12 MiB free again: OPEN
    snapshots = [decode_snapshot(value) for value in sink.values]
    frees = [s.volumes[0].free for s in snapshots if isinstance(s, VolumeSnapshot)]
    assert frees == [16 * MIB, 7 * MIB, 1 * MIB, 12 * MIB]
    labels = {"broker": "5", "volume": str(data)}
    assert metrics.registry.get_sample_value("volume_quota_volume_consumed_bytes", labels) == (
        4 * MIB
    )
    assert (
        metrics.registry.get_sample_value(
            "volume_quota_publications_total", {"reason": "state_changed"}
        )
        == 3
    )
