"""What a record of the override topic means, and whether an override is in force (pure)."""

from __future__ import annotations

from datetime import datetime

from pydantic import ValidationError

from schemas.decision import DecisionReason, QuotaState, ReasonKind
from schemas.decode import Rejection, RejectionReason, strict_text_problem
from schemas.override import OVERRIDE_KEY, QuotaOverride

CLEARED = None
"""A tombstone: the override was cleared before it expired."""


def interpret_override(key: bytes | None, value: bytes | None) -> QuotaOverride | Rejection | None:
    """The override a record sets, ``CLEARED`` (None) for a tombstone, or why it is unusable."""
    if key != OVERRIDE_KEY:
        return Rejection(RejectionReason.INVALID_KEY, f"override key {key!r:.40} is not 'cluster'")
    if value is None:
        return CLEARED
    problem = strict_text_problem(value)
    if problem is not None:
        return problem
    try:
        return QuotaOverride.model_validate_json(value)
    except ValidationError as error:
        first = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        return Rejection(RejectionReason.INVALID_FIELD, f"{where}: {first['msg']}"[:200])


def in_force(override: QuotaOverride | None, now: datetime) -> bool:
    return override is not None and override.set_at <= now < override.expires_at


def override_reason(override: QuotaOverride) -> DecisionReason:
    factor = 1.0 if override.state is QuotaState.OPEN else 0.0
    return DecisionReason(
        kind=ReasonKind.OVERRIDE,
        state=override.state,
        throttle_factor=factor,
        detail=(
            f"forced {override.state.value} by {override.set_by} until "
            f"{override.expires_at.isoformat()}: {override.reason}"
        ),
    )
