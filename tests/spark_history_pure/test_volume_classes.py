"""Volume classes for the threshold advice: volumes of like capacity, and each class's climb."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_history.decision_replay import capacity_class, class_climbs


@pytest.mark.parametrize(
    ("capacity", "label"),
    [
        (500 * 10**9, "256 GiB-512 GiB"),
        (2**40, "1 TiB-2 TiB"),
        (2**40 - 1, "512 GiB-1 TiB"),
        (100 * 2**20, "64 MiB-128 MiB"),
        (1, "1 B-2 B"),
    ],
)
def test_a_class_is_the_power_of_two_band_of_the_capacity(capacity: int, label: str) -> None:
    assert capacity_class(capacity) == label


def test_each_class_gets_its_own_quantile_and_the_steepest_comes_first() -> None:
    classes = ["big"] * 60 + ["small"] * 2
    climbs = [0.0] * 60 + [9.0, 9.0]
    found = class_climbs(classes, climbs, 0.95)
    assert [(entry.volume_class, entry.volumes, entry.climb_percent) for entry in found] == [
        ("small", 2, 9.0),
        ("big", 60, 0.0),
    ]
    assert float(np.quantile(climbs, 0.95)) == 0.0  # what one fleet-wide quantile would say


@given(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=50))
def test_one_class_is_the_fleet_quantile(climbs: list[float]) -> None:
    (only,) = class_climbs(["one"] * len(climbs), climbs, 0.95)
    assert only.climb_percent == pytest.approx(float(np.quantile(climbs, 0.95)))
    assert only.volumes == len(climbs)
