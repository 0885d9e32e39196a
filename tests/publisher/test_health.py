from __future__ import annotations

from publisher.health import (
    HealthInputs,
    HealthLimits,
    assess_liveness,
    assess_readiness,
)

LIMITS = HealthLimits(liveness_max_age_seconds=30.0, readiness_max_age_seconds=30.0)
HEALTHY = HealthInputs(
    started_at=0.0,
    last_sample_at=99.0,
    last_delivery_at=95.0,
    kafka_connected=True,
    topic_ready=True,
)


def test_healthy_publisher_is_live_and_ready() -> None:
    assert assess_liveness(HEALTHY, 100.0, LIMITS).healthy
    ready = assess_readiness(HEALTHY, 100.0, LIMITS)
    assert ready.healthy
    assert ready.problems == ()


def test_liveness_has_a_grace_period_after_start() -> None:
    starting = HealthInputs(started_at=0.0)
    assert assess_liveness(starting, 30.0, LIMITS).healthy
    verdict = assess_liveness(starting, 30.5, LIMITS)
    assert not verdict.healthy
    assert "since start" in verdict.problems[0]


def test_a_stuck_loop_is_not_live() -> None:
    verdict = assess_liveness(HEALTHY, 129.5, LIMITS)
    assert not verdict.healthy
    assert verdict.problems == ("last volume sample was 30.5s ago",)


def test_not_ready_while_kafka_is_unreachable() -> None:
    inputs = HealthInputs(
        started_at=0.0, last_sample_at=99.0, last_delivery_at=95.0, topic_ready=True
    )
    verdict = assess_readiness(inputs, 100.0, LIMITS)
    assert not verdict.healthy
    assert verdict.problems == ("Kafka is not reachable (the last attempt to reach it failed)",)


def test_not_ready_before_the_first_delivery_or_when_it_is_old() -> None:
    never = HealthInputs(started_at=0.0, kafka_connected=True, topic_ready=True)
    assert assess_readiness(never, 1.0, LIMITS).problems == ("no snapshot delivered yet",)
    stale = assess_readiness(HEALTHY, 125.5, LIMITS)
    assert not stale.healthy
    assert stale.problems == ("last snapshot delivered 30.5s ago (limit 30s)",)


def test_topic_problem_is_reported() -> None:
    inputs = HealthInputs(
        started_at=0.0,
        last_delivery_at=95.0,
        kafka_connected=True,
        topic_problem="not allowed to create topic t",
    )
    verdict = assess_readiness(inputs, 100.0, LIMITS)
    assert verdict.problems == ("not allowed to create topic t",)
