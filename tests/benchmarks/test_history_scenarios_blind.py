"""The blind history scenarios: frames as a publisher would have published them, sound truths."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from benchmarks.history_scenario_truth import Truth
from benchmarks.history_scenarios_blind import AT, _ar1, generate

HORIZON = 168.0
Scenario = tuple[pd.DataFrame, pd.DataFrame, list[Truth]]
KINDS = {
    "steady",
    "accelerating",
    "new-topic",
    "slowdown",
    "retention-plateau",
    "retention-growing",
    "weekly",
    "retention-cut",
    "disk-replacement",
    "resize",
    "full",
    "gap",
    "duplicates",
    "skew",
    "retired",
    "tombstone",
}


@pytest.fixture(scope="module")
def fleet() -> Scenario:
    return generate(2026, 160, HORIZON)


def volume_rows(rows: pd.DataFrame, truth: Truth) -> pd.DataFrame:
    mine = (rows["brokerId"] == truth.broker_id) & (rows["volumeName"] == truth.volume_name)
    return rows[mine]


def labels(truth: Truth) -> set[str]:
    return set(truth.kind.split("+"))


def test_frames_have_the_published_columns_and_types(fleet: Scenario) -> None:
    rows, tombstones, _ = fleet
    assert list(rows.columns) == [
        "brokerId",
        "volumeName",
        "path",
        "snapshotAt",
        "capacity",
        "consumed",
        "free",
    ]
    for column in ("brokerId", "capacity", "consumed", "free"):
        assert rows[column].dtype == np.int64, column
    assert isinstance(rows["snapshotAt"].dtype, pd.DatetimeTZDtype)
    assert str(rows["snapshotAt"].dt.tz) == "UTC"
    assert all(isinstance(v, str) for v in rows["volumeName"].unique())
    assert all(isinstance(p, str) and p.startswith("/") for p in rows["path"].unique())
    assert list(tombstones.columns) == ["brokerId", "snapshotAt"]
    assert tombstones["brokerId"].dtype == np.int64
    assert isinstance(tombstones["snapshotAt"].dtype, pd.DatetimeTZDtype)


def test_a_seed_gives_the_same_scenario_and_another_seed_another() -> None:
    first, again, other = (
        generate(11, 24, HORIZON),
        generate(11, 24, HORIZON),
        generate(12, 24, 168),
    )
    pd.testing.assert_frame_equal(first[0], again[0])
    pd.testing.assert_frame_equal(first[1], again[1])
    assert first[2] == again[2]
    assert not first[0]["consumed"].equals(other[0]["consumed"])


def test_bytes_are_consistent(fleet: Scenario) -> None:
    rows = fleet[0]
    assert (rows["free"] == rows["capacity"] - rows["consumed"]).all()
    assert (rows["consumed"] >= 0).all()
    assert (rows["consumed"] <= rows["capacity"]).all()
    assert (rows["capacity"] > 0).all()


def test_snapshots_are_sorted_per_volume_and_history_ends_at_at(fleet: Scenario) -> None:
    rows, _, truths = fleet
    grouped = rows.groupby(["brokerId", "volumeName"], sort=False)["snapshotAt"]
    assert grouped.apply(lambda s: s.is_monotonic_increasing).all()
    at = pd.Timestamp(AT)
    assert rows["snapshotAt"].max() < at + pd.Timedelta(minutes=15)
    assert rows["snapshotAt"].min() >= at - pd.Timedelta(days=10, hours=3)
    assert rows["snapshotAt"].min() <= at - pd.Timedelta(days=7)
    skewed = {t.broker_id for t in truths if "skew" in labels(t)}
    assert set(rows.loc[rows["snapshotAt"] >= at, "brokerId"]) <= skewed


def test_one_truth_per_volume_and_each_has_rows(fleet: Scenario) -> None:
    rows, _, truths = fleet
    keys = [(t.broker_id, t.volume_name) for t in truths]
    assert len(keys) == len(set(keys)) == 160
    observed = set(rows[["brokerId", "volumeName"]].itertuples(index=False, name=None))
    assert observed == set(keys)
    per_broker = rows.groupby("brokerId")["volumeName"].nunique()
    assert per_broker.between(2, 6).all()


def test_small_fleets_are_generated() -> None:
    for volumes in (1, 2, 3, 7):
        rows, _, truths = generate(5, volumes, 48.0)
        assert len(truths) == volumes
        assert rows.groupby(["brokerId", "volumeName"]).ngroups == volumes


def test_full_volumes_are_at_capacity_at_the_end_of_their_history(fleet: Scenario) -> None:
    rows, _, truths = fleet
    full = [t for t in truths if t.fill_hours == 0.0]
    assert full
    for truth in full:
        assert "full" in labels(truth)
        last = volume_rows(rows, truth).iloc[-1]
        assert last["consumed"] == last["capacity"]
        assert last["free"] == 0
    assert all(t.fill_hours == 0.0 for t in truths if "full" in labels(t))


def test_retired_brokers_are_silent_for_a_day_and_have_no_fill(fleet: Scenario) -> None:
    rows, _, truths = fleet
    retired = {t.broker_id for t in truths if t.retired}
    assert len(retired) >= 2
    assert all(t.retired for t in truths if t.broker_id in retired)
    assert all(t.fill_hours is None for t in truths if t.retired)
    recent = rows[rows["snapshotAt"] >= pd.Timestamp(AT - timedelta(hours=24))]
    assert not set(recent["brokerId"]) & retired


def test_tombstones_are_for_retired_brokers_after_their_last_snapshot(fleet: Scenario) -> None:
    rows, tombstones, truths = fleet
    retired = {t.broker_id for t in truths if t.retired}
    assert len(tombstones) >= 1
    assert set(tombstones["brokerId"]) <= retired
    assert set(tombstones["brokerId"]) < retired  # some retired brokers are merely silent
    last = rows.groupby("brokerId")["snapshotAt"].max()
    for broker_id, deleted in zip(tombstones["brokerId"], tombstones["snapshotAt"], strict=True):
        assert deleted > last[broker_id]
        assert deleted < pd.Timestamp(AT)


def test_a_sensible_share_fills_within_the_horizon_at_spread_times(fleet: Scenario) -> None:
    truths = fleet[2]
    candidates = [t for t in truths if not t.retired and t.fill_hours != 0.0]
    fills = [t.fill_hours for t in candidates if t.fill_hours is not None]
    assert 0.4 <= len(fills) / len(candidates) <= 0.6
    assert all(0.0 < h <= HORIZON for h in fills)
    assert min(fills) < 24.0
    assert max(fills) > 130.0
    assert not any(t.fill_hours for t in truths if "retention-plateau" in labels(t))


def test_every_phenomenon_is_present(fleet: Scenario) -> None:
    present = set().union(*(labels(t) for t in fleet[2]))
    assert present == KINDS


def test_duplicate_snapshots_are_published(fleet: Scenario) -> None:
    rows, _, truths = fleet
    duplicated = rows[rows.duplicated(keep=False)]
    assert len(duplicated) > 0
    with_duplicates = {t.broker_id for t in truths if "duplicates" in labels(t)}
    assert set(duplicated["brokerId"]) <= with_duplicates


def test_a_resized_volume_grows_its_capacity(fleet: Scenario) -> None:
    rows, _, truths = fleet
    resized = [t for t in truths if "resize" in labels(t)]
    assert resized
    for truth in resized:
        capacity = volume_rows(rows, truth)["capacity"]
        assert capacity.iloc[-1] > capacity.iloc[0]
        assert capacity.is_monotonic_increasing


def test_a_replaced_disk_empties_then_refills(fleet: Scenario) -> None:
    rows, _, truths = fleet
    replaced = [t for t in truths if "disk-replacement" in labels(t)]
    assert replaced
    for truth in replaced:
        consumed = volume_rows(rows, truth)["consumed"].to_numpy()
        low = int(consumed.min())
        assert low < 0.06 * float(np.median(consumed))
        assert int(consumed[-1]) > 10 * low


def consumed_at(mine: pd.DataFrame, when: pd.Timestamp) -> float:
    """The last consumed bytes published at or before ``when``."""
    stamps = mine["snapshotAt"].to_numpy(dtype="datetime64[ns]")
    index = int(np.searchsorted(stamps, np.datetime64(when.tz_convert(None)), side="right"))
    return float(mine["consumed"].to_numpy()[index - 1])


def test_weekends_grow_slower_than_weekdays(fleet: Scenario) -> None:
    rows, _, truths = fleet
    at = pd.Timestamp(AT)
    saturday = (at - pd.Timedelta(days=(at.dayofweek - 5) % 7)).normalize()
    monday = saturday + pd.Timedelta(days=2)
    six, forty_two = pd.Timedelta(hours=6), pd.Timedelta(hours=42)
    ratios = []
    for truth in truths:
        if truth.kind != "steady+weekly":
            continue
        mine = volume_rows(rows, truth)
        weekend = consumed_at(mine, saturday + forty_two) - consumed_at(mine, saturday + six)
        weekday = consumed_at(mine, monday + forty_two) - consumed_at(mine, monday + six)
        ratios.append(weekend / weekday)
    assert len(ratios) >= 3
    assert float(np.median(ratios)) < 0.7


def test_the_noise_is_autocorrelated_not_white() -> None:
    rng = np.random.default_rng(3)
    series = _ar1(rng, 20_000, 0.97, 2.0)
    assert abs(float(series.std()) - 2.0) < 0.4
    lag_one = float(np.corrcoef(series[:-1], series[1:])[0, 1])
    assert 0.93 < lag_one < 0.99
