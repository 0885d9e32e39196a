"""The log-dir walk against the real filesystem: its total is what ``du`` counts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from publisher.topic_usage import summarize_volume
from publisher.topic_usage_walk import walk_volume
from publisher.volumes import Volume


def _du_bytes(path: Path) -> int:
    output = subprocess.run(
        ["du", "-s", "--block-size=1", str(path)], check=True, capture_output=True, text=True
    ).stdout
    return int(output.split()[0])


def _write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))


def _log_dir(root: Path) -> Path:
    log_dir = root / "kafka-logs"
    _write(log_dir / "big-0" / "00000000000000000000.log", 300_000)
    _write(log_dir / "big-0" / "00000000000000001000.log", 50_000)
    _write(log_dir / "big-1" / "00000000000000000000.log", 200_000)
    _write(log_dir / "small-0" / "00000000000000000000.log", 10_000)
    _write(log_dir / "big-2.0123abcd-delete" / "00000000000000000000.log", 40_000)
    _write(log_dir / "meta.properties", 100)
    _write(log_dir / "remote-log-index-cache" / "cache" / "x", 5_000)
    sparse = log_dir / "big-0" / "00000000000000001000.index"
    with sparse.open("wb") as file:
        file.truncate(10 * 1024 * 1024)  # Kafka preallocates its index files, sparse
    return log_dir


def test_the_walk_counts_what_du_counts(tmp_path: Path) -> None:
    log_dir = _log_dir(tmp_path)
    walk = walk_volume(Volume("/dev/a", "/", (str(log_dir),)))
    own_blocks = os.lstat(log_dir).st_blocks * 512
    assert walk.total_bytes + own_blocks == _du_bytes(log_dir)


def test_each_topic_counts_what_du_counts_of_its_partition_dirs(tmp_path: Path) -> None:
    log_dir = _log_dir(tmp_path)
    summary = summarize_volume(walk_volume(Volume("/dev/a", "/", (str(log_dir),))), top=20)
    by_topic = {topic.topic: topic for topic in summary.topics}
    big_dirs = [log_dir / name for name in ("big-0", "big-1", "big-2.0123abcd-delete")]
    assert by_topic["big"].bytes == sum(_du_bytes(path) for path in big_dirs)
    assert by_topic["big"].transient_bytes == _du_bytes(big_dirs[2])
    assert by_topic["big"].partitions == 2
    assert by_topic["small"].bytes == _du_bytes(log_dir / "small-0")
    active = (log_dir / "big-0" / "00000000000000001000.log").stat().st_blocks * 512
    active += (log_dir / "big-1" / "00000000000000000000.log").stat().st_blocks * 512
    assert by_topic["big"].active_segment_bytes == active
    oldest = min(
        (log_dir / name / "00000000000000000000.log").stat().st_mtime for name in ("big-0", "big-1")
    )
    assert by_topic["big"].oldest_segment_modified == oldest


def test_several_log_dirs_of_one_volume_add_up(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _write(first / "t-0" / "00000000000000000000.log", 8192)
    _write(second / "t-1" / "00000000000000000000.log", 8192)
    summary = summarize_volume(walk_volume(Volume("/dev/a", "/", (str(first), str(second)))), 5)
    (topic,) = summary.topics
    assert topic.partitions == 2
    assert topic.bytes == _du_bytes(first / "t-0") + _du_bytes(second / "t-1")
