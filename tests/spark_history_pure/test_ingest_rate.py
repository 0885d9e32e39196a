"""The write rate of a topic comes from its climb, not from its net growth at the plateau."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_history.forecast.mechanism.ingest_rate import ingest_rate, undeleted_series


def _saw(rate: float, segment: float, bound: float, hours: int, every: float) -> np.ndarray:
    """Bytes of a one-partition topic written at ``rate`` B/s whose retention deletes the oldest
    ``segment`` whenever it holds more than ``bound``: climbs, then a saw at the plateau."""
    seconds = np.arange(0.0, hours * 3600.0, every)
    written = rate * seconds
    deleted = np.maximum(np.ceil((written - bound) / segment), 0.0) * segment
    return np.stack([seconds - seconds[-1], written - deleted])


def test_a_steady_climb_gives_its_rate() -> None:
    seconds = np.arange(0.0, 7200.0, 60.0)
    estimate = ingest_rate(seconds, 1e9 + 1000.0 * seconds)
    assert abs(estimate.bytes_per_second - 1000.0) < 1e-6
    assert estimate.drops == 0


def test_at_the_plateau_the_rate_is_the_climb_between_drops_not_the_net_growth() -> None:
    seconds, values = _saw(rate=500.0, segment=1e6, bound=5e6, hours=48, every=300.0)
    # After the first 3 h the topic sits at its plateau: net growth is about 0.
    plateau = seconds > seconds[0] + 3 * 3600
    net = np.polyfit(seconds[plateau], values[plateau], 1)[0]
    assert abs(net) < 5.0
    estimate = ingest_rate(seconds[plateau], values[plateau])
    assert abs(estimate.bytes_per_second - 500.0) / 500.0 < 0.05
    assert estimate.drops > 10


@settings(max_examples=60, deadline=None)
@given(
    rate=st.floats(10.0, 1e6),
    segments=st.integers(2, 40),
    every=st.floats(30.0, 900.0),
)
def test_the_rate_of_a_retention_saw_is_within_ten_percent_of_the_write_rate(
    rate: float, segments: int, every: float
) -> None:
    segment = rate * every * segments  # at least two samples per segment
    seconds, values = _saw(rate, segment, bound=4 * segment, hours=72, every=every)
    estimate = ingest_rate(seconds, values)
    assert abs(estimate.bytes_per_second - rate) / rate < 0.10


@settings(deadline=None)
@given(st.lists(st.floats(0.0, 1e12), min_size=0, max_size=50))
def test_the_rate_is_never_negative(values: list[float]) -> None:
    seconds = np.arange(len(values), dtype=np.float64) * 60.0
    assert ingest_rate(seconds, np.array(values, dtype=np.float64)).bytes_per_second >= 0.0


def test_the_undeleted_series_never_falls() -> None:
    seconds, values = _saw(rate=100.0, segment=6e4, bound=3e5, hours=12, every=120.0)
    rebuilt, drops = undeleted_series(seconds, values)
    assert drops > 0
    assert (np.diff(rebuilt) >= 0).all()
