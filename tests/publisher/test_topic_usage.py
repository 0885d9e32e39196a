"""The per-topic grouping of a log-dir walk: directory names, sums, top N (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from publisher.topic_usage import (
    DirEntry,
    DirKind,
    FileEntry,
    PartitionDir,
    VolumeWalk,
    parse_partition_dir,
    summarize_volume,
    topic_totals,
)


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("orders-0", PartitionDir("orders", 0, DirKind.CURRENT)),
        ("my.topic-with-dashes-12", PartitionDir("my.topic-with-dashes", 12, DirKind.CURRENT)),
        ("__consumer_offsets-49", PartitionDir("__consumer_offsets", 49, DirKind.CURRENT)),
        (
            "orders-3.9f0c6a0e2f6b4a3c8e2d1b5a7c9e0f11-delete",
            PartitionDir("orders", 3, DirKind.DELETE),
        ),
        ("orders-3.ab12cd-future", PartitionDir("orders", 3, DirKind.FUTURE)),
        ("a.b-7.ab12cd-stray", PartitionDir("a.b", 7, DirKind.STRAY)),
        ("topic-delete-0", PartitionDir("topic-delete", 0, DirKind.CURRENT)),
    ],
)
def test_kafka_directory_names_are_parsed(name: str, parsed: PartitionDir) -> None:
    assert parse_partition_dir(name) == parsed


@pytest.mark.parametrize(
    "name",
    [
        "remote-log-index-cache",
        "orders",
        "-0",
        "orders-x",
        "orders-01",
        "orders-0-delete",
        "orders-0.-delete",
        "orders-٣",
        "lost+found",
    ],
)
def test_other_directories_are_not_partitions(name: str) -> None:
    assert parse_partition_dir(name) is None


def _partition(name: str, *segments: tuple[int, int, float]) -> DirEntry:
    """A partition dir: its own 4 KiB, each segment's .log and a 4 KiB .index beside it."""
    logs = tuple(FileEntry(f"{base:020d}.log", size, mtime) for base, size, mtime in segments)
    return DirEntry(name=name, allocated_bytes=4096 + 4096 * len(segments), logs=logs)


def test_a_topic_sums_its_partitions_and_finds_active_and_oldest_segments() -> None:
    walk = VolumeWalk(
        "/dev/a",
        (
            _partition("orders-0", (0, 1000, 50.0), (500, 300, 90.0)),
            _partition("orders-1", (200, 700, 40.0), (800, 100, 95.0)),
            _partition("orders-2.abc-delete", (0, 5000, 10.0)),
            _partition("orders-1.def-future", (0, 200, 99.0)),
            _partition("logs-0", (0, 10, 70.0)),
            DirEntry("remote-log-index-cache", 4096 + 8192),
        ),
        other_bytes=12,
    )
    totals, unattributed = topic_totals(walk)
    orders, logs = totals
    assert orders.topic == "orders"
    assert orders.partitions == 2
    assert orders.active_segment_bytes == 300 + 100
    assert orders.oldest_segment_modified == 40.0
    delete_dir, future_dir = walk.dirs[2].total_bytes, walk.dirs[3].total_bytes
    assert orders.transient_bytes == delete_dir + future_dir
    assert orders.bytes == sum(entry.total_bytes for entry in walk.dirs[:4])
    assert logs.partitions == 1
    assert unattributed == 12 + 4096 + 8192


def test_an_empty_partition_has_no_oldest_segment() -> None:
    walk = VolumeWalk("/dev/a", (_partition("empty-0"),))
    (total,), _ = topic_totals(walk)
    assert total.partitions == 1
    assert total.oldest_segment_modified is None
    assert total.active_segment_bytes == 0


def test_top_n_keeps_the_largest_and_sums_the_rest() -> None:
    walk = VolumeWalk(
        "/dev/a",
        tuple(_partition(f"t{index}-0", (0, index * 1000, 1.0)) for index in range(1, 6)),
    )
    summary = summarize_volume(walk, top=2)
    assert [topic.topic for topic in summary.topics] == ["t5", "t4"]
    assert summary.other.topics == 3
    assert summary.other.partitions == 3
    assert summary.other.bytes == sum(topic.bytes for topic in topic_totals(walk)[0][2:])


sizes = st.integers(min_value=0, max_value=2**40)
file_entries = st.builds(
    FileEntry,
    name=st.one_of(
        st.integers(0, 10**6).map(lambda base: f"{base:020d}.log"),
        st.sampled_from(["x.log", "1.2.log", "-1.log"]),
    ),
    allocated_bytes=sizes,
    modified=st.floats(min_value=0, max_value=4e9),
)
dir_names = st.one_of(
    st.builds(
        lambda topic, partition, suffix: f"{topic}-{partition}{suffix}",
        st.sampled_from(["a", "b", "c.d", "e-f", "g_h", "i", "j"]),
        st.integers(0, 20),
        st.sampled_from(["", "", "", ".ab12-delete", ".cd34-future", ".ef56-stray"]),
    ),
    st.sampled_from(["remote-log-index-cache", "lost+found", "junk"]),
)
dir_entries = st.builds(
    DirEntry,
    name=dir_names,
    allocated_bytes=sizes,
    logs=st.lists(file_entries, max_size=5).map(tuple),
)
walks = st.builds(
    VolumeWalk,
    volume_name=st.just("/dev/a"),
    dirs=st.lists(dir_entries, max_size=30).map(tuple),
    other_bytes=sizes,
)


@given(walks)
def test_topics_and_unattributed_bytes_add_up_to_the_walk(walk: VolumeWalk) -> None:
    totals, unattributed = topic_totals(walk)
    assert sum(total.bytes for total in totals) + unattributed == walk.total_bytes
    assert all(0 <= total.transient_bytes <= total.bytes for total in totals)
    assert [total.bytes for total in totals] == sorted((t.bytes for t in totals), reverse=True)


@given(walks, st.integers(min_value=0, max_value=40))
def test_top_n_plus_other_is_the_whole(walk: VolumeWalk, top: int) -> None:
    totals, _ = topic_totals(walk)
    summary = summarize_volume(walk, top)
    assert len(summary.topics) == min(top, len(totals))
    kept_bytes = sum(topic.bytes for topic in summary.topics)
    assert kept_bytes + summary.other.bytes + summary.unattributed_bytes == summary.total_bytes
    kept_partitions = sum(topic.partitions for topic in summary.topics)
    assert kept_partitions + summary.other.partitions == sum(t.partitions for t in totals)
    assert len(summary.topics) + summary.other.topics == len(totals)
    if summary.topics and summary.other.topics:
        assert min(t.bytes for t in summary.topics) >= max(t.bytes for t in totals[top:])


def test_a_negative_top_is_refused() -> None:
    with pytest.raises(ValueError, match="top"):
        summarize_volume(VolumeWalk("/dev/a", ()), -1)
