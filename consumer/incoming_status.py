"""``volume-quota status --incoming``: moves in flight per volume, against its limits (pure).

For every (broker, volume) that moves will write to (``consumer.incoming_bytes``): the bytes
still to come and the moves they come from, and the volume's free space once they have landed
judged against the volume's soft and hard thresholds (``consumer.limits``): would the move alone
take the volume into THROTTLE or PAUSE? A broker's moves whose volume is not known yet (the
replica is not created and the broker has several volumes) are shown per broker, judged against
the volume of Kafka's likely log dir when that is known.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import Field

from consumer.incoming_bytes import (
    IncomingMove,
    KnownVolume,
    incoming_per_volume,
    volume_of_log_dir,
)
from consumer.limits import judge_free_space
from consumer.reasons import human_bytes
from schemas.decision import QuotaState
from schemas.wire_types import WireModel


class LimitRow(Protocol):
    """What a row of ``consumer.status_report`` says of a volume and its limits."""

    @property
    def broker_id(self) -> int: ...
    @property
    def volume_name(self) -> str: ...
    @property
    def path(self) -> str | None: ...
    @property
    def capacity_bytes(self) -> int: ...
    @property
    def free_bytes(self) -> int: ...
    @property
    def soft_threshold_bytes(self) -> float: ...
    @property
    def hard_threshold_bytes(self) -> float: ...
    @property
    def state(self) -> QuotaState: ...


class IncomingMoveStatus(WireModel):
    kind: str = Field(description="reassignment or log-dir move")
    topic: str
    partition: int
    bytes: int = Field(description="Bytes the move still has to write on this broker.")
    log_dir: str | None = Field(None, alias="logDir")
    likely_log_dir: str | None = Field(
        None,
        alias="likelyLogDir",
        description="Kafka's default log dir (fewest partitions) when the replica does not "
        "exist yet.",
    )
    source_broker: int | None = Field(None, alias="sourceBroker")
    source_log_dir: str | None = Field(None, alias="sourceLogDir")
    source: str = Field(description="What the bytes come from, for people.")


class IncomingVolumeStatus(WireModel):
    broker_id: int = Field(alias="brokerId")
    volume_name: str | None = Field(
        None, alias="volumeName", description="Absent when the volume is not known yet."
    )
    judged_volume_name: str | None = Field(
        None,
        alias="judgedVolumeName",
        description="The volume the limits were judged on: volumeName, or the likely volume.",
    )
    incoming_bytes: int = Field(alias="incomingBytes")
    moves: list[IncomingMoveStatus]
    free_bytes: int | None = Field(None, alias="freeBytes")
    free_after_bytes: int | None = Field(
        None, alias="freeAfterBytes", description="Free bytes once every move here has landed."
    )
    used_after_bytes: int | None = Field(
        None, alias="usedAfterBytes", description="Used bytes plus incoming bytes."
    )
    soft_threshold_bytes: float | None = Field(None, alias="softThresholdBytes")
    hard_threshold_bytes: float | None = Field(None, alias="hardThresholdBytes")
    state_now: QuotaState | None = Field(None, alias="stateNow")
    state_after: QuotaState | None = Field(None, alias="stateAfter")


def _move_status(move: IncomingMove) -> IncomingMoveStatus:
    return IncomingMoveStatus(
        kind=move.kind.value,
        topic=move.topic,
        partition=move.partition,
        bytes=move.bytes,
        log_dir=move.log_dir,
        likely_log_dir=move.likely_log_dir,
        source_broker=move.source_broker,
        source_log_dir=move.source_log_dir,
        source=move.source,
    )


def incoming_status(
    moves: Sequence[IncomingMove], rows: Sequence[LimitRow]
) -> list[IncomingVolumeStatus]:
    """One entry per (broker, volume) with bytes on their way in, worst outcome first; moves
    that write nothing more (already caught up) are left out."""
    volumes = [KnownVolume(row.broker_id, row.volume_name, row.path) for row in rows]
    by_name = {(row.broker_id, row.volume_name): row for row in rows}
    pending = [move for move in moves if move.bytes > 0]
    entries = []
    for (broker, volume), grouped in incoming_per_volume(pending, volumes).items():
        judged = volume
        if judged is None:
            likely = {move.likely_log_dir for move in grouped if move.likely_log_dir is not None}
            if len(likely) == 1:
                judged = volume_of_log_dir(broker, likely.pop(), volumes)
        total = sum(move.bytes for move in grouped)
        ordered = sorted(grouped, key=lambda move: (-move.bytes, move.topic, move.partition))
        entry = IncomingVolumeStatus(
            broker_id=broker,
            volume_name=volume,
            judged_volume_name=judged,
            incoming_bytes=total,
            moves=[_move_status(move) for move in ordered],
        )
        row = by_name.get((broker, judged)) if judged is not None else None
        if row is not None:
            free_after = row.free_bytes - total
            state_after, _ = judge_free_space(
                free_after, row.soft_threshold_bytes, row.hard_threshold_bytes
            )
            entry = entry.model_copy(
                update={
                    "free_bytes": row.free_bytes,
                    "free_after_bytes": free_after,
                    "used_after_bytes": row.capacity_bytes - free_after,
                    "soft_threshold_bytes": row.soft_threshold_bytes,
                    "hard_threshold_bytes": row.hard_threshold_bytes,
                    "state_now": row.state,
                    "state_after": state_after,
                }
            )
        entries.append(entry)
    order = {QuotaState.PAUSE: 0, QuotaState.THROTTLE: 1, QuotaState.OPEN: 2, None: 3}
    entries.sort(key=lambda entry: (order[entry.state_after], -entry.incoming_bytes))
    return entries


def _outcome(entry: IncomingVolumeStatus) -> str:
    if entry.state_after is None or entry.free_after_bytes is None:
        return "limits not known (no snapshot of this volume)"
    free_after = entry.free_after_bytes
    assert entry.soft_threshold_bytes is not None
    assert entry.hard_threshold_bytes is not None
    assert entry.used_after_bytes is not None
    text = (
        f"used + incoming: {human_bytes(max(entry.used_after_bytes, 0))}, free after: "
        f"{'-' if free_after < 0 else ''}{human_bytes(abs(free_after))} "
        f"(soft at {human_bytes(max(entry.soft_threshold_bytes, 0))}, "
        f"hard at {human_bytes(max(entry.hard_threshold_bytes, 0))})"
    )
    after = entry.state_after
    if after is entry.state_now:
        return f"{text}: stays {after.value}"
    if after is QuotaState.PAUSE:
        return f"{text}: WOULD CROSS THE HARD LIMIT when it lands ({after.value})"
    if after is QuotaState.THROTTLE:
        return f"{text}: WOULD CROSS THE SOFT LIMIT when it lands ({after.value})"
    return f"{text}: {after.value}"


def render_incoming(entries: Sequence[IncomingVolumeStatus]) -> str:
    """A few lines per volume with bytes on their way in; one line when there are none."""
    if not entries:
        return "incoming: nothing (no reassignment or log-dir move in flight)"
    parts = ["incoming (reassignments and log-dir moves in flight):"]
    for entry in entries:
        where = f"broker {entry.broker_id} volume {entry.volume_name}"
        if entry.volume_name is None:
            where = f"broker {entry.broker_id} (volume not chosen yet"
            if entry.judged_volume_name is not None:
                where += f", likely {entry.judged_volume_name}"
            where += ")"
        sources = "; ".join(move.source for move in entry.moves[:3])
        if len(entry.moves) > 3:
            sources += f"; and {len(entry.moves) - 3} more"
        parts.append(
            f"{where}: incoming: {entry.incoming_bytes} bytes "
            f"({human_bytes(entry.incoming_bytes)}; {sources})"
        )
        parts.append(f"  {_outcome(entry)}")
    return "\n".join(parts)
