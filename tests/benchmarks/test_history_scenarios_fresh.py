"""The blind scenarios look like what publishers publish, and their truths agree with the rows."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from benchmarks.history_scenario_truth import Truth
from benchmarks.history_scenarios_fresh import AT, generate

HORIZON = 168.0
VOLUMES = 160
COLUMNS = ["brokerId", "volumeName", "path", "snapshotAt", "capacity", "consumed", "free"]
BASE_KINDS = {
    "steady",
    "slow",
    "weekly",
    "ramp",
    "doubling",
    "plateau",
    "stopped",
    "retention-cut",
    "disk-replaced",
    "resized",
    "moved-in",
    "moved-out",
    "full",
    "retired",
}
DATA_FLAWS = {"gap", "dup", "skew", "tombstone"}
MAX_SKEW = timedelta(hours=6)
"""Generous: the brief asks for a clock wrong by minutes to hours."""


@dataclass(frozen=True)
class Scenario:
    rows: pd.DataFrame
    tombstones: pd.DataFrame
    truths: list[Truth]
    seconds: float
    volumes: dict[tuple[int, str], pd.DataFrame]
    """Each volume's rows in time order."""

    def volume(self, truth: Truth) -> pd.DataFrame:
        return self.volumes[(truth.broker_id, truth.volume_name)]


@pytest.fixture(scope="module", params=[2026, 7])
def scenario(request: pytest.FixtureRequest) -> Scenario:
    started = time.perf_counter()
    rows, tombstones, truths = generate(request.param, VOLUMES, HORIZON)
    seconds = time.perf_counter() - started
    ordered = rows.sort_values("snapshotAt", kind="stable")
    volumes = {
        (int(frame["brokerId"].iloc[0]), str(frame["volumeName"].iloc[0])): frame
        for _, frame in ordered.groupby(["brokerId", "volumeName"], sort=False)
    }
    return Scenario(rows, tombstones, truths, seconds, volumes)


def _labels(truth: Truth) -> set[str]:
    return set(truth.kind.split("+"))


def _base(truth: Truth) -> str:
    return truth.kind.split("+")[0]


def _hours(stamps: pd.Series) -> npt.NDArray[np.float64]:
    """Hours after AT, in time order, repeats removed."""
    hours = (stamps - pd.Timestamp(AT)).dt.total_seconds().to_numpy(dtype=np.float64) / 3600.0
    return np.unique(hours)


def _brokers_with(truths: list[Truth], label: str) -> set[int]:
    return {t.broker_id for t in truths if label in _labels(t)}


def test_columns_and_dtypes_are_the_wire_format(scenario: Scenario) -> None:
    rows, tombstones = scenario.rows, scenario.tombstones
    assert list(rows.columns) == COLUMNS
    for column in ("brokerId", "capacity", "consumed", "free"):
        assert rows[column].dtype == "int64", column
    assert str(rows["snapshotAt"].dtype) == "datetime64[ns, UTC]"
    for column in ("volumeName", "path"):
        assert all(isinstance(value, str) for value in rows[column]), column
    assert rows["volumeName"].str.startswith("/dev/").all()
    assert rows["path"].str.startswith("/").all()
    assert list(tombstones.columns) == ["brokerId", "snapshotAt"]
    assert tombstones["brokerId"].dtype == "int64"
    assert str(tombstones["snapshotAt"].dtype) == "datetime64[ns, UTC]"
    assert AT.tzinfo is not None
    assert AT.utcoffset() == timedelta(0)


