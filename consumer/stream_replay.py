"""Replaying snapshot messages, in stream order, into a cluster state. Pure: lines in, state out."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from consumer.cluster_state import ClusterState
from schemas.decode import Rejection, decode_snapshot
from schemas.snapshot import VolumeSnapshot


@dataclass(frozen=True, slots=True)
class RejectedLine:
    line_number: int
    rejection: Rejection


@dataclass(slots=True)
class ReplayResult:
    state: ClusterState
    rejected: list[RejectedLine] = field(default_factory=list)
    brokers_seen: set[int] = field(default_factory=set)
    """Every broker a line named, valid or not: the default set of brokers to account for."""
    accepted: int = 0
    superseded: int = 0
    """Valid snapshots ignored because the broker already had a newer one."""


def replay_snapshot_lines(lines: Iterable[bytes], state: ClusterState) -> ReplayResult:
    """Decode each non-blank line as a snapshot value and apply it; bad lines are collected."""
    result = ReplayResult(state=state)
    for line_number, raw_line in enumerate(lines, start=1):
        line = raw_line.strip()
        if not line:
            continue
        decoded = decode_snapshot(line)
        if isinstance(decoded, VolumeSnapshot):
            result.brokers_seen.add(decoded.broker_id)
            if state.apply_snapshot(decoded):
                result.accepted += 1
            else:
                result.superseded += 1
        else:
            result.rejected.append(RejectedLine(line_number, decoded))
            if decoded.broker_id is not None:
                result.brokers_seen.add(decoded.broker_id)
    return result
