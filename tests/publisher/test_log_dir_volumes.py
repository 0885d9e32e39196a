"""A broker's volumes from DescribeLogDirs answers: one per filesystem, offline dirs full."""

from __future__ import annotations

from typing import Any

import pytest

from publisher.log_dir_survey import LogDirSurvey
from publisher.log_dir_volumes import LogDirReport, UnmeasurableLogDirError, volumes_from_log_dirs
from publisher.volumes import VolumeLimitOverride
from tests.publisher.publisher_samples import GIB, HARD, SOFT

TB = 1000 * GIB


def test_log_dirs_reporting_the_same_filesystem_count_once() -> None:
    measured = volumes_from_log_dirs(
        [
            LogDirReport("/data/b", None, TB, 400 * GIB),
            LogDirReport("/data/a", None, TB, 400 * GIB),  # same disk as /data/b
            LogDirReport("/data2", None, TB, 700 * GIB),
        ]
    )
    assert [(m.volume.name, m.volume.log_dirs) for m in measured] == [
        ("/data/a", ("/data/a", "/data/b")),
        ("/data2", ("/data2",)),
    ]
    assert [(m.capacity_bytes, m.free_bytes) for m in measured] == [
        (TB, 400 * GIB),
        (TB, 700 * GIB),
    ]


def test_a_write_between_the_brokers_reads_of_two_dirs_does_not_split_their_filesystem() -> None:
    """Kafka reads each log dir's usable bytes at its own instant: on a busy broker two dirs of
    one filesystem differ by what was written in between. They stay one volume, judged on the
    smaller figure, so a merge never hides space that is gone."""
    written_meanwhile = 3 * 1024 * 1024
    measured = volumes_from_log_dirs(
        [
            LogDirReport("/data/a", None, TB, 400 * GIB),
            LogDirReport("/data/b", None, TB, 400 * GIB - written_meanwhile),
            LogDirReport("/data2", None, TB, 390 * GIB),  # another disk of the same size
        ]
    )
    assert [(m.volume.log_dirs, m.free_bytes) for m in measured] == [
        (("/data/a", "/data/b"), 400 * GIB - written_meanwhile),
        (("/data2",), 390 * GIB),
    ]


def test_an_offline_log_dir_is_a_full_volume_of_its_own() -> None:
    (offline,) = volumes_from_log_dirs([LogDirReport("/data", "KAFKA_STORAGE_ERROR", -1, -1)])
    assert (offline.volume.name, offline.free_bytes) == ("/data", 0)


def test_a_broker_without_sizes_cannot_be_measured() -> None:
    with pytest.raises(UnmeasurableLogDirError, match=r"Kafka 3\.3"):
        volumes_from_log_dirs([LogDirReport("/data", None, -1, -1)])


def test_per_volume_limits_are_matched_by_log_dir() -> None:
    override = VolumeLimitOverride("/meta", soft_limit=SOFT, hard_limit=HARD)
    measured = volumes_from_log_dirs(
        [LogDirReport("/meta", None, 5 * GIB, GIB), LogDirReport("/data", None, TB, TB)],
        [override],
    )
    limits = {m.volume.name: (m.volume.soft_limit, m.volume.hard_limit) for m in measured}
    assert limits == {"/data": (None, None), "/meta": (SOFT, HARD)}


class FakeAdmin:
    """Answers like kafka-python's KafkaAdminClient; broker 2 does not answer."""

    def describe_cluster(self) -> dict[str, Any]:
        return {
            "brokers": [
                {"broker_id": 1, "is_fenced": False},
                {"broker_id": 2, "is_fenced": False},
                {"broker_id": 3, "is_fenced": True},
            ]
        }

    def describe_log_dirs(
        self, topic_partitions: Any = None, brokers: list[int] | None = None
    ) -> list[dict[str, Any]]:
        assert topic_partitions == []  # sizes only, never every partition of the broker
        assert brokers is not None
        (broker,) = brokers
        if broker == 2:
            raise TimeoutError("request timed out")
        entry = {"error_code": 0, "log_dir": "/data", "total_bytes": TB, "usable_bytes": TB // 2}
        return [{"broker": broker, "log_dirs": [entry]}]

    def close(self) -> None:
        pass


def test_a_survey_measures_each_live_broker_and_skips_one_that_does_not_answer() -> None:
    measured = LogDirSurvey(FakeAdmin).measure()
    assert sorted(measured) == [1]  # 2 timed out, 3 is fenced
    (volume,) = measured[1]
    assert (volume.capacity_bytes, volume.free_bytes) == (TB, TB // 2)
