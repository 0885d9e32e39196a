"""Threshold tuning recommends enough warning with least throttling; balance finds skew."""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import pandas as pd
import pytest

from spark_history.balance import balance
from spark_history.thresholds import TuningParams, summarise_tradeoffs, threshold_tradeoffs

from .conftest import RowsFactory
from .history_frames import AT, volume_frame

pytestmark = pytest.mark.spark

CAPACITY = 1_000_000


def test_recommends_the_cheapest_candidate_with_enough_warning(make_rows: RowsFactory) -> None:
    # Used % climbs 1 point an hour from 70% to 99%, then drops back: two such episodes.
    climb = np.arange(0, 30, 0.05)  # hours
    used = 70.0 + climb  # percent
    hours = np.concatenate([climb - 100.0, climb - 40.0])
    consumed = np.concatenate([used, used]) * CAPACITY / 100.0
    frame = volume_frame([0], "/dev/a", hours, consumed, CAPACITY)
    params = TuningParams(
        soft_grid=(10.0, 15.0, 20.0), hard_grid=(2.0, 5.0), min_warning_hours=8.0, max_gap_hours=0.1
    )
    table = threshold_tradeoffs(make_rows(frame), AT, params).set_index(
        ["softPercent", "hardPercent"]
    )
    # Warning = (soft - hard) points at 1 point an hour; throttled hours per episode the same.
    for key, row in table.iterrows():
        soft, hard = cast(tuple[float, float], key)
        assert row["hardEpisodes"] == 2
        assert row["minWarningHours"] == pytest.approx(soft - hard, abs=0.06)
        assert row["throttledHours"] == pytest.approx(2 * (soft - hard), abs=0.2)
        assert row["meetsMinimumWarning"] == (soft - hard >= 8.0 - 0.06)
    recommended = table[table["recommended"]]
    assert recommended.index.tolist() == [(10.0, 2.0)]  # 8 h warning, the least throttling


def test_no_recommendation_without_observed_hard_breaches() -> None:
    summed = pd.DataFrame(
        {
            "softPercent": [10.0],
            "hardPercent": [5.0],
            "throttledHours": [0.0],
            "pausedHours": [0.0],
            "flips": [0],
            "episodes": [0],
            "hardEpisodes": [0],
            "warnings": [[]],
        }
    )
    table = summarise_tradeoffs(summed, 6.0)
    assert not table["recommended"].any()
    assert math.isnan(cast(float, table.loc[0, "minWarningHours"]))


def test_balance_flags_the_odd_volume_and_the_odd_broker(make_rows: RowsFactory) -> None:
    hours = [-1.0, 0.0]
    frames = []
    # Brokers 0-4: four volumes at 50, 52, 54, 56 %; broker 0's last volume at 95 % instead.
    for broker in range(5):
        for index, base in enumerate((50.0, 52.0, 54.0, 56.0)):
            percent = 95.0 if broker == 0 and index == 3 else base
            frames.append(
                volume_frame(
                    [broker], f"/dev/v{index}", hours, [percent * CAPACITY / 100] * 2, CAPACITY
                )
            )
    # Broker 5: every volume at 90 %.
    for index in range(4):
        frames.append(volume_frame([5], f"/dev/v{index}", hours, [0.9 * CAPACITY] * 2, CAPACITY))
    result = (
        balance(make_rows(pd.concat(frames)), AT).toPandas().set_index(["brokerId", "volumeName"])
    )
    odd = cast(pd.Series, result.loc[(0, "/dev/v3")])
    # Broker 0: median of 50, 52, 54, 95 = 53; MAD = median(3, 1, 1, 42) = 2 -> scale 2.9652.
    assert odd["brokerMedianPercent"] == pytest.approx(53.0)
    assert odd["zWithinBroker"] == pytest.approx((95.0 - 53.0) / (2 * 1.4826))
    assert bool(odd["volumeSkewed"])
    assert result["volumeSkewed"].sum() == 1
    # Brokers use 53, 53, 53, 53, 53 (broker 0: 62.75) and 90 % -> broker 5 stands out.
    assert bool(result.loc[(5, "/dev/v0"), "brokerSkewed"])
    assert not result.loc[(1, "/dev/v0"), "brokerSkewed"]
