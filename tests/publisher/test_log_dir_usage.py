"""Topic usage from DescribeLogDirs answers: the sidecar's summaries, from the Admin API (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from publisher.log_dir_usage import (
    LogDirContents,
    PartitionReport,
    log_dir_contents,
    usage_from_log_dirs,
)
from publisher.log_dir_volumes import LogDirReport, UnmeasurableLogDirError
from publisher.topic_usage import OtherTopics, TopicTotals

GIB = 1024**3


def _dir(path: str, *partitions: PartitionReport, total: int = 100 * GIB) -> LogDirContents:
    return LogDirContents(LogDirReport(path, None, total, total // 2), partitions)


def test_partitions_are_summed_per_topic_largest_first() -> None:
    (summary,) = usage_from_log_dirs(
        [
            _dir(
                "/data/kafka",
                PartitionReport("orders", 0, 300),
                PartitionReport("orders", 1, 200),
                PartitionReport("clicks", 0, 900),
            )
        ],
        top=20,
    )
    assert summary.volume_name == "/data/kafka"
    assert summary.total_bytes == 1400
    assert summary.topics == (
        TopicTotals("clicks", 900, 1, 0, 0, None),
        TopicTotals("orders", 500, 2, 0, 0, None),
    )
    assert summary.other == OtherTopics(0, 0, 0, 0, 0)
    assert summary.unattributed_bytes == 0


def test_a_future_replica_counts_its_bytes_as_transient_and_no_partition() -> None:
    (summary,) = usage_from_log_dirs(
        [
            _dir(
                "/data/kafka",
                PartitionReport("orders", 0, 300),
                PartitionReport("orders", 1, 50, is_future=True),
            )
        ],
        top=20,
    )
    assert summary.topics == (TopicTotals("orders", 350, 1, 0, 50, None),)


def test_beyond_the_top_topics_the_rest_is_summed_as_other() -> None:
    (summary,) = usage_from_log_dirs(
        [
            _dir(
                "/data/kafka",
                PartitionReport("a", 0, 10),
                PartitionReport("b", 0, 30),
                PartitionReport("b", 1, 5, is_future=True),
                PartitionReport("c", 0, 20),
                PartitionReport("c", 1, 20),
            )
        ],
        top=1,
    )
    assert [total.topic for total in summary.topics] == ["c"]
    assert summary.other == OtherTopics(
        topics=2, bytes=45, partitions=2, active_segment_bytes=0, transient_bytes=5
    )


def test_ties_are_ranked_by_name_as_the_sidecar_ranks_them() -> None:
    (summary,) = usage_from_log_dirs(
        [_dir("/d", PartitionReport("b", 0, 10), PartitionReport("a", 0, 10))], top=20
    )
    assert [total.topic for total in summary.topics] == ["a", "b"]


def test_log_dirs_on_one_filesystem_are_one_volume_named_as_the_snapshot_names_it() -> None:
    summaries = usage_from_log_dirs(
        [
            _dir("/data/b", PartitionReport("t", 1, 7)),
            _dir("/data/a", PartitionReport("t", 0, 5)),
            _dir("/other", PartitionReport("t", 2, 3), total=50 * GIB),
        ],
        top=20,
    )
    assert [(s.volume_name, s.total_bytes) for s in summaries] == [("/data/a", 12), ("/other", 3)]
    assert summaries[0].topics == (TopicTotals("t", 12, 2, 0, 0, None),)


def test_an_offline_log_dir_is_an_empty_volume_of_its_own() -> None:
    offline = LogDirContents(LogDirReport("/data/broken", "Kafka error code 56", -1, -1))
    summaries = usage_from_log_dirs([offline, _dir("/data/ok")], top=20)
    assert [(s.volume_name, s.total_bytes, s.topics) for s in summaries] == [
        ("/data/broken", 0, ()),
        ("/data/ok", 0, ()),
    ]


def test_a_log_dir_without_sizes_is_refused_as_the_snapshot_survey_refuses_it() -> None:
    with pytest.raises(UnmeasurableLogDirError):
        usage_from_log_dirs([LogDirContents(LogDirReport("/d", None, -1, -1))], top=20)


def test_kafka_pythons_answer_is_read_with_its_partitions() -> None:
    entry: dict[str, Any] = {
        "error_code": 0,
        "log_dir": "/var/lib/kafka/data-0",
        "topics": [
            {
                "name": "orders",
                "partitions": [
                    {
                        "partition_index": 3,
                        "partition_size": 1234,
                        "offset_lag": 0,
                        "is_future_key": False,
                    },
                    {
                        "partition_index": 4,
                        "partition_size": 99,
                        "offset_lag": 5,
                        "is_future_key": True,
                    },
                ],
            }
        ],
        "total_bytes": 1000,
        "usable_bytes": 400,
        "is_cordoned": False,
    }
    assert log_dir_contents(entry) == LogDirContents(
        LogDirReport("/var/lib/kafka/data-0", None, 1000, 400),
        (
            PartitionReport("orders", 3, 1234, is_future=False),
            PartitionReport("orders", 4, 99, is_future=True),
        ),
    )


def test_an_offline_log_dir_in_kafka_pythons_answer_keeps_its_error() -> None:
    contents = log_dir_contents({"error_code": 56, "log_dir": "/d", "topics": []})
    assert contents.report.error == "Kafka error code 56"
    assert contents.partitions == ()


_partitions = st.lists(
    st.builds(
        PartitionReport,
        topic=st.sampled_from(["a", "b", "c", "d", "e", "f"]),
        partition=st.integers(0, 50),
        size_bytes=st.integers(0, 10 * GIB),
        is_future=st.booleans(),
    ),
    max_size=40,
)


@given(
    st.lists(st.tuples(st.sampled_from(["/v1", "/v2", "/v3"]), _partitions), max_size=3),
    st.integers(0, 8),
)
def test_topics_and_other_add_up_to_the_volume_total(
    dirs: list[tuple[str, list[PartitionReport]]], top: int
) -> None:
    unique = dict(dirs)
    contents = [
        _dir(path, *partitions, total=(index + 1) * GIB)
        for index, (path, partitions) in enumerate(unique.items())
    ]
    summaries = usage_from_log_dirs(contents, top)
    everything = [partition for partitions in unique.values() for partition in partitions]
    assert sum(s.total_bytes for s in summaries) == sum(p.size_bytes for p in everything)
    for summary in summaries:
        named = sum(total.bytes for total in summary.topics)
        assert named + summary.other.bytes + summary.unattributed_bytes == summary.total_bytes
        assert len(summary.topics) <= top
        assert [t.bytes for t in summary.topics] == sorted(
            (t.bytes for t in summary.topics), reverse=True
        )
    partitions = sum(t.partitions for s in summaries for t in s.topics)
    partitions += sum(s.other.partitions for s in summaries)
    assert partitions == sum(not p.is_future for p in everything)
    transient = sum(t.transient_bytes for s in summaries for t in s.topics)
    transient += sum(s.other.transient_bytes for s in summaries)
    assert transient == sum(p.size_bytes for p in everything if p.is_future)
