"""The decision in force, shared between the thread that computes it and the ones that read it.

Reading is one attribute load: a reference assignment is atomic in CPython, so readers never see
a half-built decision and never take a lock. Writers replace the whole (immutable) decision.
"""

from __future__ import annotations

from schemas.decision import QuotaDecision


class CurrentDecision:
    __slots__ = ("decision",)

    def __init__(self, initial: QuotaDecision) -> None:
        self.decision = initial

    def replace(self, decision: QuotaDecision) -> None:
        self.decision = decision


def material(decision: QuotaDecision) -> tuple[object, ...]:
    """What a reader acts on; a change here is written at once."""
    return (
        decision.state,
        round(decision.throttle_factor, 3),
        tuple(decision.unknown_brokers),
        decision.caused_by_missing_data,
    )
