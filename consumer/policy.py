"""The knobs of the cluster decision, validated once and then treated as plain values."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.decision import OnMissing

DEFAULT_STALE_AFTER_SECONDS = 30.0
DEFAULT_MAX_CLOCK_SKEW_SECONDS = 5.0
DEFAULT_MAX_REASONS = 20


@dataclass(frozen=True, slots=True)
class DecisionPolicy:
    """How fresh a snapshot must be, and what to do about a live broker we cannot see."""

    stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS
    """A snapshot older than this (strictly) no longer vouches for its broker."""
    max_clock_skew_seconds: float = DEFAULT_MAX_CLOCK_SKEW_SECONDS
    """A snapshot dated further than this into the future is not trusted either."""
    on_missing: OnMissing = OnMissing.PAUSE
    """The action when any live broker's state is unknown; PAUSE is the fail-safe."""
    valid_for_seconds: float | None = None
    """How long a decision stays valid for its reader; defaults to ``stale_after_seconds``."""
    max_reasons: int = DEFAULT_MAX_REASONS

    def __post_init__(self) -> None:
        if not self.stale_after_seconds > 0:
            raise ValueError("stale-after must be a positive number of seconds")
        if not self.max_clock_skew_seconds >= 0:
            raise ValueError("max clock skew must be zero or more seconds")
        if self.valid_for_seconds is not None and not self.valid_for_seconds > 0:
            raise ValueError("valid-for must be a positive number of seconds")
        if self.max_reasons < 1:
            raise ValueError("max reasons must be at least 1")

    @property
    def decision_lifetime_seconds(self) -> float:
        if self.valid_for_seconds is None:
            return self.stale_after_seconds
        return self.valid_for_seconds
