"""``volume-quota status``: every broker's volumes and the cluster decision, as rows (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import Field

from consumer.cluster_state import ClusterState
from consumer.incoming_status import IncomingVolumeStatus, render_incoming
from consumer.limits import judge_volume
from consumer.overrides import RefusedOverride
from consumer.reasons import human_bytes
from consumer.topic_status import VolumeTopicsStatus, render_volume_topics
from schemas.decision import QuotaDecision, QuotaState, ReasonKind
from schemas.wire_types import WireModel


class VolumeStatus(WireModel):
    broker_id: int = Field(alias="brokerId")
    broker_live: bool = Field(alias="brokerLive")
    volume_name: str = Field(alias="volumeName")
    path: str | None = None
    capacity_bytes: int = Field(alias="capacityBytes")
    free_bytes: int = Field(alias="freeBytes")
    free_percent: float = Field(alias="freePercent")
    soft_threshold_bytes: float = Field(alias="softThresholdBytes")
    hard_threshold_bytes: float = Field(alias="hardThresholdBytes")
    state: QuotaState
    throttle_factor: float = Field(alias="throttleFactor")
    snapshot_age_seconds: float = Field(alias="snapshotAgeSeconds")


class RefusedOverrideStatus(WireModel):
    """An override record that never took effect (see ``consumer.overrides``)."""

    reason: str
    detail: str
    arrived_at: datetime = Field(alias="arrivedAt")
    state: str | None = None
    signer: str | None = None


class ClusterStatus(WireModel):
    decision: QuotaDecision
    volumes: list[VolumeStatus]
    refused_overrides: list[RefusedOverrideStatus] = Field(
        default_factory=list, alias="refusedOverrides"
    )
    topics: list[VolumeTopicsStatus] = Field(
        default_factory=list,
        description="The top topics of each volume shown (see consumer.topic_status).",
    )
    usage_refused: dict[str, int] = Field(
        default_factory=dict,
        alias="usageRefused",
        description="Usage records not used, by reason (signature or decoding).",
    )
    usage_problem: str | None = Field(
        None, alias="usageProblem", description="Why topic usage or configs could not be read."
    )
    incoming: list[IncomingVolumeStatus] | None = Field(
        None,
        description="With --incoming: bytes that moves in flight will still write, per volume "
        "(see consumer.incoming_status).",
    )
    incoming_problem: str | None = Field(
        None, alias="incomingProblem", description="Why moves in flight could not be read."
    )


def cluster_status(
    state: ClusterState,
    decision: QuotaDecision,
    now: datetime,
    refused_overrides: Sequence[RefusedOverride] = (),
) -> ClusterStatus:
    """One row per volume of every broker with a snapshot, worst first; and the override
    records refused lately."""
    rows = []
    moment = now.timestamp()
    for assessment in state.assessments():
        snapshot = assessment.snapshot
        broker_live = snapshot.broker_id in state.live_brokers
        for volume in snapshot.volumes:
            verdict = judge_volume(volume, snapshot.soft_limit, snapshot.hard_limit)
            rows.append(
                VolumeStatus(
                    broker_id=snapshot.broker_id,
                    broker_live=broker_live,
                    volume_name=volume.volume_name,
                    path=volume.path,
                    capacity_bytes=volume.capacity,
                    free_bytes=volume.free,
                    free_percent=100.0 * volume.free / volume.capacity if volume.capacity else 0.0,
                    soft_threshold_bytes=verdict.soft_threshold,
                    hard_threshold_bytes=verdict.hard_threshold,
                    state=verdict.state,
                    throttle_factor=verdict.throttle_factor,
                    snapshot_age_seconds=moment - assessment.snapshot_timestamp,
                )
            )
    rows.sort(key=lambda row: (row.throttle_factor, row.broker_id, row.volume_name))
    refused = [
        RefusedOverrideStatus(
            reason=refusal.reason.value,
            detail=refusal.detail,
            arrived_at=refusal.arrived_at,
            state=refusal.state,
            signer=refusal.signer,
        )
        for refusal in refused_overrides
    ]
    return ClusterStatus(decision=decision, volumes=rows, refused_overrides=refused)


_COLUMNS = ("BROKER", "VOLUME", "PATH", "FREE", "FREE %", "SOFT AT", "HARD AT", "STATE", "AGE")


def render_status_table(status: ClusterStatus) -> str:
    """A fixed-width table for people; ``--json`` gives scripts the same data."""
    lines: list[list[str]] = [list(_COLUMNS)]
    for row in status.volumes:
        broker = f"{row.broker_id}" + ("" if row.broker_live else " (down)")
        state = row.state.value
        if row.state is QuotaState.THROTTLE:
            state += f" {row.throttle_factor:.2f}"
        lines.append(
            [
                broker,
                row.volume_name,
                row.path or "-",
                f"{human_bytes(row.free_bytes)} / {human_bytes(row.capacity_bytes)}",
                f"{row.free_percent:.1f}",
                human_bytes(max(row.soft_threshold_bytes, 0)),
                human_bytes(max(row.hard_threshold_bytes, 0)),
                state,
                _age(row.snapshot_age_seconds),
            ]
        )
    widths = [max(len(line[column]) for line in lines) for column in range(len(_COLUMNS))]
    table = "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )
    decision = status.decision
    summary = [
        f"cluster decision: {decision.state.value}, throttle factor "
        f"{decision.throttle_factor:.3f}"
        + (" (caused by missing data)" if decision.caused_by_missing_data else "")
        + (" (OPERATOR OVERRIDE)" if _overridden(decision) else ""),
    ]
    if decision.unknown_brokers:
        summary.append(f"unknown brokers: {', '.join(map(str, decision.unknown_brokers))}")
    summary.extend(f"  - {reason.detail}" for reason in decision.reasons[:5])
    if status.refused_overrides:
        summary.append("refused override records (never took effect):")
        summary.extend(_refusal_line(refusal) for refusal in status.refused_overrides)
    text = table + "\n\n" + "\n".join(summary) + "\n"
    if status.topics:
        text += "\n" + render_volume_topics(status.topics) + "\n"
    if status.usage_refused:
        refused = ", ".join(
            f"{reason} {count}" for reason, count in sorted(status.usage_refused.items())
        )
        text += f"\nusage records refused: {refused}\n"
    if status.usage_problem:
        text += f"\ntopic usage: {status.usage_problem}\n"
    if status.incoming is not None and status.incoming_problem is None:
        text += "\n" + render_incoming(status.incoming) + "\n"
    if status.incoming_problem:
        text += f"\nincoming: not known: {status.incoming_problem}\n"
    return text


def _refusal_line(refusal: RefusedOverrideStatus) -> str:
    attempt = f"forcing {refusal.state}" if refusal.state else "clearing (or unreadable)"
    by = f", signed by {refusal.signer}" if refusal.signer else ""
    return f"  - {refusal.arrived_at.isoformat()} {attempt}{by}: {refusal.reason}: {refusal.detail}"


def _overridden(decision: QuotaDecision) -> bool:
    return bool(decision.reasons) and decision.reasons[0].kind is ReasonKind.OVERRIDE


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def status_as_json(status: ClusterStatus) -> dict[str, Any]:
    return status.model_dump(mode="json", by_alias=True, exclude_none=True)
