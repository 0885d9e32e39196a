"""The tiered-storage upload backlog estimate (``consumer.upload_backlog``): examples for each
local retention setting, and its properties (never negative, zero within the local bound,
monotone in the topic's bytes)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from consumer.retention_outlook import retention_config
from consumer.upload_backlog import local_bound_bytes, upload_backlog_bytes

MIB = 2**20
SEGMENT = 16 * MIB
TIERED = {"remote.storage.enable": "true", "segment.bytes": str(SEGMENT)}


def backlog(
    configs: dict[str, str],
    size: int,
    *,
    partitions: int = 2,
    rate: float | None = 0.0,
    transient: int = 0,
    active: int = 0,
) -> int | None:
    return upload_backlog_bytes(
        retention_config(configs),
        bytes_on_volume=size,
        transient_bytes=transient,
        partitions=partitions,
        growth_bytes_per_second=rate,
        active_segment_bytes=active,
    )


def test_local_retention_bytes_bounds_each_partition_plus_a_segment() -> None:
    configs = {**TIERED, "local.retention.bytes": str(100 * MIB), "local.retention.ms": "-1"}
    bound = 2 * (100 * MIB + SEGMENT)
    assert backlog(configs, bound) == 0
    assert backlog(configs, bound + 5 * MIB) == 5 * MIB


def test_local_retention_ms_keeps_the_rate_times_the_time_plus_a_segment_each() -> None:
    # 1 MiB/s for 60 s: 60 MiB, and a segment in each of the 2 partitions.
    configs = {**TIERED, "local.retention.ms": "60000"}
    bound = 60 * MIB + 2 * SEGMENT
    assert backlog(configs, bound, rate=float(MIB)) == 0
    assert backlog(configs, bound + MIB, rate=float(MIB)) == MIB
    # A shrinking topic (uploads catching up) counts as not growing.
    assert backlog(configs, 3 * SEGMENT, rate=-float(MIB)) == SEGMENT


def test_both_limits_the_smaller_bound_wins() -> None:
    configs = {**TIERED, "local.retention.ms": "60000", "local.retention.bytes": str(MIB)}
    by_size = 2 * (MIB + SEGMENT)
    assert local_bound_bytes(2, float(MIB), 0, retention_config(configs)) == by_size
    assert backlog(configs, by_size + 7, rate=float(MIB)) == 7


def test_minus_two_inherits_the_topics_retention() -> None:
    inherited = {**TIERED, "retention.bytes": str(MIB), "local.retention.bytes": "-2"}
    assert backlog({**inherited, "retention.ms": "-1"}, 2 * (MIB + SEGMENT) + 1) == 1


def test_unlimited_local_retention_frees_nothing_anyway() -> None:
    configs = {**TIERED, "local.retention.ms": "-1", "local.retention.bytes": "-1"}
    assert backlog(configs, 10**12) == 0


def test_a_topic_that_is_not_tiered_has_no_backlog() -> None:
    configs = {"segment.bytes": str(SEGMENT), "local.retention.ms": "1000", "retention.ms": "1000"}
    assert backlog(configs, 10**12, rate=0.0) == 0
    assert backlog({**TIERED, "cleanup.policy": "compact", "local.retention.ms": "1"}, 10**12) == 0


def test_unknown_while_only_time_bounds_it_and_the_growth_is_not_measured() -> None:
    assert backlog({**TIERED, "local.retention.ms": "60000"}, 10**9, rate=None) is None
    sized = {**TIERED, "local.retention.ms": "60000", "local.retention.bytes": str(MIB)}
    assert backlog(sized, 10**9, rate=None) == 10**9 - 2 * (MIB + SEGMENT)


def test_transient_dirs_and_active_segments_are_not_backlog() -> None:
    configs = {**TIERED, "local.retention.bytes": "0", "local.retention.ms": "-1"}
    # bound: a segment per partition; a 40 MiB -future copy is no upload backlog.
    assert backlog(configs, 2 * SEGMENT + 40 * MIB, transient=40 * MIB) == 0
    # Active segments larger than the bound (their blocks): never counted as backlog.
    assert backlog(configs, 3 * SEGMENT, active=3 * SEGMENT) == 0


tiered_configs = st.fixed_dictionaries(
    {
        "remote.storage.enable": st.sampled_from(["true", "false"]),
        "segment.bytes": st.integers(1, 2**30).map(str),
        "local.retention.ms": st.sampled_from(["-2", "-1", "0", "1000", "600000"]),
        "local.retention.bytes": st.sampled_from(["-2", "-1", "0", str(MIB), str(2**30)]),
        "retention.ms": st.sampled_from(["-1", "600000", "604800000"]),
        "retention.bytes": st.sampled_from(["-1", str(2**30)]),
        "cleanup.policy": st.sampled_from(["delete", "compact", "compact,delete"]),
    }
)
sizes = st.integers(0, 2**50)
rates = st.one_of(st.none(), st.floats(-1e9, 1e9, allow_nan=False))


@given(tiered_configs, sizes, st.tuples(sizes, sizes), st.integers(1, 1000), rates)
def test_never_negative_and_zero_within_the_local_bound(
    configs: dict[str, str],
    size: int,
    transient_and_active: tuple[int, int],
    partitions: int,
    rate: float | None,
) -> None:
    transient, active = transient_and_active
    transient = min(transient, size)
    estimate = backlog(
        configs, size, partitions=partitions, rate=rate, transient=transient, active=active
    )
    assert estimate is None or estimate >= 0
    config = retention_config(configs)
    bound = local_bound_bytes(partitions, rate, active, config)
    if bound is not None and size - transient <= bound:
        assert estimate == 0
    if not config.remote_storage:
        assert estimate == 0


@given(tiered_configs, sizes, sizes, st.integers(1, 1000), rates)
def test_monotone_in_the_topics_bytes(
    configs: dict[str, str], size: int, more: int, partitions: int, rate: float | None
) -> None:
    smaller = backlog(configs, size, partitions=partitions, rate=rate)
    larger = backlog(configs, size + more, partitions=partitions, rate=rate)
    assert (smaller is None) == (larger is None)
    if smaller is not None and larger is not None:
        assert smaller <= larger
        # Every byte beyond the bound is backlog: it grows by at most what was added.
        assert larger - smaller <= more
