"""The per-producer and per-principal figures of a PAUSE, on hand-written ack reports."""

from __future__ import annotations

from tests.e2e.pause_bound import Window
from tests.e2e.pause_figures import (
    longest_stall_s,
    peak_rate,
    principal_recovery_s,
    recovery_s,
)


def second(t_s: int, acked_bytes: int) -> Window:
    """One reporting second ending at ``t_s`` (epoch s) with ``acked_bytes`` in one ack."""
    acks = 1 if acked_bytes else 0
    t = t_s * 1000
    return Window(t, acked_bytes, acks, 0, acks, t - 500, t - 500, 0, 0, 0, False, "")


def steady(start_s: int, end_s: int, per_second: int) -> list[Window]:
    return [second(t, per_second) for t in range(start_s, end_s)]


def test_a_producer_back_at_its_rate_recovers_when_five_seconds_reach_90_percent() -> None:
    # 1000 B/s before, nothing for the pause (t 100-160), then 1000 B/s again from t 161.
    windows = steady(60, 100, 1000) + steady(100, 161, 0) + steady(161, 200, 1000)
    # The 5 s window (t-5, t] is back to 4500 B (90 %) at t = 165.
    assert recovery_s(windows, 160_000, 1000.0, 200_000) == 5.0


def test_a_producer_that_never_gets_back_has_no_recovery() -> None:
    windows = steady(60, 100, 1000) + steady(100, 200, 800)
    assert recovery_s(windows, 160_000, 1000.0, 200_000) is None


def test_the_longest_stall_runs_from_the_last_ack_to_the_next() -> None:
    windows = steady(90, 100, 1000) + steady(100, 130, 0) + steady(130, 140, 1000)
    # The last second with an ack before the gap ends at t 99 (ack at 98.5 s), the next at
    # t 130 (ack at 129.5 s).
    assert longest_stall_s(windows, 95_000, 140_000) == 31.0


def test_a_principal_recovers_on_its_total_while_one_connection_lags() -> None:
    # Two connections at 1000 B/s each before a PAUSE from t 100 to t 160. After OPEN the
    # first drains a backlog at 1900 B/s from t 161; the second sends 200 B/s until t 190.
    first = steady(60, 100, 1000) + steady(100, 161, 0) + steady(161, 230, 1900)
    lagging = steady(60, 100, 1000) + steady(100, 161, 0) + steady(161, 190, 200)
    lagging += steady(190, 230, 1000)
    # Total 2100 B/s from t 161: 5 s above 0.9 x 2000 B/s at t 165.
    assert principal_recovery_s({0: first, 1: lagging}, 100.0, 160.0) == 5.0
    # The lagging connection alone: back to 4500 B in 5 s at t 194.
    assert recovery_s(lagging, 160_000, 1000.0, 230_000) == 34.0


def test_the_peak_rate_is_the_busiest_ten_seconds_of_every_producer_together() -> None:
    # Two producers at 1000 B/s from t 100 to 160; the second adds a burst of 20,000 B at t 131
    # and sends nothing at t 133. The busiest (t-10, t] windows hold the burst: 40,000 B.
    first = steady(100, 160, 1000)
    second_one = [*steady(100, 131, 1000), second(131, 21_000), *steady(132, 160, 1000)]
    second_one = [window for window in second_one if window.t != 133_000]
    assert peak_rate([first, second_one], 100_000, 160_000) == 4000.0
    # Outside (start, end] nothing counts; a range shorter than the span has no peak.
    assert peak_rate([first, second_one], 140_000, 160_000) == 2000.0
    assert peak_rate([first], 150_000, 155_000) == 0.0
