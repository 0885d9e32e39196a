"""A topic's path is its bytes plus its write rate, capped at what retention keeps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from consumer.retention_outlook import RetentionConfig
from spark_history.forecast.mechanism.topic_config import config_from_values
from spark_history.forecast.mechanism.topic_path import TopicState, topic_path

GIB = 1024**3


def _config(**values: object) -> RetentionConfig:
    defaults: dict[str, object] = {
        "cleanupPolicy": "delete",
        "retentionMs": 604_800_000,
        "retentionBytes": -1,
        "segmentBytes": GIB,
        "segmentMs": 604_800_000,
        "remoteStorageEnable": False,
        "localRetentionMs": -2,
        "localRetentionBytes": -2,
    }
    return config_from_values({**defaults, **values})


def _state(config: RetentionConfig | None, **fields: object) -> TopicState:
    values: dict[str, object] = {
        "topic": "t",
        "bytes": 10 * GIB,
        "partitions": 4,
        "active_segment_bytes": GIB,
        "transient_bytes": 0,
        "rate": 1e6,
        "config": config,
    }
    values.update(fields)
    return TopicState(**values)  # type: ignore[arg-type]


def test_the_document_values_are_read_as_kafka_configs() -> None:
    config = _config(cleanupPolicy="compact,delete", retentionBytes=2 * GIB)
    assert config.cleanup_policy == frozenset({"compact", "delete"})
    assert config.retention_bytes == 2 * GIB
    assert config.segment_bytes == GIB
    assert config.remote_storage is False


def test_retention_bytes_bounds_at_partitions_times_bytes_plus_a_segment() -> None:
    path = topic_path(_state(_config(retentionMs=-1, retentionBytes=5 * GIB)))
    assert path.bound == 4 * (5 * GIB + GIB)
    assert path.at(1e9) == path.bound
    assert path.at(3600.0) == 10 * GIB + 3.6e9


def test_retention_ms_bounds_at_the_write_rate_times_the_retention_plus_a_segment_each() -> None:
    path = topic_path(_state(_config(retentionMs=3_600_000), rate=1e6))
    assert path.bound == 10 * GIB  # 3.6 GB + 4 GiB of segments is below the bytes now
    path = topic_path(_state(_config(retentionMs=86_400_000), rate=1e6))
    assert path.bound == 86_400 * 1e6 + 4 * GIB


def test_a_compacted_topic_and_unlimited_retention_are_unbounded() -> None:
    assert topic_path(_state(_config(cleanupPolicy="compact"))).bound is None
    assert topic_path(_state(_config(retentionMs=-1, retentionBytes=-1))).bound is None


def test_a_topic_without_configs_is_unbounded() -> None:
    path = topic_path(_state(None))
    assert path.bound is None
    assert path.detail == "no config read"


def test_a_tiered_topic_is_capped_by_local_retention_until_its_uploads_fall_behind() -> None:
    tiered = _config(
        remoteStorageEnable=True, retentionMs=-1, localRetentionBytes=GIB, localRetentionMs=-1
    )
    within = topic_path(_state(tiered, bytes=6 * GIB))
    assert within.bound == 4 * (GIB + GIB)
    stuck = topic_path(_state(tiered, bytes=20 * GIB))
    assert stuck.bound is None
    assert "upload backlog of" in stuck.detail


@settings(deadline=None)
@given(
    size=st.integers(0, 10**12),
    partitions=st.integers(1, 500),
    ms=st.one_of(st.just(-1), st.integers(1, 10**10)),
    retention_bytes=st.one_of(st.just(-1), st.integers(0, 10**11)),
    rate=st.floats(0.0, 1e9),
    seconds=st.floats(0.0, 1e8),
)
def test_a_bounded_topic_never_projects_above_its_bound(
    *, size: int, partitions: int, ms: int, retention_bytes: int, rate: float, seconds: float
) -> None:
    config = _config(retentionMs=ms, retentionBytes=retention_bytes)
    path = topic_path(_state(config, bytes=size, partitions=partitions, rate=rate))
    if path.bound is not None:
        assert path.at(seconds) <= path.bound
    assert path.at(seconds) <= size + rate * seconds
