"""Reasons attached to a decision: which broker and volume drove it, and by how much."""

from __future__ import annotations

from datetime import datetime

from consumer.broker_assessment import BrokerAssessment
from consumer.limits import VolumeVerdict
from consumer.policy import DecisionPolicy
from schemas.decision import DecisionReason, OnMissing, QuotaState, ReasonKind

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human_bytes(count: float) -> str:
    """1536 -> '1.5 KiB': for sentences people read, never for the numeric fields."""
    magnitude = float(count)
    for unit in _BINARY_UNITS:
        if abs(magnitude) < 1024 or unit == _BINARY_UNITS[-1]:
            return f"{magnitude:.0f} {unit}" if unit == "B" else f"{magnitude:.1f} {unit}"
        magnitude /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def limit_reason(broker_id: int, verdict: VolumeVerdict, broker_live: bool) -> DecisionReason:
    volume = verdict.volume
    free = volume.capacity - volume.consumed
    if verdict.state is QuotaState.PAUSE:
        how = f"at or below the hard limit of {human_bytes(max(verdict.hard_threshold, 0))} free"
    else:
        how = (
            f"between the soft limit ({human_bytes(verdict.soft_threshold)} free) and the hard "
            f"limit ({human_bytes(max(verdict.hard_threshold, 0))} free): factor "
            f"{verdict.throttle_factor:.3f}"
        )
    presence = "" if broker_live else " (broker not live: its last snapshot still counts)"
    return DecisionReason(
        kind=ReasonKind.LIMIT,
        broker_id=broker_id,
        state=verdict.state,
        throttle_factor=verdict.throttle_factor,
        volume_name=volume.volume_name,
        free_bytes=free,
        capacity_bytes=volume.capacity,
        soft_threshold_bytes=verdict.soft_threshold,
        hard_threshold_bytes=verdict.hard_threshold,
        broker_live=broker_live,
        detail=(
            f"broker {broker_id} volume {volume.volume_name}: {human_bytes(free)} free of "
            f"{human_bytes(volume.capacity)}, {how}{presence}"
        ),
    )


def unknown_reason(
    broker_id: int,
    kind: ReasonKind,
    state: QuotaState,
    assessment: BrokerAssessment | None,
    policy: DecisionPolicy,
    *,
    refused_future_at: datetime | None = None,
) -> DecisionReason:
    """Why ``broker_id`` is unknown; ``refused_future_at`` dates a snapshot refused on arrival
    for being too far ahead (the reason then carries that date)."""
    snapshot_at = None if assessment is None else assessment.snapshot.snapshot_at
    if kind is ReasonKind.FUTURE and refused_future_at is not None:
        snapshot_at = refused_future_at
        detail = (
            f"live broker {broker_id}: its newest snapshot was dated more than "
            f"{policy.max_clock_skew_seconds:g} s ahead of this reader's clock when it arrived"
        )
    elif kind is ReasonKind.MISSING or assessment is None:
        detail = f"live broker {broker_id} has no valid snapshot"
    elif kind is ReasonKind.STALE:
        detail = (
            f"live broker {broker_id}: newest snapshot is older than "
            f"{policy.stale_after_seconds:g} s"
        )
    else:
        detail = (
            f"live broker {broker_id}: newest snapshot is dated more than "
            f"{policy.max_clock_skew_seconds:g} s in the future"
        )
    action = (
        "on-missing PAUSE applies" if state is QuotaState.PAUSE else "ignored (on-missing OPEN)"
    )
    return DecisionReason(
        kind=kind,
        broker_id=broker_id,
        state=state,
        throttle_factor=0.0 if state is QuotaState.PAUSE else 1.0,
        broker_live=True,
        snapshot_at=snapshot_at,
        detail=f"{detail}; {action}",
    )


def not_ready_reason(why: str, on_missing: OnMissing) -> DecisionReason:
    paused = on_missing is OnMissing.PAUSE
    action = "on-missing PAUSE applies" if paused else "ignored (on-missing OPEN)"
    return DecisionReason(
        kind=ReasonKind.NOT_READY,
        state=QuotaState.PAUSE if paused else QuotaState.OPEN,
        throttle_factor=0.0 if paused else 1.0,
        detail=f"{why}; {action}",
    )
