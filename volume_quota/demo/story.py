"""The scripted demo as a pure state machine: observations in, phase changes and actions out.

OPEN (producers at the base quota) -> FILL (a bulk load writes Kafka records into the
breaching broker's log dir) -> THROTTLE (the decision follows the falling free space) -> PAUSE
(past the hard limit; producers drop to the floor) -> RECOVERY (DeleteRecords frees the space;
OPEN again and the rates come back) -> DONE. Any phase that does not complete in time ends the
story as FAILED, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from schemas.decision import QuotaState
from volume_quota.demo.rates import RATE_WINDOW_S

WARMUP_S = 12.0
"""Producers burst for up to ~10 s (the broker's padded quota window) before a fair rate."""
MIN_PAUSE_S = 15.0
"""PAUSE lasts at least this long, so that the floor is seen, not just reached."""
PAUSED_BELOW = 2.5
"""PAUSE is reached when every producer is under this many times the pause floor."""
RECOVERED_AT = 0.9
"""RECOVERY ends when every producer is back to this fraction of its OPEN rate."""


class Phase(StrEnum):
    OPEN = "OPEN"
    FILL = "FILL"
    THROTTLE = "THROTTLE"
    PAUSE = "PAUSE"
    RECOVERY = "RECOVERY"
    DONE = "DONE"
    FAILED = "FAILED"


class Action(StrEnum):
    START_FILL = "start_fill"
    FREE_SPACE = "free_space"
    FINISH = "finish"


PHASE_TIMEOUTS_S: Mapping[Phase, float] = {
    Phase.OPEN: 90.0,
    Phase.FILL: 90.0,
    Phase.THROTTLE: 120.0,
    Phase.PAUSE: 90.0,
    Phase.RECOVERY: 90.0,
}


@dataclass(frozen=True)
class Observation:
    """What the runner saw at one tick; ``at`` counts seconds from the producers' start."""

    at: float
    decision: QuotaState | None
    factor: float
    rates: Mapping[str, float]
    fill_done: bool = False


@dataclass
class Story:
    """Advance with :meth:`advance`; read phase, timings and the measured rates."""

    pause_rate: float
    phase: Phase = Phase.OPEN
    phase_started: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    base_rates: dict[str, float] = field(default_factory=dict)
    paused_rates: dict[str, float] = field(default_factory=dict)
    recovered_rates: dict[str, float] = field(default_factory=dict)
    lowest_factor: float = 1.0
    failure: str | None = None
    _open_since: float | None = None
    _freed_at: float | None = None

    def advance(self, seen: Observation) -> list[Action]:
        """Move on if the current phase is complete; return what the runner must do now."""
        if self.phase in (Phase.DONE, Phase.FAILED):
            return []
        if seen.decision is QuotaState.THROTTLE:
            self.lowest_factor = min(self.lowest_factor, seen.factor)
        step = {
            Phase.OPEN: self._open,
            Phase.FILL: self._fill,
            Phase.THROTTLE: self._throttle,
            Phase.PAUSE: self._pause,
            Phase.RECOVERY: self._recovery,
        }[self.phase]
        actions = step(seen)
        if not actions and self.phase in PHASE_TIMEOUTS_S:
            actions = self._check_timeout(seen)
        return actions

    @property
    def succeeded(self) -> bool:
        return self.phase is Phase.DONE

    def _enter(self, phase: Phase, at: float) -> None:
        self.timings[self.phase.value] = round(at - self.phase_started, 1)
        self.phase = phase
        self.phase_started = at

    def _open(self, seen: Observation) -> list[Action]:
        """Base rates: measured only after a warm-up and a full window of uninterrupted OPEN."""
        if seen.decision is not QuotaState.OPEN:
            self._open_since = None
            return []
        if self._open_since is None:
            self._open_since = seen.at
        ready = seen.at - self._open_since >= WARMUP_S + RATE_WINDOW_S
        if not ready or not seen.rates or min(seen.rates.values()) <= 0:
            return []
        self.base_rates = dict(seen.rates)
        self._enter(Phase.FILL, seen.at)
        return [Action.START_FILL]

    def _fill(self, seen: Observation) -> list[Action]:
        if seen.decision in (QuotaState.THROTTLE, QuotaState.PAUSE):
            self._enter(Phase.THROTTLE, seen.at)
            return self._throttle(seen)
        return []

    def _throttle(self, seen: Observation) -> list[Action]:
        if seen.decision is QuotaState.PAUSE:
            self._enter(Phase.PAUSE, seen.at)
        return []

    def _pause(self, seen: Observation) -> list[Action]:
        floor = PAUSED_BELOW * self.pause_rate
        long_enough = seen.at - self.phase_started >= MIN_PAUSE_S
        if long_enough and seen.fill_done and all(r <= floor for r in seen.rates.values()):
            self.paused_rates = dict(seen.rates)
            self._enter(Phase.RECOVERY, seen.at)
            self._freed_at = seen.at
            return [Action.FREE_SPACE]
        return []

    def _recovery(self, seen: Observation) -> list[Action]:
        if seen.decision is QuotaState.OPEN and "decision OPEN again" not in self.timings:
            self.timings["decision OPEN again"] = round(seen.at - (self._freed_at or seen.at), 1)
        back = all(
            seen.rates.get(name, 0.0) >= RECOVERED_AT * base
            for name, base in self.base_rates.items()
        )
        if seen.decision is QuotaState.OPEN and back:
            self.recovered_rates = dict(seen.rates)
            self._enter(Phase.DONE, seen.at)
            return [Action.FINISH]
        return []

    def _check_timeout(self, seen: Observation) -> list[Action]:
        limit = PHASE_TIMEOUTS_S[self.phase]
        if seen.at - self.phase_started < limit:
            return []
        self.failure = f"{self.phase.value} did not complete within {limit:.0f} s"
        freeing = self.phase in (Phase.FILL, Phase.THROTTLE, Phase.PAUSE)
        self._enter(Phase.FAILED, seen.at)
        return [Action.FREE_SPACE, Action.FINISH] if freeing else [Action.FINISH]


def narration(phase: Phase, breaching_broker: int, factor: float) -> str:
    """One line per phase: what the user is watching right now."""
    broker = f"broker {breaching_broker}"
    return {
        Phase.OPEN: "OPEN: every volume is inside its limits; each producer gets the base quota "
        "on the broker it writes to. Measuring their rates...",
        Phase.FILL: f"FILL: a bulk load writes Kafka records into {broker}'s partition; its "
        "log dir fills towards the soft limit.",
        Phase.THROTTLE: f"THROTTLE: {broker} is past its soft limit. Every broker lowers every "
        f"producer's quota to base x {factor:.3f}; the factor falls as the disk fills.",
        Phase.PAUSE: f"PAUSE: {broker} is past its hard limit. Producers are held at the pause "
        "floor (a trickle, never zero) while the bulk load stops.",
        Phase.RECOVERY: "RECOVERY: the operator deletes the topic's records (DeleteRecords via "
        "the Admin API); the segments leave the disk and the decision returns to OPEN.",
        Phase.DONE: "DONE: producers are back at full rate; stopping the cluster and removing "
        "the demo's directory.",
        Phase.FAILED: "FAILED: a phase did not complete in time; see the log file.",
    }[phase]
