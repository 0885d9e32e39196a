"""The operator's override: force OPEN or PAUSE across the cluster for a bounded time.

One record, key ``cluster``, on its own compacted topic (``__volume_quota_overrides`` by
default) so that Kafka's ACLs can let operators write it and nobody else; a tombstone clears it
early. Every decider reads it; while it is in force the decision is the override's state and
its first reason says so. It always expires by itself: at most ``MAX_OVERRIDE_SECONDS`` after
it was set.

The record is signed like a snapshot (``schemas.signature``, over the key ``cluster`` and this
value). A reader believes ``setBy`` only as a claim: where signatures are checked it shows the
operator identity that signed instead, and it refuses a record whose ``setAt`` is far from the
record's Kafka timestamp (``consumer.overrides``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Final, Literal

from pydantic import Field, model_validator

from schemas.decision import QuotaState
from schemas.wire_types import Instant, WireModel

OVERRIDE_SCHEMA_VERSION: Final = 1
OVERRIDE_KEY = b"cluster"
DEFAULT_OVERRIDE_TOPIC = "__volume_quota_overrides"
MAX_OVERRIDE_SECONDS = 24 * 3600
"""An override is an emergency measure: a day at most, then the rule applies again."""


class QuotaOverride(WireModel):
    """``state`` for every producer from ``setAt`` until ``expiresAt``, and why."""

    schema_version: Literal[1] = Field(default=OVERRIDE_SCHEMA_VERSION, alias="schemaVersion")
    state: Literal[QuotaState.OPEN, QuotaState.PAUSE]
    reason: Annotated[str, Field(min_length=1, max_length=500)]
    set_by: Annotated[str, Field(min_length=1, max_length=500)] = Field(alias="setBy")
    set_at: Instant = Field(alias="setAt")
    expires_at: Instant = Field(alias="expiresAt")

    @model_validator(mode="after")
    def _bounded(self) -> QuotaOverride:
        lifetime = self.expires_at - self.set_at
        if lifetime <= timedelta(0):
            raise ValueError("expiresAt must be after setAt")
        if lifetime > timedelta(seconds=MAX_OVERRIDE_SECONDS):
            raise ValueError(f"an override lasts at most {MAX_OVERRIDE_SECONDS // 3600} h")
        return self

    def to_json_bytes(self) -> bytes:
        """The record value as written."""
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()
