"""What one message on the snapshot topic means for the cluster state (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.decode import Rejection, RejectionReason, decode_snapshot
from schemas.snapshot import VolumeSnapshot, broker_id_from_key


@dataclass(frozen=True, slots=True)
class Retirement:
    """A tombstone: the broker was decommissioned and its last snapshot no longer counts."""

    broker_id: int


TopicEvent = VolumeSnapshot | Retirement | Rejection


def interpret_message(key: bytes | None, value: bytes | None) -> TopicEvent:
    """A snapshot, a retirement (null value), or why the message cannot be used."""
    if value is None:
        broker_id = broker_id_from_key(key)
        if broker_id is not None:
            return Retirement(broker_id)
        return Rejection(RejectionReason.INVALID_KEY, f"tombstone with key {key!r:.40}")
    if key is None:
        # Compaction keys by broker id: a keyless message could never be replaced or retired.
        return Rejection(RejectionReason.INVALID_KEY, "message has no key", None)
    return decode_snapshot(value, key)
