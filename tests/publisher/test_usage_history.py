"""The growth history of the usage publisher: exact on steady growth, bounded, honest spans."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.usage_history import (
    COARSE_WINDOW_SECONDS,
    FINE_WINDOW_SECONDS,
    MAX_SAMPLES_PER_SERIES,
    Growth,
    UsageHistory,
)

KEY = ("/dev/a", "orders")


def history_of(times: list[int], size_at: dict[int, int] | None = None) -> UsageHistory:
    history = UsageHistory.empty()
    for moment in times:
        size = moment if size_at is None else size_at[moment]
        history = history.record(float(moment), {KEY: size})
    return history


@st.composite
def survey_times(draw: st.DrawFn) -> list[int]:
    """Increasing survey instants (seconds), at irregular gaps from 1 s to 2 h."""
    gaps = draw(st.lists(st.integers(1, 7200), min_size=1, max_size=120))
    start = draw(st.integers(0, 10**6))
    times = [start]
    for gap in gaps:
        times.append(times[-1] + gap)
    return times


@settings(max_examples=200, deadline=None)
@given(times=survey_times(), rate=st.integers(0, 10**6), base=st.integers(0, 10**12))
def test_growth_at_a_constant_rate_is_rate_times_span_whatever_the_sampling(
    times: list[int], rate: int, base: int
) -> None:
    sizes = {moment: base + rate * (moment - times[0]) for moment in times}
    growth = history_of(times, sizes).growth(KEY)
    windows = ((growth.last_15m, FINE_WINDOW_SECONDS), (growth.last_24h, COARSE_WINDOW_SECONDS))
    for measured, window in windows:
        if measured is None:
            continue
        assert measured.bytes == rate * measured.seconds
        assert 0 < measured.seconds <= window


@settings(max_examples=200, deadline=None)
@given(times=survey_times())
def test_every_series_stays_bounded_and_the_spans_use_what_is_there(times: list[int]) -> None:
    history = history_of(times)
    assert len(history.series[KEY]) <= MAX_SAMPLES_PER_SERIES
    growth = history.growth(KEY)
    newest = times[-1]
    within_15m = [moment for moment in times[:-1] if newest - moment <= FINE_WINDOW_SECONDS]
    if within_15m:
        # one sample per 15 s is kept: the span reaches back to within 15 s of the oldest survey
        assert growth.last_15m is not None
        assert growth.last_15m.seconds >= newest - within_15m[0] - 15
    else:
        assert growth.last_15m is None
    within_24h = [moment for moment in times[:-1] if newest - moment <= COARSE_WINDOW_SECONDS]
    if within_24h:
        assert growth.last_24h is not None
        assert growth.last_24h.seconds >= newest - within_24h[0] - 15 * 60
    else:
        assert growth.last_24h is None


def test_a_history_over_a_day_at_one_survey_every_two_seconds_stays_small() -> None:
    history = UsageHistory.empty()
    for moment in range(0, 25 * 3600, 2):
        history = history.record(float(moment), {KEY: 3 * moment})
    assert len(history.series[KEY]) <= MAX_SAMPLES_PER_SERIES
    growth = history.growth(KEY)
    assert growth.last_15m is not None
    assert growth.last_24h is not None
    assert FINE_WINDOW_SECONDS - 15 <= growth.last_15m.seconds <= FINE_WINDOW_SECONDS
    assert COARSE_WINDOW_SECONDS - 15 * 60 <= growth.last_24h.seconds <= COARSE_WINDOW_SECONDS
    assert growth.last_24h.bytes == 3 * growth.last_24h.seconds


def test_a_fresh_history_states_the_short_span_it_has() -> None:
    history = history_of([0, 60, 120, 180], {0: 1000, 60: 1100, 120: 1300, 180: 1600})
    growth = history.growth(KEY)
    assert growth.last_15m == Growth(600, 180.0)
    assert growth.last_24h == Growth(600, 180.0)


def test_one_survey_gives_no_growth_and_a_shrinking_topic_a_negative_one() -> None:
    assert history_of([0]).growth(KEY).last_15m is None
    shrinking = history_of([0, 60], {0: 5000, 60: 2000}).growth(KEY)
    assert shrinking.last_15m == Growth(-3000, 60.0)


def test_a_topic_that_leaves_the_survey_starts_a_new_span_when_it_returns() -> None:
    history = UsageHistory.empty().record(0.0, {KEY: 10}).record(60.0, {KEY: 20})
    history = history.record(120.0, {}).record(180.0, {KEY: 50})
    assert history.growth(KEY).last_15m is None
    assert KEY not in history.record(240.0, {}).series


def test_a_clock_that_went_back_restarts_the_series() -> None:
    history = UsageHistory.empty().record(100.0, {KEY: 10}).record(50.0, {KEY: 30})
    assert history.growth(KEY).last_15m is None
