"""What retention will do to a topic on a volume: bounded, steady or unbounded, and the bound."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from consumer.retention_outlook import (
    OutlookKind,
    RetentionConfig,
    TopicOnVolume,
    retention_config,
    retention_outlook,
)

GIB = 2**30
MIB = 2**20


def on_volume(
    size: int = 10 * GIB, partitions: int = 4, rate: float | None = 1000.0, active: int = 0
) -> TopicOnVolume:
    return TopicOnVolume(
        bytes=size, partitions=partitions, growth_bytes_per_second=rate, active_segment_bytes=active
    )


def test_kafka_defaults_when_a_config_is_missing() -> None:
    config = retention_config({})
    assert config == RetentionConfig(
        cleanup_policy=frozenset({"delete"}),
        retention_ms=604_800_000,
        retention_bytes=-1,
        segment_bytes=GIB,
        remote_storage=False,
        local_retention_ms=-2,
        local_retention_bytes=-2,
    )


def test_retention_bytes_bounds_each_partition_plus_one_segment() -> None:
    config = retention_config(
        {"retention.bytes": str(GIB), "retention.ms": "-1", "segment.bytes": str(100 * MIB)}
    )
    outlook = retention_outlook(on_volume(partitions=4), config)
    assert outlook.kind is OutlookKind.BOUNDED
    assert outlook.bound_bytes == 4 * (GIB + 100 * MIB)


def test_retention_ms_holds_about_rate_times_retention_plus_a_segment_per_partition() -> None:
    config = retention_config({"retention.ms": "3600000", "segment.bytes": str(MIB)})
    outlook = retention_outlook(on_volume(size=MIB, partitions=2, rate=1000.0), config)
    assert outlook.kind is OutlookKind.STEADY
    assert outlook.bound_bytes == 1000 * 3600 + 2 * MIB


def test_a_topic_at_its_plateau_is_not_predicted_below_what_it_holds() -> None:
    config = retention_config({"retention.ms": "3600000", "segment.bytes": str(MIB)})
    outlook = retention_outlook(on_volume(size=50 * GIB, rate=0.0), config)
    assert outlook.bound_bytes == 50 * GIB


def test_time_retention_without_a_measured_rate_has_no_bound_yet() -> None:
    outlook = retention_outlook(on_volume(rate=None), retention_config({}))
    assert outlook.kind is OutlookKind.STEADY
    assert outlook.bound_bytes is None


def test_the_smaller_of_both_limits_wins() -> None:
    config = retention_config(
        {"retention.ms": "86400000", "retention.bytes": str(MIB), "segment.bytes": str(MIB)}
    )
    outlook = retention_outlook(on_volume(size=MIB, partitions=1, rate=10_000.0), config)
    assert (outlook.kind, outlook.bound_bytes) == (OutlookKind.BOUNDED, 2 * MIB)


def test_compacted_and_infinite_topics_are_unbounded() -> None:
    compacted = retention_config({"cleanup.policy": "compact", "retention.bytes": "1000"})
    infinite = retention_config({"retention.ms": "-1", "retention.bytes": "-1"})
    for config in (compacted, infinite):
        outlook = retention_outlook(on_volume(), config)
        assert (outlook.kind, outlook.bound_bytes) == (OutlookKind.UNBOUNDED, None)
    both = retention_config({"cleanup.policy": "compact,delete", "retention.bytes": "1000"})
    assert retention_outlook(on_volume(), both).kind is OutlookKind.BOUNDED


def test_tiered_topics_use_local_retention_and_minus_two_means_the_non_local_one() -> None:
    tiered = {
        "remote.storage.enable": "true",
        "retention.ms": "-1",
        "retention.bytes": "-1",
        "segment.bytes": str(MIB),
    }
    local = retention_config({**tiered, "local.retention.bytes": str(10 * MIB)})
    assert retention_outlook(on_volume(partitions=1), local).bound_bytes == 11 * MIB
    inherited = retention_config({**tiered, "retention.bytes": str(5 * MIB)})
    assert retention_outlook(on_volume(partitions=1), inherited).bound_bytes == 6 * MIB
    # local retention counts only for tiered topics
    untiered = retention_config(
        {**tiered, "remote.storage.enable": "false", "local.retention.bytes": "1000"}
    )
    assert retention_outlook(on_volume(), untiered).kind is OutlookKind.UNBOUNDED


limits = st.one_of(st.just(-1), st.integers(0, 10**13))
local_limits = st.one_of(st.just(-2), limits)


@st.composite
def configs(draw: st.DrawFn) -> RetentionConfig:
    return RetentionConfig(
        cleanup_policy=draw(
            st.sampled_from(
                [frozenset({"delete"}), frozenset({"compact"}), frozenset({"compact", "delete"})]
            )
        ),
        retention_ms=draw(limits),
        retention_bytes=draw(limits),
        segment_bytes=draw(st.integers(14, 2**31 - 1)),
        remote_storage=draw(st.booleans()),
        local_retention_ms=draw(local_limits),
        local_retention_bytes=draw(local_limits),
    )


@st.composite
def topics(draw: st.DrawFn) -> TopicOnVolume:
    partitions = draw(st.integers(0, 1000))
    active = draw(st.integers(0, 10**12))
    return TopicOnVolume(
        bytes=draw(st.integers(active, 10**14)),
        partitions=partitions,
        growth_bytes_per_second=draw(st.one_of(st.none(), st.floats(-1e9, 1e9, allow_nan=False))),
        active_segment_bytes=active,
    )


def _effective(local: int, overall: int, tiered: bool) -> int:
    return overall if not tiered or local == -2 else local


@settings(max_examples=300, deadline=None)
@given(topic=topics(), config=configs())
def test_unbounded_exactly_when_compact_only_or_both_limits_infinite(
    topic: TopicOnVolume, config: RetentionConfig
) -> None:
    outlook = retention_outlook(topic, config)
    ms = _effective(config.local_retention_ms, config.retention_ms, config.remote_storage)
    size = _effective(config.local_retention_bytes, config.retention_bytes, config.remote_storage)
    expected_unbounded = "delete" not in config.cleanup_policy or (ms == -1 and size == -1)
    assert (outlook.kind is OutlookKind.UNBOUNDED) == expected_unbounded
    assert outlook.detail


@settings(max_examples=300, deadline=None)
@given(topic=topics(), config=configs())
def test_a_bound_is_never_below_the_active_segments(
    topic: TopicOnVolume, config: RetentionConfig
) -> None:
    outlook = retention_outlook(topic, config)
    if outlook.bound_bytes is not None:
        assert outlook.bound_bytes >= topic.active_segment_bytes
        assert outlook.kind is not OutlookKind.UNBOUNDED
