"""The mechanism forecast of one volume: fill time, drivers and what would prevent the fill."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_history.forecast.mechanism.projection import (
    REST,
    TopicHistory,
    VolumeHistory,
    project_volume,
)
from spark_history.forecast.mechanism.volume_path import crossing_seconds

GB = 10**9
HOUR = 3600.0
DAY = 24 * HOUR
SURVEYS = np.arange(-48 * HOUR, 1.0, 600.0)


def _values(**overrides: object) -> dict[str, object]:
    values: dict[str, object] = {
        "cleanupPolicy": "delete",
        "retentionMs": -1,
        "retentionBytes": -1,
        "segmentBytes": 100_000_000,
        "segmentMs": 604_800_000,
        "remoteStorageEnable": False,
        "localRetentionMs": -2,
        "localRetentionBytes": -2,
    }
    values.update(overrides)
    return values


def _climbing(
    topic: str, start: float, rate: float, config: dict[str, object] | None
) -> TopicHistory:
    return _surveyed(topic, start + rate * (SURVEYS - SURVEYS[0]), config)


def _surveyed(topic: str, values: np.ndarray, config: dict[str, object] | None) -> TopicHistory:
    """``topic`` of 2 partitions whose bytes at ``SURVEYS`` are ``values``."""
    return TopicHistory(
        topic=topic,
        seconds=SURVEYS,
        bytes=values,
        transient_bytes=np.zeros_like(values),
        partitions=2,
        active_segment_bytes=0,
        config=config,
    )


def _volume(*topics: TopicHistory, consumed: float = 500 * GB) -> VolumeHistory:
    return VolumeHistory(
        capacity=1000 * GB,
        consumed=consumed,
        hard_threshold_bytes=100 * GB,
        topics=topics,
        rest_seconds=SURVEYS,
        rest_bytes=np.full(SURVEYS.shape, 5 * GB),
    )


def test_an_unbounded_topic_fills_the_volume_and_names_the_retention_that_prevents_it() -> None:
    # 1 MB/s unbounded: 400 GB of room lasts 400000 s (111.1 h).
    logs = _climbing("logs", 100 * GB, 1e6, _values())
    forecast = project_volume(_volume(logs), 30 * DAY)
    assert forecast.fill_seconds is not None
    assert abs(forecast.fill_seconds - 400_000.0) < 1.0
    assert [driver.topic for driver in forecast.drivers] == ["logs"]
    assert forecast.drivers[0].detail.startswith("unbounded")
    by_setting = {prevention.setting: prevention for prevention in forecast.preventions}
    # logs holds 100 GB + 48 h x 1 MB/s now; retention.ms R keeps it under 1e6 R/1000 + 2
    # segments <= room (0.99 x (400 GB to the limit + what logs holds now)).
    now = 100 * GB + 48 * HOUR * 1e6
    expected_ms = (0.99 * (400 * GB + now) - 2 * 100_000_000) / 1e6 * 1000
    assert abs(by_setting["retention.ms"].value - expected_ms) <= 1000
    assert by_setting["retention.ms"].current == -1
    assert "retention.bytes" in by_setting


def test_a_topic_at_its_bound_does_not_drive_the_fill() -> None:
    capped = _climbing("capped", 200 * GB, 1e6, _values(retentionBytes=50 * GB))
    forecast = project_volume(_volume(capped), 30 * DAY)
    # 2 x (50 GB + 100 MB) is below the 200 GB it holds: cut down, never a driver.
    assert forecast.fill_seconds is None
    assert forecast.drivers == []
    assert forecast.preventions == []


def test_a_topic_without_configs_is_projected_unbounded_and_listed() -> None:
    unknown = _climbing("unknown", 10 * GB, 2e6, None)
    forecast = project_volume(_volume(unknown), 30 * DAY)
    assert forecast.unknown_configs == ["unknown"]
    assert forecast.fill_seconds is not None
    assert abs(forecast.fill_seconds - 200_000.0) < 1.0
    assert forecast.preventions == []


def test_the_rest_grows_at_its_own_trend_and_is_a_driver() -> None:
    volume = _volume()
    growing = VolumeHistory(
        capacity=volume.capacity,
        consumed=volume.consumed,
        hard_threshold_bytes=volume.hard_threshold_bytes,
        topics=(),
        rest_seconds=SURVEYS,
        rest_bytes=5 * GB + 1e6 * (SURVEYS - SURVEYS[0]),
    )
    forecast = project_volume(growing, 30 * DAY)
    assert forecast.fill_seconds is not None
    assert abs(forecast.fill_seconds - 400_000.0) < 1.0
    assert [driver.topic for driver in forecast.drivers] == [REST]


@settings(max_examples=40, deadline=None)
@given(
    rates=st.lists(st.floats(1e3, 1e7), min_size=1, max_size=4),
    bounded=st.lists(st.booleans(), min_size=4, max_size=4),
    consumed=st.floats(100 * GB, 850 * GB),
)
def test_every_prevention_keeps_the_volume_under_the_limit_until_the_horizon(
    rates: list[float], bounded: list[bool], consumed: float
) -> None:
    topics = [
        _climbing(
            f"t{index}",
            GB,
            rate,
            _values(retentionMs=3_600_000 * 24) if bounded[index] else _values(),
        )
        for index, rate in enumerate(rates)
    ]
    volume = _volume(*topics, consumed=consumed)
    forecast = project_volume(volume, 30 * DAY)
    for prevention in forecast.preventions:
        history = next(topic for topic in topics if topic.topic == prevention.topic)
        name = "retentionMs" if prevention.setting == "retention.ms" else "retentionBytes"
        changed = TopicHistory(
            history.topic,
            history.seconds,
            history.bytes,
            history.transient_bytes,
            history.partitions,
            history.active_segment_bytes,
            {**(history.config or {}), name: prevention.value},
        )
        after = project_volume(
            _volume(*(changed if t is history else t for t in topics), consumed=consumed),
            30 * DAY,
        )
        assert after.fill_seconds is None, prevention.describe()


@settings(max_examples=40, deadline=None)
@given(rates=st.lists(st.floats(0.0, 1e7), min_size=1, max_size=4))
def test_no_bounded_topic_projects_above_its_bound(rates: list[float]) -> None:
    topics = [
        _climbing(f"t{index}", GB, rate, _values(retentionBytes=10 * GB))
        for index, rate in enumerate(rates)
    ]
    forecast = project_volume(_volume(*topics), 30 * DAY)
    for path in forecast.path.topics:
        assert path.bound == 2 * (10 * GB + 100_000_000)
        assert path.at(30 * DAY) <= path.bound
    limit = forecast.limit_bytes
    assert crossing_seconds(forecast.path, limit, 30 * DAY) == forecast.fill_seconds


def test_the_mechanism_package_loads_without_spark() -> None:
    code = (
        "import sys, spark_history.forecast.mechanism.projection; "
        "sys.exit(1 if any(name.startswith('pyspark') for name in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_time_bound_is_the_write_rate_times_the_retention_plus_a_segment_each() -> None:
    logs = _climbing("logs", 0.0, 1e5, _values(retentionMs=7 * 86_400_000))
    forecast = project_volume(_volume(logs), 30 * DAY)
    assert forecast.path.topics[0].bound == 7 * 86_400 * 1e5 + 2 * 100_000_000


def test_a_rate_step_counts_fully_once_the_rate_window_holds_only_the_new_rate() -> None:
    # 0.5 MB/s until 24 h before the origin, 1 MB/s since: a 12 h window reads 1 MB/s (room of
    # 400 GB lasts 400000 s); the whole 48 h reads a rate in between, and fills later.
    rate = np.where(SURVEYS < -24 * HOUR, 0.5e6, 1e6)
    steps = np.concatenate(([0.0], np.diff(SURVEYS) * rate[1:]))
    logs = TopicHistory(
        topic="logs",
        seconds=SURVEYS,
        bytes=100 * GB + np.cumsum(steps),
        transient_bytes=np.zeros(SURVEYS.shape),
        partitions=2,
        active_segment_bytes=0,
        config=_values(),
    )
    recent = project_volume(_volume(logs), 30 * DAY, rate_window_seconds=12 * HOUR)
    whole = project_volume(_volume(logs), 30 * DAY)
    assert recent.fill_seconds is not None
    assert whole.fill_seconds is not None
    assert abs(recent.fill_seconds - 400_000.0) < 1.0
    assert whole.fill_seconds > 1.2 * recent.fill_seconds


def _compacted(topic: str, write_rate: float, new_keys_rate: float, policy: str) -> TopicHistory:
    """Written at ``write_rate`` and compacted every 6 h down to its live keys, which grow at
    ``new_keys_rate``: a saw whose teeth are the rewrites the cleaner reclaims."""
    elapsed = SURVEYS - SURVEYS[0]
    values = 10 * GB + new_keys_rate * elapsed + write_rate * (elapsed % (6 * HOUR))
    return _surveyed(topic, values, _values(cleanupPolicy=policy))


def test_a_compacted_topic_grows_by_its_new_keys_not_by_its_writes() -> None:
    # Rewriting the same keys at 1 MB/s: the cleaner reclaims what is written, and the topic
    # does not fill the volume within 30 days (at its 1 MB/s write rate it would fill the
    # 400 GB of room in 4.6 days). Its net growth is not quite 0: a saw's Theil-Sen slope
    # leans towards its teeth (2 % of the write rate here).
    rewritten = project_volume(_volume(_compacted("offsets", 1e6, 0.0, "compact")), 30 * DAY)
    assert rewritten.fill_seconds is None
    assert rewritten.path.topics[0].rate < 0.05e6
    # New keys at 0.2 MB/s under the same rewrites: that is its growth, unbounded.
    growing = project_volume(_volume(_compacted("offsets", 1e6, 0.2e6, "compact")), 30 * DAY)
    (path,) = growing.path.topics
    assert path.bound is None
    assert 0.2e6 <= path.rate < 0.25e6
    assert growing.fill_seconds is not None
    assert [driver.topic for driver in growing.drivers] == ["offsets"]


def test_with_delete_a_compacted_topics_falls_are_deletions_again() -> None:
    # compact,delete with no limit set: the falls are taken for retention, which hid the writes,
    # and the topic is projected at its write rate, as any delete topic is.
    both = project_volume(_volume(_compacted("events", 1e6, 0.0, "compact,delete")), 30 * DAY)
    assert both.path.topics[0].rate == pytest.approx(1e6, rel=0.01)
    assert both.fill_seconds is not None
