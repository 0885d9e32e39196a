"""The planner's figures: which topics grew the fleet, and the room left after losing the
largest broker."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_history.fleet_planning import headroom_after_losing_largest, topic_growth


def series(*rows: tuple[int, str, str, int, int]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["brokerId", "volumeName", "topic", "firstBytes", "lastBytes"]
    )


def test_topics_are_ranked_by_their_growth_summed_over_brokers_and_volumes() -> None:
    table = topic_growth(
        series(
            (0, "/a", "orders", 100, 400),
            (1, "/a", "orders", 100, 300),
            (1, "/b", "clicks", 0, 450),
            (2, "/a", "logs", 900, 200),  # retention cut it: negative growth
        )
    )
    assert table["topic"].tolist() == ["orders", "clicks", "logs"]
    assert table["growthBytes"].tolist() == [500, 450, -700]
    assert table["bytes"].tolist() == [700, 450, 200]
    assert table["volumes"].tolist() == [2, 1, 1]
    assert table["brokers"].tolist() == [2, 1, 1]
    assert topic_growth(series(), top=3).empty
    assert len(topic_growth(series((0, "/a", "x", 0, 1), (0, "/a", "y", 0, 2)), top=1)) == 1


def test_losing_the_largest_broker_moves_its_bytes_onto_the_others() -> None:
    brokers = pd.DataFrame(
        {"brokerId": [0, 1, 2], "capacity": [100, 100, 200], "consumed": [50, 50, 100]}
    )
    headroom = headroom_after_losing_largest(brokers)
    assert headroom.used_percent == pytest.approx(50.0)
    assert headroom.lost_broker == 2
    assert headroom.used_percent_after == pytest.approx(100.0)  # 200 bytes on 200 left
    alone = headroom_after_losing_largest(brokers.head(1))
    assert alone.lost_broker is None
    assert alone.used_percent_after is None


@given(st.lists(st.tuples(st.integers(1, 10**12), st.floats(0.0, 1.0)), min_size=2, max_size=30))
def test_the_largest_broker_is_the_worst_one_to_lose(brokers: list[tuple[int, float]]) -> None:
    frame = pd.DataFrame(
        {
            "brokerId": range(len(brokers)),
            "capacity": [capacity for capacity, _ in brokers],
            "consumed": [int(capacity * share) for capacity, share in brokers],
        }
    )
    headroom = headroom_after_losing_largest(frame)
    assert headroom.used_percent_after is not None
    used, capacity = float(frame["consumed"].sum()), float(frame["capacity"].sum())
    for _, row in frame.iterrows():
        left = capacity - float(row["capacity"])
        after = 100.0 * used / left if left > 0 else float("inf")
        assert after <= headroom.used_percent_after * (1 + 1e-9)
    assert headroom.used_percent_after >= headroom.used_percent
