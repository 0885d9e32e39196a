"""Threshold tuning recommends enough warning with least throttling; balance finds skew."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import cast

import numpy as np
import pandas as pd
import pytest

from schemas.decision import QuotaState
from spark_history.advice import advice_text
from spark_history.balance import balance
from spark_history.override_history import OverrideInterval
from spark_history.thresholds import TuningParams, threshold_tradeoffs

from .conftest import RowsFactory
from .history_frames import AT, volume_frame

pytestmark = pytest.mark.spark

CAPACITY = 1_000_000


def test_recommends_the_cheapest_candidate_with_enough_warning(make_rows: RowsFactory) -> None:
    # Used % climbs 1 point an hour from 70% to ~100%, twice: from -100.5 h and from -40.5 h
    # (crossings fall mid-hour, so each hour bucket is in one state until the crossing).
    climb = np.arange(0, 29.99, 0.05)  # hours
    used = 70.0 + climb  # percent
    hours = np.concatenate([climb - 100.5, climb - 40.5])
    consumed = np.concatenate([used, used]) * CAPACITY / 100.0
    frame = volume_frame([0], "/dev/a", hours, consumed, CAPACITY)  # in force: 10/5
    params = TuningParams(soft_grid=(10.0, 15.0, 20.0), hard_grid=(2.0, 5.0), min_warning_hours=8.0)
    replay = threshold_tradeoffs(make_rows(frame), AT, params)
    candidates = replay.table[replay.table["limits"] == "candidate"]
    table = candidates.set_index(["softPercent", "hardPercent"])
    for key, row in table.iterrows():
        soft, hard = cast(tuple[float, float], key)
        # Warning = (soft - hard) points at 1 point an hour; THROTTLE for as long, per climb.
        assert row["hardEpisodes"] == 2
        assert row["minWarningHours"] == pytest.approx(soft - hard)
        assert row["throttledHours"] == pytest.approx(2 * (soft - hard))
        # PAUSE from the hard crossing (at -100.5 + 30 - hard h) until the next climb starts
        # (bucket -41 is the last paused one: a breach holds until a snapshot clears it),
        # then from the second crossing to the end.
        first = math.ceil(-70.5 - hard)
        second = math.ceil(-10.5 - hard)
        assert row["pausedHours"] == (-41 - first + 1) + (0 - second + 1)
        assert row["meetsMinimumWarning"] == (soft - hard >= 8.0)
    assert table[table["recommended"]].index.tolist() == [(10.0, 2.0)]  # the least throttling
    in_force = replay.table[replay.table["limits"] == "in force"].iloc[0]
    assert in_force["throttledHours"] == 2 * (10 - 5)
    # One volume climbing 1 point an hour: 8 points within the 8 h asked for; today's 10/5
    # leaves 5, so a safer pair may cost more, and says so first.
    assert replay.evidence.climb_percent == pytest.approx(8.0)
    assert replay.evidence.in_force.soft_percent == 10.0
    advice = advice_text(replay.table, replay.evidence, 30, 8.0)
    # 10/2 throttles 16 h against 10 h today and pauses at 2 % instead of 5 %: the first
    # sentence says both, with both figures.
    first_sentence = advice.split(". ", 1)[0]
    assert first_sentence.startswith("Caution"), advice
    assert "16 h throttled" in first_sentence
    assert "10 h throttled" in first_sentence
    assert "pauses later (hard 2% free instead of 5%)" in first_sentence


def test_a_fleet_that_never_paused_gets_no_recommendation_that_pauses(
    make_rows: RowsFactory,
) -> None:
    # Four brokers, two volumes each, limits 10/5 in force. Free space is 7.2% during UTC hours
    # 10-15 on brokers 0-1 and 8.5% during hours 12-19 on brokers 2-3 (THROTTLE, never PAUSE),
    # 20% otherwise. Snapshots every 5 minutes, off the hour boundaries, for exactly 72 hours.
    hours = np.arange(-72 * 60, 0, 5) / 60.0 + 2.5 / 60.0
    hour_of_day = np.floor(hours + 12.0) % 24  # AT is 12:00 UTC
    frames = []
    windows = {0: (10, 16, 0.072), 1: (10, 16, 0.072), 2: (12, 20, 0.085), 3: (12, 20, 0.085)}
    for broker, (start, end, low_free) in windows.items():
        low = (hour_of_day >= start) & (hour_of_day < end)
        free = np.where(low, low_free, 0.20) * CAPACITY
        for volume in ("/dev/a", "/dev/b"):
            frames.append(volume_frame([broker], volume, hours, CAPACITY - free, CAPACITY))
    replay = threshold_tradeoffs(make_rows(pd.concat(frames)), AT, TuningParams())
    table = replay.table
    in_force = table[table["limits"] == "in force"].iloc[0]
    # The cluster is throttled in the union of the windows, hours 10-19: 10 h a day.
    assert in_force["throttledHours"] == 30.0
    assert in_force["pausedHours"] == 0.0
    # Free space falls 12.8 points at once: the soft limit must sit that far above the hard
    # one for the jump to end in THROTTLE. 10/5 leaves 5; of the pairs that leave 12.8, 15/2
    # throttles no more than today (the dips) and never pauses.
    assert replay.evidence.climb_percent == pytest.approx(12.8)
    assert replay.evidence.lowest_free_percent == pytest.approx(7.2)
    best = table[table["recommended"]].iloc[0]
    assert (best["softPercent"], best["hardPercent"]) == (15.0, 2.0)
    assert best["pausedHours"] == 0.0
    assert best["throttledHours"] == in_force["throttledHours"]
    advice = advice_text(table, replay.evidence, 30, 6.0)
    assert advice.startswith("Caution: the recommended limits (soft 15% free, hard 2% free)")
    assert "pauses later (hard 2% free instead of 5%)" in advice.split(". ", 1)[0]
    # 12.5/7.5 (what the per-volume tool recommended) pauses brokers 0-1's hours 10-15.
    old = table[(table["softPercent"] == 12.5) & (table["hardPercent"] == 7.5)].iloc[0]
    assert old["pausedHours"] == 18.0
    assert not old["recommended"]


def test_a_soft_limit_under_the_worst_dip_is_never_recommended(make_rows: RowsFactory) -> None:
    # 10/5 in force. Free space falls half a point an hour from 30 % to 8 %, once (from 60 h
    # before AT), stays there an hour and is back to 30 %: 3 points within 6 h, which 10/5
    # covers. 7.5/5 would never have throttled, and would never have warned of that dip: it is
    # not eligible, and no eligible pair is cheaper than today's.
    hours = np.arange(-72 * 60, 0, 5) / 60.0
    descent = np.clip(30.0 - 0.5 * (hours + 60.0), 8.0, 30.0)
    free = np.where(hours < -15.0, descent, 30.0)
    frame = volume_frame([0], "/dev/a", hours, (100.0 - free) * CAPACITY / 100.0, CAPACITY)
    replay = threshold_tradeoffs(make_rows(frame), AT, TuningParams())
    candidates = replay.table[replay.table["limits"] == "candidate"]
    table = candidates.set_index(["softPercent", "hardPercent"])
    assert replay.evidence.lowest_free_percent == pytest.approx(8.0, abs=0.1)
    assert replay.evidence.climb_percent == pytest.approx(3.0, abs=0.1)
    assert table.loc[(7.5, 5.0), "throttledHours"] == 0.0
    assert not table.loc[(7.5, 5.0), "warnsAtWorstDip"]
    assert table.loc[(10.0, 3.0), "warnsAtWorstDip"]
    assert not replay.table["recommended"].any(), replay.table.to_string()
    advice = advice_text(replay.table, replay.evidence, 30, 6.0)
    assert advice.startswith("Keep the limits in force (soft 10% free, hard 5% free"), advice
    assert "lowest free share seen was 8.0%" in advice


def test_hours_an_override_decided_make_no_candidate_cheaper(make_rows: RowsFactory) -> None:
    # 10/5 in force. Free space steps from 26 % to 17 % for the 20 h from 40 h before AT (a
    # 9-point climb at once: 10/5 leaves 5 points between its limits, too few), then back.
    # 20/5 throttles those 20 h, 15/5 none: 15/5 is the cheaper. But an operator forced
    # OPEN over them: no limits could have changed those hours, and they decide nothing.
    hours = np.arange(-72 * 60, 0, 5) / 60.0 + 2.5 / 60.0
    free = np.where((hours >= -40.0) & (hours < -20.0), 17.0, 26.0)
    frame = volume_frame([0], "/dev/a", hours, (100.0 - free) * CAPACITY / 100.0, CAPACITY)
    rows = make_rows(frame)
    params = TuningParams(soft_grid=(15.0, 20.0), hard_grid=(5.0,))

    def recommended(table: pd.DataFrame) -> list[tuple[float, float]]:
        best = table[table["recommended"]]
        return list(zip(best["softPercent"], best["hardPercent"], strict=True))

    by_rule = threshold_tradeoffs(rows, AT, params)
    assert recommended(by_rule.table) == [(15.0, 5.0)]
    opened = OverrideInterval(
        (AT - timedelta(hours=41)).timestamp(),
        (AT - timedelta(hours=19)).timestamp(),
        QuotaState.OPEN,
    )
    replay = threshold_tradeoffs(rows, AT, params, overrides=[opened])
    table = replay.table
    # Every bucket from the one ending 40 h before AT to the one ending 20 h before it lies
    # wholly in the override: 21 hours, for the limits in force and every candidate alike.
    assert table["overrideOpenHours"].tolist() == [21.0, 21.0, 21.0]
    assert table["overridePausedHours"].tolist() == [0.0, 0.0, 0.0]
    assert table["throttledHours"].tolist() == [0.0, 0.0, 0.0]
    # The same cost: the higher soft limit (more margin) is recommended.
    assert recommended(table) == [(20.0, 5.0)]
    advice = advice_text(table, replay.evidence, 30, 6.0)
    assert advice.endswith(
        "Operators' overrides decided 21 h of the period (21 h forced OPEN, 0 h forced "
        "PAUSE): the same under any limits, they are not counted in the hours above."
    ), advice


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


def test_a_few_small_disks_climbing_fast_are_not_averaged_away_by_many_large_ones(
    make_rows: RowsFactory,
) -> None:
    # 60 volumes of 8 TiB stay at 70 % used; 2 volumes of 1 GiB climb from 70 % to 79 % within
    # 6 h once (a burst), then fall back. Over all 62 volumes the 95th percentile of the climb is
    # 0 points; over the 1 GiB class it is 9: a soft limit 5 points above the hard one (10/5, in
    # force) would give those disks less than 6 h of warning, so it does not cover the climb.
    hours = np.arange(-72 * 60, 0, 5) / 60.0
    large, small = 2**43, 2**30
    burst = np.clip(1.5 * (hours + 40.0), 0.0, 9.0)
    small_used = np.where(hours < -30.0, 70.0 + burst, 70.0)
    frames = [
        volume_frame(list(range(30)), volume, hours, np.full(hours.size, 0.7 * large), large)
        for volume in ("/dev/a", "/dev/b")
    ]
    frames += [
        volume_frame([30], volume, hours, small_used * small / 100.0, small)
        for volume in ("/dev/a", "/dev/b")
    ]
    replay = threshold_tradeoffs(make_rows(pd.concat(frames)), AT, TuningParams())
    classes = replay.evidence.climb_by_class
    assert [(entry.volume_class, entry.volumes) for entry in classes] == [
        ("1 GiB-2 GiB", 2),
        ("8 TiB-16 TiB", 60),
    ]
    assert classes[0].climb_percent == pytest.approx(9.0, abs=0.2)
    assert classes[1].climb_percent == pytest.approx(0.0, abs=0.01)
    assert replay.evidence.climb_percent == pytest.approx(9.0, abs=0.2)
    table = replay.table
    in_force = table[table["limits"] == "in force"].iloc[0]
    assert not in_force["coversFleetClimb"]
    best = table[table["recommended"]]
    assert len(best) == 1
    assert best.iloc[0]["softPercent"] - best.iloc[0]["hardPercent"] >= 9.0
    advice = advice_text(table, replay.evidence, 30, 6.0)
    assert "over the 2 volumes of 1 GiB-2 GiB, the steepest of 2 capacity classes" in advice
