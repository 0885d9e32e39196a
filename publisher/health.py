"""Liveness and readiness of the publisher, decided from what it last did (no clock here).

- Live (``/healthz``): the sampling loop measured the volumes recently. A loop stuck on a hung
  filesystem or a deadlock is not live, and a restart is the cure.
- Ready (``/readyz``): Kafka is reachable, the topic is verified, and a snapshot was delivered
  within ``readiness_max_age_seconds``. Not ready is not a reason to restart: the publisher keeps
  sampling and retrying; it tells the operator that this broker's volumes are not being seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class HealthInputs:
    """What the publisher knows about itself; times are monotonic seconds."""

    started_at: float
    last_sample_at: float | None = None
    last_delivery_at: float | None = None
    kafka_connected: bool = False
    topic_ready: bool = False
    topic_problem: str | None = None


@dataclass(frozen=True, slots=True)
class HealthLimits:
    liveness_max_age_seconds: float
    """The loop must have sampled within this long (also the grace period after start)."""
    readiness_max_age_seconds: float
    """A snapshot must have been delivered within this long."""


@dataclass(frozen=True, slots=True)
class HealthVerdict:
    healthy: bool
    problems: tuple[str, ...] = field(default_factory=tuple)


def assess_liveness(inputs: HealthInputs, now: float, limits: HealthLimits) -> HealthVerdict:
    reference = inputs.last_sample_at if inputs.last_sample_at is not None else inputs.started_at
    age = now - reference
    if age <= limits.liveness_max_age_seconds:
        return HealthVerdict(True)
    if inputs.last_sample_at is None:
        return HealthVerdict(False, (f"no volume sample in the {age:.1f}s since start",))
    return HealthVerdict(False, (f"last volume sample was {age:.1f}s ago",))


def assess_readiness(inputs: HealthInputs, now: float, limits: HealthLimits) -> HealthVerdict:
    problems: list[str] = []
    if not inputs.kafka_connected:
        problems.append("Kafka is not reachable (the last attempt to reach it failed)")
    if not inputs.topic_ready:
        problems.append(inputs.topic_problem or "the snapshot topic is not verified yet")
    if inputs.last_delivery_at is None:
        problems.append("no snapshot delivered yet")
    else:
        age = now - inputs.last_delivery_at
        if age > limits.readiness_max_age_seconds:
            problems.append(
                f"last snapshot delivered {age:.1f}s ago "
                f"(limit {limits.readiness_max_age_seconds:g}s)"
            )
    return HealthVerdict(not problems, tuple(problems))