def test_byte_counts_are_what_a_filesystem_reports(scenario: Scenario) -> None:
    rows = scenario.rows
    assert (rows["capacity"] > 0).all()
    assert (rows["consumed"] >= 0).all()
    assert (rows["consumed"] <= rows["capacity"]).all()
    assert (rows["free"] >= 0).all()
    assert (rows["free"] <= rows["capacity"] - rows["consumed"]).all()
    held_back = rows["capacity"] - rows["consumed"] - rows["free"]
    assert (held_back <= rows["capacity"] // 100).all(), "free may only be slightly less"


def test_every_broker_has_two_to_eight_volumes(scenario: Scenario) -> None:
    rows = scenario.rows
    per_broker = rows.groupby("brokerId")["volumeName"].nunique()
    assert per_broker.between(2, 8).all()
    paths = rows.groupby(["brokerId", "volumeName"])["path"].nunique()
    assert (paths == 1).all()


def test_timestamps_end_at_at_except_the_skewed_clock(scenario: Scenario) -> None:
    rows, truths = scenario.rows, scenario.truths
    at = pd.Timestamp(AT)
    skewed = _brokers_with(truths, "skew")
    assert len(skewed) == 1
    normal = rows[~rows["brokerId"].isin(skewed)]
    assert normal["snapshotAt"].max() <= at
    assert rows["snapshotAt"].max() <= at + MAX_SKEW
    assert rows[rows["brokerId"].isin(skewed)]["snapshotAt"].min() >= at - timedelta(days=15)
    retired = _brokers_with(truths, "retired")
    for broker, stamps in normal.groupby("brokerId")["snapshotAt"]:
        assert at - timedelta(days=15) <= stamps.min() <= at - timedelta(days=7), broker
        if broker not in retired:
            assert stamps.max() >= at - timedelta(minutes=10), broker
        assert 50 <= np.median(np.diff(_hours(stamps))) * 3600 <= 310, broker


def test_same_seed_same_scenario_other_seed_other_scenario() -> None:
    first = generate(7, 24, HORIZON)
    again = generate(7, 24, HORIZON)
    other = generate(8, 24, HORIZON)
    pd.testing.assert_frame_equal(first[0], again[0])
    pd.testing.assert_frame_equal(first[1], again[1])
    assert first[2] == again[2]
    assert not first[0].equals(other[0])
    assert first[2] != other[2]


@pytest.mark.parametrize("volumes", [1, 2, 7, 33])
def test_one_truth_per_volume_in_small_mixes(volumes: int) -> None:
    rows, _, truths = generate(11, volumes, HORIZON)
    keys = [(t.broker_id, t.volume_name) for t in truths]
    assert len(truths) == volumes
    assert len(set(keys)) == volumes
    assert set(keys) == set(zip(rows["brokerId"], rows["volumeName"], strict=True))


def test_one_truth_per_volume_and_the_keys_match_the_rows(scenario: Scenario) -> None:
    rows, truths = scenario.rows, scenario.truths
    keys = [(t.broker_id, t.volume_name) for t in truths]
    assert len(truths) == VOLUMES
    assert len(set(keys)) == VOLUMES
    assert set(keys) == set(zip(rows["brokerId"], rows["volumeName"], strict=True))


def test_full_volumes_fill_now_and_sat_at_capacity_for_hours(scenario: Scenario) -> None:
    for truth in scenario.truths:
        if truth.retired:
            continue
        volume = scenario.volume(truth)
        last = volume.iloc[-1]
        if "full" in _labels(truth):
            assert truth.fill_hours == 0.0, truth
            recent = volume[volume["snapshotAt"] >= last["snapshotAt"] - timedelta(hours=2)]
            assert len(recent) >= 2, truth
            assert (recent["consumed"] == recent["capacity"]).all(), truth
            assert (recent["free"] == 0).all(), truth
        else:
            assert truth.fill_hours != 0.0, truth
            assert last["consumed"] < last["capacity"], truth


def test_a_fill_agrees_with_the_last_observed_usage(scenario: Scenario) -> None:
    for truth in scenario.truths:
        if truth.retired or truth.fill_hours is None:
            continue
        assert 0.0 <= truth.fill_hours <= 3 * HORIZON, truth
        volume = scenario.volume(truth)
        last = volume.iloc[-1]
        if truth.fill_hours > 0:
            assert last["free"] > 0, truth
        if 0 < truth.fill_hours <= HORIZON:  # no faster than a few times the recent growth
            needed = (1 - last["consumed"] / last["capacity"]) / truth.fill_hours
            assert needed <= 8 * _fastest_growth(volume), truth


def _fastest_growth(volume: pd.DataFrame) -> float:
    """The fastest rise of the used share over six hours in the last three days, per hour."""
    recent = volume[volume["snapshotAt"] >= volume["snapshotAt"].iloc[-1] - timedelta(days=3)]
    share = (recent["consumed"] / recent["capacity"]).set_axis(recent["snapshotAt"])
    hourly = share.resample("1h").last().ffill()
    return float(hourly.diff(6).max()) / 6


def test_retired_brokers_are_silent_and_never_fill(scenario: Scenario) -> None:
    rows, tombstones, truths = scenario.rows, scenario.tombstones, scenario.truths
    at = pd.Timestamp(AT)
    retired = {t.broker_id for t in truths if t.retired}
    assert retired == _brokers_with(truths, "retired")
    assert len(retired) >= 2
    for truth in truths:
        if truth.retired:
            assert truth.fill_hours is None, truth
    recent = rows[rows["snapshotAt"] > at - timedelta(hours=48)]
    assert not recent["brokerId"].isin(retired).any()
    active = set(rows["brokerId"]) - retired
    assert active <= set(rows[rows["snapshotAt"] > at - timedelta(hours=24)]["brokerId"])
    tombstoned = set(tombstones["brokerId"])
    assert tombstoned, "some retired brokers left a tombstone"
    assert tombstoned < retired, "some retired brokers did not"
    assert tombstoned == _brokers_with(truths, "tombstone")
    for broker, stamp in zip(tombstones["brokerId"], tombstones["snapshotAt"], strict=True):
        assert rows[rows["brokerId"] == broker]["snapshotAt"].max() < stamp <= at


def test_the_mix_holds_every_kind_several_times(scenario: Scenario) -> None:
    truths = scenario.truths
    counts = Counter(label for truth in truths for label in _labels(truth))
    assert set(counts) == BASE_KINDS | DATA_FLAWS
    for kind in BASE_KINDS:
        assert counts[kind] >= 3, kind
    assert Counter(_base(t) for t in truths).keys() == BASE_KINDS


def test_kinds_fill_as_their_names_say(scenario: Scenario) -> None:
    truths = scenario.truths
    for truth in truths:
        base = _base(truth)
        if base in ("plateau", "stopped"):
            assert truth.fill_hours is None, truth
        elif base in ("steady", "weekly"):
            assert truth.fill_hours is not None, truth
            assert 0 < truth.fill_hours <= HORIZON, truth
        elif base == "slow":
            assert truth.fill_hours is None or truth.fill_hours > HORIZON, truth
    active = [t for t in truths if not t.retired]
    within = [t for t in active if t.fill_hours is not None and t.fill_hours <= HORIZON]
    assert 0.2 * len(active) <= len(within) <= 0.8 * len(active)
    weekday = {(AT + timedelta(hours=t.fill_hours)).weekday() for t in within if t.fill_hours}
    assert {5, 6} & weekday, "some fills happen over a weekend"
    assert {0, 1, 2, 3, 4} & weekday, "some on weekdays"


def test_gaps_last_half_a_day_to_two_days_one_ending_in_the_last_day(
    scenario: Scenario,
) -> None:
    rows, truths = scenario.rows, scenario.truths
    gapped = _brokers_with(truths, "gap")
    assert gapped
    recent_end = False
    for broker, stamps in rows.groupby("brokerId")["snapshotAt"]:
        hours = _hours(stamps)
        widest = int(np.argmax(np.diff(hours)))
        if broker in gapped:
            assert 12 <= hours[widest + 1] - hours[widest] <= 49, broker
            recent_end |= hours[widest + 1] >= -24
        else:
            assert hours[widest + 1] - hours[widest] < 12, broker
    assert recent_end


def test_duplicated_snapshots_only_where_labelled(scenario: Scenario) -> None:
    rows, truths = scenario.rows, scenario.truths
    repeated = set(rows[rows.duplicated(keep=False)]["brokerId"])
    assert repeated == _brokers_with(truths, "dup")


def test_disk_replacement_drops_to_almost_nothing_then_recovers(scenario: Scenario) -> None:
    for truth in (t for t in scenario.truths if _base(t) == "disk-replaced"):
        volume = scenario.volume(truth)
        share = (volume["consumed"] / volume["capacity"]).to_numpy()
        hours = (volume["snapshotAt"] - pd.Timestamp(AT)).dt.total_seconds().to_numpy() / 3600
        low = int(np.argmin(share))
        assert share[low] <= 0.025, truth
        before = share[:low][share[:low] > 0.1][-1]
        after = share[hours >= hours[low] + 12][0]
        assert after >= 0.7 * before, truth


def test_only_resized_volumes_change_capacity_and_only_upwards(scenario: Scenario) -> None:
    for truth in scenario.truths:
        capacities = scenario.volume(truth)["capacity"]
        if _base(truth) == "resized":
            assert capacities.nunique() == 2, truth
            assert capacities.is_monotonic_increasing, truth
        else:
            assert capacities.nunique() == 1, truth


def test_moves_and_retention_cuts_are_steps(scenario: Scenario) -> None:
    for truth in scenario.truths:
        base = _base(truth)
        if base not in ("moved-in", "moved-out", "retention-cut"):
            continue
        volume = scenario.volume(truth).set_index("snapshotAt")
        share = (volume["consumed"] / volume["capacity"]).resample("1h").last().ffill()
        change = share.diff(6)
        if base == "moved-in":
            assert change.max() >= 0.03, truth
        else:
            assert change.min() <= -0.03, truth


def test_generation_is_quick(scenario: Scenario) -> None:
    assert scenario.seconds < 60.0, "about 1 s here; the brief allows 20 s at 160 volumes"
