"""The vectorised replay follows consumer.limits exactly, and its statistics are right."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consumer.limits import judge_free_space
from schemas.decision import QuotaState
from spark_history.decision_replay import (
    STATE_CODES,
    Candidate,
    judge_free_space_array,
    largest_climb_percent,
    replay_candidates,
    replay_volume,
)


def test_vectorised_rule_equals_judge_free_space_on_every_boundary() -> None:
    values = [0.0, 1.0, 49.5, 50.0, 50.5, 99.0, 100.0, 100.5, 150.0, 200.0]
    cases = list(itertools.product(values, values, values))
    free, soft, hard = (np.array(column) for column in zip(*cases, strict=True))
    states, factors = judge_free_space_array(free, soft, hard)
    for index, (f, s, h) in enumerate(cases):
        state, factor = judge_free_space(f, s, h)
        assert states[index] == STATE_CODES[state], (f, s, h)
        assert factors[index] == pytest.approx(factor), (f, s, h)


def test_random_values_agree_with_the_scalar_rule() -> None:
    rng = np.random.default_rng(3)
    free = rng.uniform(0, 1e12, 5000)
    soft = rng.uniform(0, 1e12, 5000)
    hard = rng.uniform(0, 1e12, 5000)
    states, factors = judge_free_space_array(free, soft, hard)
    for f, s, h, code, factor in zip(free, soft, hard, states, factors, strict=True):
        state, expected = judge_free_space(f, s, h)
        assert code == STATE_CODES[state]
        assert factor == pytest.approx(expected)


def test_candidate_thresholds_are_percent_of_capacity() -> None:
    assert Candidate(20.0, 5.0).thresholds(2000) == (400.0, 100.0)


def test_replay_of_a_steady_fill_counts_hours_flips_and_warning() -> None:
    # Free space falls 1 byte a minute from 600 on a 1000-byte volume, for 10 hours.
    minutes = np.arange(600, dtype=np.float64)
    free = 600.0 - minutes
    capacity = np.full(minutes.size, 1000, dtype=np.int64)
    stats = replay_volume(minutes * 60.0, free, capacity, Candidate(30.0, 10.0))
    # soft: free <= 300 from minute 300; hard: free <= 100 from minute 500.
    assert stats.flips == 2
    assert stats.episodes == 1
    assert stats.hard_episodes == 1
    assert stats.warning_hours == pytest.approx([200 / 60])
    assert stats.throttled_hours == pytest.approx(200 / 60)
    # Paused from minute 500 to the last snapshot (minute 599): 99 minutes.
    assert stats.paused_hours == pytest.approx(99 / 60)


def test_short_open_interludes_do_not_split_an_episode_but_long_ones_do() -> None:
    hours = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 3.0, 3.1, 3.2])
    free = np.array([500, 250, 500, 250, 50, 500, 250, 500], dtype=np.float64)
    capacity = np.full(hours.size, 1000, dtype=np.int64)
    stats = replay_volume(
        hours * 3600, free, capacity, Candidate(30.0, 10.0), max_gap_hours=10.0, merge_gap_hours=1.0
    )
    assert stats.episodes == 2
    assert stats.hard_episodes == 1
    assert stats.warning_hours == pytest.approx([0.3])  # first breach 0.1 h, PAUSE at 0.4 h
    assert stats.flips == 7


def test_an_episode_under_way_at_the_start_gives_no_warning() -> None:
    hours = np.array([0.0, 1.0, 2.0])
    free = np.array([200.0, 50.0, 500.0])
    stats = replay_volume(
        hours * 3600,
        free,
        np.full(3, 1000, dtype=np.int64),
        Candidate(30.0, 10.0),
        max_gap_hours=2.0,
    )
    assert stats.hard_episodes == 1
    assert stats.warning_hours == []


@settings(max_examples=150, deadline=None)
@given(
    free=st.lists(st.floats(0.0, 2000.0), min_size=1, max_size=40),
    resized_at=st.integers(0, 40),
    percents=st.lists(
        st.tuples(st.floats(1.0, 60.0), st.floats(0.0, 40.0)), min_size=1, max_size=6
    ),
)
def test_candidates_replayed_together_equal_the_scalar_rule_on_each(
    free: list[float], resized_at: int, percents: list[tuple[float, float]]
) -> None:
    """Every candidate's row of a joint replay: its states are the consumer's scalar rule on
    each snapshot (the capacity grows from 1000 to 2000 bytes mid-series), and its episodes
    are those of the candidate replayed alone."""
    hours = np.arange(len(free), dtype=np.float64) * 0.5
    capacity = np.where(np.arange(len(free)) < resized_at, 1000, 2000).astype(np.int64)
    values = np.array(free)
    candidates = [Candidate(soft, hard) for soft, hard in percents]
    together = replay_candidates(hours * 3600, values, capacity, candidates, (0.5, 1.0))
    for candidate, stats in zip(candidates, together, strict=True):
        states = [
            STATE_CODES[judge_free_space(f, *candidate.thresholds(int(c)))[0]]
            for f, c in zip(values, capacity, strict=True)
        ]
        durations = np.minimum(np.diff(hours, append=hours[-1]), 0.5)
        throttling = STATE_CODES[QuotaState.THROTTLE]
        throttled = sum(d for d, code in zip(durations, states, strict=True) if code == throttling)
        assert stats.flips == sum(a != b for a, b in itertools.pairwise(states))
        assert stats.throttled_hours == pytest.approx(throttled)
        alone = replay_candidates(hours * 3600, values, capacity, [candidate], (0.5, 1.0))[0]
        assert (stats.episodes, stats.hard_episodes) == (alone.episodes, alone.hard_episodes)
        assert stats.warning_hours == alone.warning_hours


def test_states_map_every_quota_state() -> None:
    assert set(STATE_CODES) == set(QuotaState)


def test_the_largest_climb_is_the_steepest_rise_within_the_window() -> None:
    # Used %: 50 for buckets 0-9, +1 a bucket from bucket 10 to 20 (60 at bucket 20), then a
    # retention drop to 40 and a jump of 15 in one bucket (bucket 30: 55).
    buckets = np.arange(0, 31, dtype=np.int64)
    used = np.concatenate([np.full(10, 50.0), 50.0 + np.arange(1, 11), np.full(10, 40.0), [55.0]])
    assert largest_climb_percent(buckets, used, 4) == 15.0  # the jump, whatever the window
    assert largest_climb_percent(buckets[:21], used[:21], 4) == 4.0  # 4 buckets of +1
    assert largest_climb_percent(buckets[:21], used[:21], 30) == 10.0


def test_a_missing_bucket_is_no_data_and_a_falling_volume_never_climbs() -> None:
    # Buckets 0 and 10 only: 10 buckets apart, so a window of 5 sees no rise between them.
    sparse = np.array([0, 10], dtype=np.int64)
    assert largest_climb_percent(sparse, np.array([20.0, 80.0]), 5) == 0.0
    assert largest_climb_percent(sparse, np.array([20.0, 80.0]), 10) == 60.0
    falling = np.arange(5, dtype=np.int64)
    assert largest_climb_percent(falling, np.array([9.0, 8.0, 7.0, 6.0, 5.0]), 3) == 0.0
    assert largest_climb_percent(falling[:0], np.array([]), 3) == 0.0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.0, 100.0), min_size=1, max_size=40),
    st.integers(1, 12),
)
def test_the_largest_climb_matches_a_direct_search(used: list[float], window: int) -> None:
    buckets = np.arange(len(used), dtype=np.int64)
    expected = max([max(used[i : i + window + 1]) - used[i] for i in range(len(used))] + [0.0])
    assert largest_climb_percent(buckets, np.array(used), window) == pytest.approx(expected)
