"""Split-conformal bands (``spark_history.forecast.conformal_bands``): ranks, coverage on
exchangeable errors, and the fill-time band the level band gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_history.forecast.conformal_bands import (
    Calibration,
    FloatArray,
    Sample,
    conformal_bounds,
    crossing_band,
    path_crossing_band,
)


def test_bounds_are_the_conformal_ranks_of_the_sorted_errors() -> None:
    errors = np.arange(19, 0, -1, dtype=np.float64)  # 19 errors, unsorted
    # (n + 1) = 20: lower rank floor(20 * 0.05) = 1, upper rank ceil(20 * 0.95) = 19.
    assert conformal_bounds(errors, 0.9) == (1.0, 19.0)
    # 39 errors: ranks 2 and 38.
    assert conformal_bounds(np.arange(1, 40, dtype=np.float64), 0.9) == (2.0, 38.0)


def test_too_few_errors_leave_the_band_open() -> None:
    assert conformal_bounds(np.array([1.0, 2.0, 3.0]), 0.9) == (-math.inf, math.inf)
    assert conformal_bounds(np.empty(0), 0.5) == (-math.inf, math.inf)


def test_a_coverage_outside_zero_and_one_is_refused() -> None:
    with pytest.raises(ValueError, match="coverage"):
        conformal_bounds(np.ones(10), 1.0)


@pytest.mark.parametrize("distribution", ["normal", "skewed", "heavy"])
@pytest.mark.parametrize("size", [19, 60, 400])
def test_coverage_on_exchangeable_errors_is_at_least_nominal(distribution: str, size: int) -> None:
    """Calibrate on ``size`` errors, test on a new one from the same law, 4,000 times: the
    band holds it at least 90 % of the time (less three standard errors of the estimate)
    and not much more (the ranks are tight, not an infinite band)."""
    rng = np.random.default_rng(size)
    trials = 4000

    def draws(n: int) -> FloatArray:
        if distribution == "normal":
            values: FloatArray = rng.normal(0.0, 1.0, n)
        elif distribution == "skewed":
            values = rng.exponential(1.0, n) - 1.0
        else:
            values = rng.standard_t(2, n)
        return values

    hits = 0
    for _ in range(trials):
        calibration, new = draws(size), draws(1)[0]
        low, high = conformal_bounds(calibration, 0.9)
        hits += low <= new <= high
    coverage = hits / trials
    margin = 3 * math.sqrt(0.9 * 0.1 / trials)
    assert coverage >= 0.9 - margin
    upper = 0.9 + 2 / (size + 1) + margin  # the ranks' rounding adds at most 2 / (n + 1)
    assert coverage <= upper


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False), min_size=1, max_size=80),
    st.sampled_from([0.5, 0.8, 0.9, 0.95]),
)
def test_at_most_alpha_over_two_of_the_errors_lie_beyond_each_side(
    errors: list[float], coverage: float
) -> None:
    """In-sample: the bounds are order statistics with at most (n + 1) alpha / 2 errors
    strictly outside each, and the lower never above the upper."""
    values = np.array(errors)
    low, high = conformal_bounds(values, coverage)
    tail = (len(errors) + 1) * (1 - coverage) / 2
    assert np.count_nonzero(values > high) <= tail
    assert np.count_nonzero(values < low) <= tail
    assert low <= high


def _calibration(errors: dict[float, tuple[float, float]]) -> Calibration:
    """A calibration whose bounds at each horizon are the given (low, high): 19 errors
    from low to high, so the ranks 1 and 19 at 90 % are exactly them."""
    samples = [
        Sample("growing", horizon, float(value))
        for horizon, (low, high) in errors.items()
        for value in np.linspace(low, high, 19)
    ]
    return Calibration.of(samples, 0.9)


def test_samples_pool_by_trend_and_horizon() -> None:
    samples = [Sample("growing", 6.0, float(v)) for v in range(19)]
    samples += [Sample("flat", 6.0, 100.0)]
    calibration = Calibration.of(samples, 0.9)
    assert calibration.bounds[("growing", 6.0)] == (0.0, 18.0)
    assert calibration.counts == {("growing", 6.0): 19, ("flat", 6.0): 1}
    assert calibration.horizons("growing") == [6.0]
    assert calibration.horizons("flat") == []  # one error: both sides infinite


def test_zero_errors_give_the_point_as_the_band() -> None:
    calibration = _calibration({6.0: (0.0, 0.0), 24.0: (0.0, 0.0), 72.0: (0.0, 0.0)})
    band = crossing_band(
        calibration,
        "growing",
        level=50.0,
        slope=1.0,
        limit=90.0,
        capacity=100.0,
        horizon_hours=200.0,
    )
    assert band == (40.0, 40.0)


def test_the_band_is_where_the_level_band_reaches_the_limit() -> None:
    # Errors of -5 % .. +5 % of capacity at every horizon: the level band is the line
    # +- 5 (capacity 100), so it reaches 90 at 35 h (upper) and 45 h (lower).
    calibration = _calibration({6.0: (-0.05, 0.05), 72.0: (-0.05, 0.05)})
    band = crossing_band(
        calibration,
        "growing",
        level=50.0,
        slope=1.0,
        limit=90.0,
        capacity=100.0,
        horizon_hours=200.0,
    )
    assert band == (35.0, 45.0)


def test_the_late_side_is_open_past_the_last_calibrated_horizon() -> None:
    calibration = _calibration({6.0: (-0.05, 0.05), 24.0: (-0.05, 0.05)})
    band = crossing_band(
        calibration,
        "growing",
        level=50.0,
        slope=1.0,
        limit=90.0,
        capacity=100.0,
        horizon_hours=200.0,
    )
    assert band is not None
    early, late = band
    assert late is None  # the lower side would reach 90 at 45 h: nothing measured so far
    # Past 24 h the upper side scales with time: 50 + t + 5 t / 24 = 90 at t = 33.1 h.
    assert early == pytest.approx(40.0 / (1 + 5 / 24), abs=0.25)


def test_an_uncalibrated_trend_has_no_band() -> None:
    calibration = _calibration({6.0: (-0.05, 0.05)})
    assert (
        crossing_band(
            calibration,
            "flat",
            level=50.0,
            slope=1.0,
            limit=90.0,
            capacity=100.0,
            horizon_hours=200.0,
        )
        is None
    )


def test_a_path_band_reads_the_level_band_along_a_path_that_is_not_a_line() -> None:
    calibration = Calibration(0.9, {("m", h): (-0.1, 0.1) for h in (6.0, 24.0, 72.0)})
    line = {"limit": 100.0, "capacity": 100.0, "horizon_hours": 72.0}
    # 50 + 2 h: +-10 reaches 100 at 20 h and 30 h, as the line's band does.
    rising = path_crossing_band(calibration, "m", path=lambda h: 50.0 + 2.0 * h, **line)
    assert rising == crossing_band(calibration, "m", level=50.0, slope=2.0, **line)
    assert rising == (20.0, 30.0)
    # Held at 95 from 22.5 h by retention: its upper side reaches 100 at 20 h, its lower never.
    capped = path_crossing_band(
        calibration, "m", path=lambda h: np.minimum(50.0 + 2.0 * h, 95.0), **line
    )
    assert capped == (20.0, None)
