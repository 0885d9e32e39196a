"""Fleet and broker totals: used % now, trend, and the dates 70/80/90 % are crossed."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from spark_history.capacity_crossings import (
    CROSSED,
    FLEET,
    FORECAST,
    NONE,
    crossing_table,
    fleet_sentence,
    group_crossings,
    group_hours,
)
from spark_history.forecast.vocabulary import ForecastParams

AT = datetime(2026, 1, 1, tzinfo=UTC)
HOURS = np.arange(-71.0, 1.0)  # 72 hourly totals ending at AT
CAPACITY = 1000.0
PARAMS = ForecastParams()


def _line(level: float, slope: float) -> tuple[np.ndarray, np.ndarray]:
    return level + slope * HOURS, np.full(HOURS.size, CAPACITY)


def test_a_hand_computed_line_crosses_each_level_when_the_arithmetic_says() -> None:
    # 600 bytes of 1000 at AT, one byte an hour: 700 in 100 h, 800 in 200 h, 900 in 300 h.
    used, capacity = _line(600.0, 1.0)
    broker_hours = pd.DataFrame(
        {"brokerId": 0, "bucket": HOURS, "consumed": used, "capacity": capacity}
    )
    table = crossing_table(broker_hours, AT, PARAMS)
    fleet = table.iloc[0]
    assert fleet["group"] == FLEET
    assert fleet["usedPercent"] == 60.0
    assert abs(fleet["growthPercentPerDay"] - 2.4) < 1e-9  # 24 bytes a day of 1000
    assert [fleet[f"state{level}"] for level in (70, 80, 90)] == [FORECAST] * 3
    assert [fleet[f"at{level}"] for level in (70, 80, 90)] == [
        "2026-01-05T04:00Z",  # 4 days 4 hours
        "2026-01-09T08:00Z",  # 8 days 8 hours
        "2026-01-13T12:00Z",  # 12 days 12 hours
    ]
    assert fleet_sentence(table, PARAMS) == (
        "The fleet is 60 % full and crosses 80 % around 2026-01-09 at the last 72 h's rate."
    )


def test_a_level_crossed_in_the_window_says_since_when() -> None:
    # 750 + 5 t: 700 (70 %) at t = -10, 695 an hour before; 800 in 10 h, 900 in 30 h.
    result = group_crossings(HOURS, *_line(750.0, 5.0), PARAMS)
    assert result.used_percent == 75.0
    assert (result.crossing(70).state, result.crossing(70).hours) == (CROSSED, -10.0)
    assert result.crossing(80).state == FORECAST
    assert abs(result.crossing(80).hours - 10.0) < 1e-9  # type: ignore[operator]
    assert abs(result.crossing(90).hours - 30.0) < 1e-9  # type: ignore[operator]


@given(
    level=st.floats(min_value=0.0, max_value=600.0),
    slow=st.floats(min_value=0.01, max_value=20.0),
    factor=st.floats(min_value=1.0, max_value=10.0),
)
def test_a_faster_growing_series_never_crosses_later(
    level: float, slow: float, factor: float
) -> None:
    slower = group_crossings(HOURS, *_line(level, slow), PARAMS)
    faster = group_crossings(HOURS, *_line(level, slow * factor), PARAMS)
    for before, after in zip(slower.crossings, faster.crossings, strict=True):
        late = np.inf if before.hours is None else before.hours
        early = np.inf if after.hours is None else after.hours
        assert early <= late + 1e-6 * max(1.0, abs(late))


@given(
    now=st.floats(min_value=900.0, max_value=1000.0),
    slope=st.floats(min_value=-5.0, max_value=5.0),
)
def test_a_group_at_or_over_90_percent_has_crossed_every_level(now: float, slope: float) -> None:
    used = now + slope * HOURS
    result = group_crossings(HOURS, used, np.full(HOURS.size, CAPACITY), PARAMS)
    assert [c.state for c in result.crossings] == [CROSSED] * 3
    assert all(c.hours is not None and c.hours <= 0 for c in result.crossings)


@given(level=st.floats(min_value=0.0, max_value=699.0))
def test_a_flat_series_below_a_level_never_crosses_it(level: float) -> None:
    result = group_crossings(HOURS, *_line(level, 0.0), PARAMS)
    assert [c.state for c in result.crossings] == [NONE] * 3
    assert result.growth_percent_per_day is not None
    assert abs(result.growth_percent_per_day) < 1e-9


def test_a_crossing_beyond_the_horizon_is_none() -> None:
    # 0.01 byte an hour from 600: 80 % in 20 000 h, far beyond the 60-day horizon.
    used, capacity = _line(600.0, 0.01)
    broker_hours = pd.DataFrame(
        {"brokerId": 0, "bucket": HOURS, "consumed": used, "capacity": capacity}
    )
    table = crossing_table(broker_hours, AT, PARAMS)
    assert table.loc[0, "state80"] == NONE
    assert pd.isna(table.loc[0, "at80"])
    assert "does not cross 80 % within 60 days" in fleet_sentence(table, PARAMS)


def test_a_short_history_has_no_trend_and_crosses_nothing_ahead() -> None:
    hours = np.arange(-3.0, 1.0)
    result = group_crossings(hours, 600.0 + hours, np.full(hours.size, CAPACITY), PARAMS)
    assert result.trend == "insufficient-data"
    assert [c.state for c in result.crossings] == [NONE] * 3


def _broker_hours(rows: list[tuple[int, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["brokerId", "bucket", "consumed", "capacity"])


def test_a_silent_hour_does_not_dip_the_fleet_and_a_silent_day_stops_counting() -> None:
    rows = [(0, float(b), 100.0, 200.0) for b in range(-40, 1)]
    # Broker 1 skips hour -35 and publishes nothing after hour -30 (more than 24 h ago).
    rows += [(1, float(b), 50.0, 100.0) for b in range(-40, -29) if b != -35]
    totals = group_hours(_broker_hours(rows), PARAMS).set_index(["group", "bucket"])
    assert totals.loc[(FLEET, -35.0), "consumed"] == 150.0
    assert totals.loc[(FLEET, -6.0), "consumed"] == 150.0  # carried 24 h after hour -30
    assert totals.loc[(FLEET, -5.0), "consumed"] == 100.0
    assert totals.loc[("broker 1", -35.0), "capacity"] == 100.0


def test_brokers_soonest_to_cross_80_percent_follow_the_fleet() -> None:
    rows: list[tuple[int, float, float, float]] = []
    for broker, start, slope in ((0, 500.0, 0.0), (1, 600.0, 2.0), (2, 850.0, 0.0)):
        rows += [(broker, hour, start + slope * hour, CAPACITY) for hour in HOURS.tolist()]
    table = crossing_table(_broker_hours(rows), AT, PARAMS)
    assert table["group"].tolist() == [FLEET, "broker 2", "broker 1", "broker 0"]
    assert table["brokerId"].tolist()[1:] == [2, 1, 0]


def test_the_totals_load_without_spark() -> None:
    code = (
        "import sys, spark_history.capacity_crossings; "
        "sys.exit(1 if any(name.startswith('pyspark') for name in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
