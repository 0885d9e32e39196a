"""The scripted story as a state machine (pure): phases, actions, timings, failures."""

from __future__ import annotations

from schemas.decision import QuotaState
from volume_quota.demo.story import (
    MIN_PAUSE_S,
    PHASE_TIMEOUTS_S,
    Action,
    Observation,
    Phase,
    Story,
    narration,
)

BASE = 1000.0
FLOOR = 100.0
OPEN, THROTTLE, PAUSE = QuotaState.OPEN, QuotaState.THROTTLE, QuotaState.PAUSE


def seen(
    at: float,
    decision: QuotaState | None,
    rate: float,
    *,
    factor: float = 1.0,
    fill_done: bool = False,
) -> Observation:
    return Observation(at, decision, factor, {"app-a": rate, "app-b": rate}, fill_done)


def phase_of(story: Story) -> Phase:
    return story.phase  # read afresh: advance() changes it


def test_the_whole_story_in_order_with_its_actions_and_timings() -> None:
    story = Story(pause_rate=FLOOR)
    assert story.advance(seen(0, OPEN, BASE)) == []
    assert story.advance(seen(19, OPEN, BASE)) == []  # warm-up and one rate window: 20 s
    assert story.advance(seen(20, OPEN, BASE)) == [Action.START_FILL]
    assert phase_of(story) is Phase.FILL
    assert story.base_rates == {"app-a": BASE, "app-b": BASE}
    assert story.advance(seen(30, OPEN, BASE)) == []
    assert story.advance(seen(31, THROTTLE, 0.8 * BASE, factor=0.8)) == []
    assert phase_of(story) is Phase.THROTTLE
    story.advance(seen(40, THROTTLE, 0.3 * BASE, factor=0.3))
    assert story.lowest_factor == 0.3
    story.advance(seen(50, PAUSE, 0.2 * BASE, factor=0.0))
    assert phase_of(story) is Phase.PAUSE
    # under 2.5 x the floor but the bulk load has not stopped yet, then not long enough
    assert story.advance(seen(60, PAUSE, 2 * FLOOR, factor=0.0)) == []
    assert story.advance(seen(60, PAUSE, 2 * FLOOR, factor=0.0, fill_done=True)) == []
    paused_at = 50 + MIN_PAUSE_S
    actions = story.advance(seen(paused_at, PAUSE, 2 * FLOOR, factor=0.0, fill_done=True))
    assert actions == [Action.FREE_SPACE]
    assert story.paused_rates == {"app-a": 2 * FLOOR, "app-b": 2 * FLOOR}
    assert story.advance(seen(paused_at + 3, OPEN, 0.5 * BASE)) == []  # rates not back yet
    assert story.advance(seen(paused_at + 9, OPEN, 0.95 * BASE)) == [Action.FINISH]
    assert story.succeeded
    assert story.timings == {
        "OPEN": 20.0,
        "FILL": 11.0,
        "THROTTLE": 19.0,
        "PAUSE": MIN_PAUSE_S,
        "decision OPEN again": 3.0,
        "RECOVERY": 9.0,
    }
    assert story.advance(seen(paused_at + 20, OPEN, BASE)) == []  # done stays done


def test_base_rates_need_a_full_warm_up_of_uninterrupted_open() -> None:
    story = Story(pause_rate=FLOOR)
    story.advance(seen(0, OPEN, BASE))
    story.advance(seen(10, PAUSE, 10.0))  # e.g. the sidecars saw something else fill the disk
    assert story.advance(seen(20, OPEN, 10.0)) == []
    assert story.advance(seen(39, OPEN, BASE)) == []
    assert story.advance(seen(40, OPEN, BASE)) == [Action.START_FILL]


def test_a_pause_is_only_complete_when_every_producer_is_under_the_threshold() -> None:
    story = Story(pause_rate=FLOOR, phase=Phase.PAUSE, phase_started=0.0)
    uneven = Observation(30, PAUSE, 0.0, {"app-a": FLOOR, "app-b": 2.6 * FLOOR}, True)
    assert story.advance(uneven) == []
    assert phase_of(story) is Phase.PAUSE


def test_recovery_needs_every_producer_back_to_90_percent_of_its_own_base() -> None:
    story = Story(pause_rate=FLOOR, phase=Phase.RECOVERY, phase_started=0.0)
    story.base_rates = {"app-a": 1000.0, "app-b": 500.0}
    assert story.advance(Observation(5, OPEN, 1.0, {"app-a": 950.0, "app-b": 440.0})) == []
    assert story.advance(Observation(6, OPEN, 1.0, {"app-a": 950.0, "app-b": 460.0})) == [
        Action.FINISH
    ]


def test_a_stuck_phase_fails_and_frees_what_was_written() -> None:
    story = Story(pause_rate=FLOOR, phase=Phase.THROTTLE, phase_started=10.0)
    limit = PHASE_TIMEOUTS_S[Phase.THROTTLE]
    assert story.advance(seen(10 + limit - 1, THROTTLE, BASE, factor=0.5)) == []
    actions = story.advance(seen(10 + limit, THROTTLE, BASE, factor=0.5))
    assert actions == [Action.FREE_SPACE, Action.FINISH]
    assert phase_of(story) is Phase.FAILED
    assert story.failure == f"THROTTLE did not complete within {limit:.0f} s"
    assert not story.succeeded


def test_a_stuck_open_phase_fails_without_anything_to_free() -> None:
    story = Story(pause_rate=FLOOR)
    assert story.advance(seen(PHASE_TIMEOUTS_S[Phase.OPEN], None, 0.0)) == [Action.FINISH]
    assert story.failure is not None


def test_every_phase_has_a_line_of_narration_naming_the_breaching_broker() -> None:
    for phase in Phase:
        line = narration(phase, breaching_broker=4, factor=0.25)
        assert line.startswith(phase.value)
    assert "broker 4" in narration(Phase.FILL, 4, 1.0)
    assert "0.250" in narration(Phase.THROTTLE, 4, 0.25)
