"""What one message on the snapshot topic means for the cluster state (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.decode import Rejection, RejectionReason, decode_snapshot
from schemas.snapshot import MAX_BROKER_ID, VolumeSnapshot


@dataclass(frozen=True, slots=True)
class Retirement:
    """A tombstone: the broker was decommissioned and its last snapshot no longer counts."""

    broker_id: int


TopicEvent = VolumeSnapshot | Retirement | Rejection


def interpret_message(key: bytes | None, value: bytes | None) -> TopicEvent:
    """A snapshot, a retirement (null value), or why the message cannot be used."""
    if value is None:
        if key is not None and key.isdigit() and 0 < len(key) <= 10 and int(key) <= MAX_BROKER_ID:
            return Retirement(int(key))
        return Rejection(RejectionReason.INVALID_KEY, f"tombstone with key {key!r:.40}")
    if key is None:
        # Compaction keys by broker id: a keyless message could never be replaced or retired.
        return Rejection(RejectionReason.INVALID_KEY, "message has no key", None)
    return decode_snapshot(value, key)
