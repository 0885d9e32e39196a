"""Who reads the cluster's topic configs, and the section that carries them to the others."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from consumer.retention_outlook import retention_config
from consumer.topic_config_reads import (
    configs_from_section,
    fit_document,
    largest_topics,
    read_due,
    reader_rank,
    retention_entry,
    section_from_configs,
)
from consumer.topic_status import NOT_AUTHORIZED, TopicConfigs
from schemas.decode import Rejection, RejectionReason, decode_usage
from schemas.snapshot import MAX_BROKER_ID, snapshot_key
from schemas.usage import MAX_USAGE_DOCUMENT_BYTES, TopicConfigsSection, TopicUsageDocument
from tests.publisher.test_upload_backlog_metrics import described
from tests.schemas.test_usage import largest_legal_document

T0 = datetime(2026, 11, 27, tzinfo=UTC)
INTERVAL = 300.0
AT_T0: dict[str, Any] = {
    "last_attempt_at": None,
    "now": T0,
    "interval_seconds": INTERVAL,
    "started_at": T0,
}


def test_the_lowest_live_broker_has_rank_zero_and_the_others_count_who_is_below() -> None:
    assert reader_rank(3, {3, 7, 9}) == 0
    assert reader_rank(9, {3, 7, 9}) == 2
    assert reader_rank(5, {3, 7, 9}) == 1  # not (yet) live itself: ranked among them
    assert reader_rank(0, set()) == 0


def test_rank_zero_reads_every_interval_and_rank_k_only_after_k_plus_one() -> None:
    def due(rank: int, age: float) -> bool:
        return read_due(rank, newest_read_at=T0 - timedelta(seconds=age), **AT_T0)

    assert not due(0, INTERVAL - 1)
    assert due(0, INTERVAL)
    assert not due(1, 2 * INTERVAL - 1)
    assert due(1, 2 * INTERVAL)
    assert not due(2, 2 * INTERVAL)
    assert due(2, 3 * INTERVAL)


def test_with_nothing_known_rank_zero_reads_at_once_and_rank_k_k_intervals_later() -> None:
    def due(rank: int, since_start: float) -> bool:
        return read_due(
            rank, newest_read_at=None, **{**AT_T0, "now": T0 + timedelta(seconds=since_start)}
        )

    assert due(0, 0)
    assert not due(1, INTERVAL - 1)
    assert due(1, INTERVAL)
    assert not due(3, 3 * INTERVAL - 1)
    assert due(3, 3 * INTERVAL)


def test_a_failed_read_is_not_retried_within_the_interval() -> None:
    recent = T0 - timedelta(seconds=INTERVAL / 2)
    assert not read_due(0, newest_read_at=None, **{**AT_T0, "last_attempt_at": recent})
    earlier = T0 - timedelta(seconds=INTERVAL)
    assert read_due(0, newest_read_at=None, **{**AT_T0, "last_attempt_at": earlier})


@given(
    live=st.sets(st.integers(0, 50), min_size=1, max_size=12),
    age_intervals=st.floats(0.0, 20.0),
)
def test_while_sections_keep_coming_only_the_lowest_live_broker_reads(
    live: set[int], age_intervals: float
) -> None:
    """A section younger than two intervals: at most rank 0 is due (everyone else waits)."""
    newest_at = T0 - timedelta(seconds=min(age_intervals, 1.99) * INTERVAL)
    readers = {
        broker
        for broker in live
        if read_due(reader_rank(broker, live), newest_read_at=newest_at, **AT_T0)
    }
    assert readers <= {min(live)}


def test_the_largest_topics_come_first_summed_over_brokers() -> None:
    assert largest_topics([{"a": 5, "b": 9}, {"a": 6, "c": 1}]) == ["a", "b", "c"]
    assert largest_topics([{"a": 5, "b": 5}], limit=1) == ["a"]


def test_a_section_keeps_the_order_given_and_leaves_out_what_cannot_be_used() -> None:
    answer: TopicConfigs = {
        "big": described(cleanup_policy="compact, delete"),
        "refused": NOT_AUTHORIZED,
        "garbled": described(retention_ms="soon"),
        "small": described(remote_storage_enable="TRUE", local_retention_ms="60000"),
    }
    section = section_from_configs(answer, T0, ["big", "refused", "garbled", "small", "absent"])
    assert section is not None
    assert [entry.topic for entry in section.topics] == ["big", "small"]
    assert section.topics[0].cleanup_policy == "compact,delete"
    assert section.topics[1].remote_storage_enable is True
    assert section_from_configs({"x": NOT_AUTHORIZED}, T0, ["x"]) is None
    incomplete = described()
    del incomplete["segment.ms"]
    assert retention_entry("t", incomplete) is None


@given(
    retention_ms=st.integers(-1, 2**40),
    retention_bytes=st.integers(-1, 2**40),
    segment_bytes=st.integers(1, 2**31 - 1),
    local_ms=st.integers(-2, 2**40),
    local_bytes=st.integers(-2, 2**40),
    tiered=st.booleans(),
    policy=st.sampled_from(["delete", "compact", "compact,delete", "delete,compact"]),
)
def test_a_section_tells_retention_what_describe_configs_told_it(
    *,
    retention_ms: int,
    retention_bytes: int,
    segment_bytes: int,
    local_ms: int,
    local_bytes: int,
    tiered: bool,
    policy: str,
) -> None:
    answer = described(
        cleanup_policy=policy,
        retention_ms=str(retention_ms),
        retention_bytes=str(retention_bytes),
        segment_bytes=str(segment_bytes),
        local_retention_ms=str(local_ms),
        local_retention_bytes=str(local_bytes),
        remote_storage_enable=str(tiered).lower(),
    )
    section = section_from_configs({"t": answer}, T0, ["t"])
    assert section is not None
    wire = TopicConfigsSection.model_validate_json(section.model_dump_json(by_alias=True))
    assert retention_config(configs_from_section(wire)["t"]) == retention_config(answer)


def many_configs(count: int) -> TopicConfigsSection:
    name = "t" * 240
    answer = {f"{index:05d}{name}": described() for index in range(count)}
    section = section_from_configs(answer, T0, list(answer))
    assert section is not None
    return section


def test_a_document_keeps_the_largest_topics_configs_that_fit_the_bound() -> None:
    document = largest_legal_document()
    section = many_configs(2000)
    fitted = fit_document(document, section)
    encoded = fitted.to_json_bytes()
    assert len(encoded) <= MAX_USAGE_DOCUMENT_BYTES
    assert fitted.topic_configs is not None
    kept = fitted.topic_configs.topics
    assert 0 < len(kept) < 2000
    assert kept == section.topics[: len(kept)]  # the largest first, none skipped
    larger = fitted.model_copy(
        update={
            "topic_configs": section.model_copy(update={"topics": section.topics[: len(kept) + 1]})
        }
    )
    assert len(larger.to_json_bytes()) > MAX_USAGE_DOCUMENT_BYTES  # as many as fit
    assert decode_usage(encoded, snapshot_key(MAX_BROKER_ID)) == fitted


def test_a_small_document_carries_the_whole_section_and_none_removes_it() -> None:
    small = TopicUsageDocument(
        schema_version=1, broker_id=1, surveyed_at=T0, survey_seconds=0.1, volumes=[]
    )
    section = many_configs(3)
    assert fit_document(small, section).topic_configs == section
    assert fit_document(fit_document(small, section), None).topic_configs is None


def test_a_usage_document_over_the_bound_is_refused() -> None:
    document = largest_legal_document()
    section = many_configs(2000)
    oversized = document.model_copy(update={"topic_configs": section}).to_json_bytes()
    assert len(oversized) > MAX_USAGE_DOCUMENT_BYTES
    refused = decode_usage(oversized, snapshot_key(MAX_BROKER_ID))
    assert isinstance(refused, Rejection)
    assert refused.reason is RejectionReason.TOO_LARGE
