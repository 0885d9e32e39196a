"""The cluster decision: what every broker should do to producers, and why.

The consumer computes it; the sidecar writes it (atomically) to a file that the broker's quota
callback reads; ``volume-quota evaluate`` prints it. Its JSON Schema,
``schemas/quota-decision.schema.json``, is generated from these models.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from schemas.wire_types import Instant, WireModel

DECISION_SCHEMA_VERSION = 1


class QuotaState(StrEnum):
    """Ordered by severity: OPEN < THROTTLE < PAUSE."""

    OPEN = "OPEN"
    THROTTLE = "THROTTLE"
    PAUSE = "PAUSE"


class OnMissing(StrEnum):
    """What to do when a live broker's state is unknown."""

    PAUSE = "PAUSE"
    """Fail safe: stop producers until every live broker reports again."""
    OPEN = "OPEN"
    """Fail open: ignore brokers that do not report."""


class ReasonKind(StrEnum):
    LIMIT = "limit"
    """A volume is past its soft or hard limit."""
    MISSING = "missing"
    """A live broker has no valid snapshot at all."""
    STALE = "stale"
    """A live broker's newest snapshot is older than the freshness limit."""
    FUTURE = "future"
    """A live broker's newest snapshot is dated beyond the allowed clock skew."""
    NOT_READY = "not_ready"
    """The consumer has not yet read the topic to its end or learned the live brokers."""
    OVERRIDE = "override"
    """An operator forced the state (``volume-quota override``) until a time."""


Factor = Annotated[float, Field(ge=0, le=1)]

MAX_REASON_TOPICS = 3
"""The most topics one reason names (``topTopics``): what keeps a decision with topics bounded."""


class ReasonTopic(WireModel):
    """A topic growing on the volume of a reason, as its broker's sidecar last measured it."""

    topic: str = Field(max_length=249, description="The topic name.")
    growth_bytes: int = Field(
        alias="growthBytes", description="How much the topic grew on the volume over the span."
    )
    growth_seconds: float = Field(
        alias="growthSeconds",
        ge=0,
        description="The span of the growth: 900 (15 min), or less when the sidecar has not "
        "surveyed that long.",
    )
    bytes: int = Field(ge=0, description="The topic's bytes on the volume.")


class DecisionReason(WireModel):
    """One thing that drove the decision: a volume past a limit, or a broker we cannot see."""

    kind: ReasonKind
    broker_id: int | None = Field(
        default=None, alias="brokerId", description="Absent for a reason about the consumer itself."
    )
    state: QuotaState
    throttle_factor: Factor = Field(alias="throttleFactor")
    volume_name: str | None = Field(default=None, alias="volumeName")
    free_bytes: int | None = Field(default=None, alias="freeBytes")
    capacity_bytes: int | None = Field(default=None, alias="capacityBytes")
    soft_threshold_bytes: float | None = Field(
        default=None,
        alias="softThresholdBytes",
        description="Free bytes at which throttling starts.",
    )
    hard_threshold_bytes: float | None = Field(
        default=None, alias="hardThresholdBytes", description="Free bytes at which producers pause."
    )
    broker_live: bool | None = Field(default=None, alias="brokerLive")
    snapshot_at: Instant | None = Field(default=None, alias="snapshotAt")
    top_topics: list[ReasonTopic] | None = Field(
        default=None,
        alias="topTopics",
        max_length=MAX_REASON_TOPICS,
        description="For a volume in THROTTLE or PAUSE: the topics growing fastest on it over "
        "the last 15 minutes, fastest first (from the usage topic; absent when its broker's "
        "usage document is missing or stale, or no topic grew).",
    )
    detail: str


class QuotaDecision(WireModel):
    """The decision for the whole cluster at ``decidedAt``; void after ``validUntil``."""

    schema_version: int = Field(default=DECISION_SCHEMA_VERSION, alias="schemaVersion")
    decided_at: Instant = Field(alias="decidedAt")
    valid_until: Instant = Field(
        alias="validUntil",
        description="After this instant a reader must treat the decision as missing.",
    )
    state: QuotaState
    throttle_factor: Factor = Field(
        alias="throttleFactor", description="Multiplier on the base produce quota: 1 OPEN, 0 PAUSE."
    )
    caused_by_missing_data: bool = Field(
        alias="causedByMissingData",
        description="True when the on-missing action, not a measured volume, set the outcome.",
    )
    unknown_brokers: list[int] = Field(
        default_factory=list,
        alias="unknownBrokers",
        description="Live brokers without a fresh valid snapshot.",
    )
    reasons: list[DecisionReason] = Field(default_factory=list)
    reasons_omitted: int = Field(
        default=0, alias="reasonsOmitted", description="Reasons left out to keep the file small."
    )

    def to_json_bytes(self) -> bytes:
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()
