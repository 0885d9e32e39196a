"""Naming, in a decision's reasons, the topics growing fastest on each volume past a limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from consumer.topic_growth import (
    MAX_REASON_TOPICS,
    BrokerTopics,
    summarize_usage,
    with_top_topics,
)
from schemas.decision import DecisionReason, QuotaDecision, QuotaState, ReasonKind
from schemas.usage import (
    Growth,
    OtherTopicsUsage,
    TopicUsage,
    TopicUsageDocument,
    VolumeTopics,
)

GIB = 1024**3
MIB = 1024**2
NOW = datetime(2026, 11, 26, 18, 0, tzinfo=UTC)


def topic(name: str, size: int, grew: int | None, seconds: float = 900.0) -> TopicUsage:
    return TopicUsage(
        topic=name,
        bytes=size,
        partitions=3,
        active_segment_bytes=0,
        transient_bytes=0,
        growth_15m=None if grew is None else Growth(bytes=grew, seconds=seconds),
    )


def document(
    broker_id: int, topics: list[TopicUsage], *, volume: str = "/data", at: datetime = NOW
) -> TopicUsageDocument:
    return TopicUsageDocument(
        schema_version=1,
        broker_id=broker_id,
        surveyed_at=at,
        survey_seconds=0.5,
        volumes=[
            VolumeTopics(
                volume_name=volume,
                total_bytes=sum(t.bytes for t in topics),
                topics=topics,
                other=OtherTopicsUsage(
                    topics=0, bytes=0, partitions=0, active_segment_bytes=0, transient_bytes=0
                ),
                unattributed_bytes=0,
            )
        ],
    )


def limit(broker_id: int, state: QuotaState, volume: str = "/data") -> DecisionReason:
    return DecisionReason(
        kind=ReasonKind.LIMIT,
        broker_id=broker_id,
        state=state,
        throttle_factor=0.5 if state is QuotaState.THROTTLE else 0.0,
        volume_name=volume,
        detail=f"broker {broker_id} volume {volume}: 1.0 GiB free of 10.0 GiB",
    )


def decision(*reasons: DecisionReason) -> QuotaDecision:
    return QuotaDecision(
        decided_at=NOW,
        valid_until=NOW + timedelta(seconds=30),
        state=QuotaState.THROTTLE,
        throttle_factor=0.5,
        caused_by_missing_data=False,
        reasons=list(reasons),
    )


def usage(*documents: TopicUsageDocument) -> dict[int, BrokerTopics]:
    return {doc.broker_id: summarize_usage(doc) for doc in documents}


FILLING = document(
    2,
    [
        topic("logs", 9 * GIB, 10 * MIB),
        topic("orders", 4 * GIB, int(1.2 * GIB)),
        topic("clicks", 2 * GIB, 300 * MIB),
        topic("audit", GIB, 200 * MIB),
        topic("shrinking", GIB, -500 * MIB),
        topic("new", MIB, None),
    ],
)


def test_a_throttled_volume_names_its_three_fastest_growing_topics() -> None:
    joined = with_top_topics(decision(limit(2, QuotaState.THROTTLE)), usage(FILLING), NOW, 180)
    reason = joined.reasons[0]
    assert reason.top_topics is not None
    assert [t.topic for t in reason.top_topics] == ["orders", "clicks", "audit"]
    assert reason.top_topics[0].growth_bytes == int(1.2 * GIB)
    assert reason.top_topics[0].growth_seconds == 900.0
    assert reason.top_topics[0].bytes == 4 * GIB
    assert reason.detail.endswith(
        ": top growth orders +1.2 GiB/15m (4.0 GiB), clicks +300.0 MiB/15m (2.0 GiB), "
        "audit +200.0 MiB/15m (1.0 GiB)"
    )
    assert len(reason.top_topics) == MAX_REASON_TOPICS == 3


def test_growth_is_ranked_by_rate_and_a_shorter_span_is_stated() -> None:
    young = document(2, [topic("a", GIB, 100 * MIB, 900), topic("b", GIB, 20 * MIB, 60)])
    reason = with_top_topics(decision(limit(2, QuotaState.PAUSE)), usage(young), NOW, 180)
    detail = reason.reasons[0].detail
    assert "top growth b +20.0 MiB/1m (1.0 GiB), a +100.0 MiB/15m (1.0 GiB)" in detail


def test_nothing_is_added_without_a_fresh_document_of_that_volume() -> None:
    base = decision(limit(2, QuotaState.THROTTLE))
    stale = document(2, FILLING.volumes[0].topics, at=NOW - timedelta(seconds=181))
    other_volume = document(2, FILLING.volumes[0].topics, volume="/other")
    other_broker = document(1, FILLING.volumes[0].topics)
    for documents in ({}, usage(stale), usage(other_volume), usage(other_broker)):
        assert with_top_topics(base, documents, NOW, 180) == base


def test_no_topic_growing_adds_nothing() -> None:
    flat = document(2, [topic("a", GIB, 0), topic("b", GIB, -MIB), topic("c", GIB, None)])
    base = decision(limit(2, QuotaState.THROTTLE))
    assert with_top_topics(base, usage(flat), NOW, 180) == base


def test_open_volumes_and_other_reasons_are_left_alone() -> None:
    unknown = DecisionReason(
        kind=ReasonKind.STALE,
        broker_id=2,
        state=QuotaState.PAUSE,
        throttle_factor=0.0,
        detail="live broker 2: stale",
    )
    base = decision(limit(2, QuotaState.OPEN), unknown)
    assert with_top_topics(base, usage(FILLING), NOW, 180) == base


def test_a_summary_keeps_only_the_few_topics_a_reason_can_name() -> None:
    many = document(2, [topic(f"t{i}", GIB, (i + 1) * MIB) for i in range(40)])
    summary = summarize_usage(many)
    assert [t.topic for t in summary.volumes["/data"]] == ["t39", "t38", "t37"]
    assert summary.surveyed_at == NOW


def test_the_joined_decision_stays_in_its_json_form() -> None:
    joined = with_top_topics(decision(limit(2, QuotaState.THROTTLE)), usage(FILLING), NOW, 180)
    again = QuotaDecision.model_validate_json(joined.to_json_bytes())
    assert again == joined
    assert b'"topTopics":[{"topic":"orders"' in joined.to_json_bytes()
