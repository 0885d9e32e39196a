"""The field scenario generator, checked from the outside: wire format, truths against the rows."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from benchmarks.history_scenario_truth import Truth
from benchmarks.history_scenarios_field import AT, generate

SEED, VOLUMES, HORIZON = 2026, 160, 1440.0
BLOCK = 4096
FILLING = {"steady", "weekly", "accelerating", "new_tenant", "sawtooth_rising"}
MIXED = {"replaced", "resized", "reassigned_in"}
NEVER = {"plateau", "size_capped", "stopped", "shrinking", "compacted", "idle", "stray_files"}
KINDS = FILLING | MIXED | NEVER | {"full", "slow"}
FLAWS = ["gap", "dup", "skew", "retired"]


@dataclass(frozen=True)
class Cluster:
    rows: pd.DataFrame
    tombstones: pd.DataFrame
    truths: list[Truth]
    seconds: float

    @cached_property
    def volumes(self) -> dict[tuple[int, str], pd.DataFrame]:
        unique = self.rows.drop_duplicates().sort_values("snapshotAt", kind="stable")
        groups = (group for _, group in unique.groupby(["brokerId", "volumeName"]))
        return {(int(g["brokerId"].iloc[0]), str(g["volumeName"].iloc[0])): g for g in groups}

    def volume(self, truth: Truth) -> pd.DataFrame:
        return self.volumes[(truth.broker_id, truth.volume_name)]

    @cached_property
    def instants(self) -> dict[int, npt.NDArray[np.float64]]:
        """Each broker's distinct snapshot instants in hours after AT, sorted."""
        brokers = self.rows["brokerId"].to_numpy()
        hours = hours_after_at(self.rows["snapshotAt"])
        return {int(b): np.unique(hours[brokers == b]) for b in np.unique(brokers)}

    def flaws(self) -> dict[int, set[str]]:
        return {t.broker_id: set(t.kind.split("+")[1:]) for t in self.truths}


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    started = time.perf_counter()
    rows, tombstones, truths = generate(SEED, VOLUMES, HORIZON)
    return Cluster(rows, tombstones, truths, time.perf_counter() - started)


def hours_after_at(instants: pd.Series) -> npt.NDArray[np.float64]:
    nanoseconds = instants.astype("int64").to_numpy() - pd.Timestamp(AT).value
    return np.asarray(nanoseconds / 3.6e12, dtype=np.float64)


def base(truth: Truth) -> str:
    return truth.kind.split("+")[0]


def live(cluster: Cluster, *kinds: str) -> list[Truth]:
    return [t for t in cluster.truths if not t.retired and base(t) in kinds]


def fraction(volume: pd.DataFrame) -> npt.NDArray[np.float64]:
    return np.asarray(volume["consumed"] / volume["capacity"], dtype=np.float64)


def test_generation_is_quick_and_field_sized(cluster: Cluster) -> None:
    assert cluster.seconds < 30.0
    assert 160 * 2_000 < len(cluster.rows) < 160 * 25_000


def test_wire_format(cluster: Cluster) -> None:
    rows, stones = cluster.rows, cluster.tombstones
    assert list(rows.columns) == [
        "brokerId", "volumeName", "path", "snapshotAt", "capacity", "consumed", "free"
    ]  # fmt: skip
    for column in ("brokerId", "capacity", "consumed", "free"):
        assert rows[column].dtype == np.int64, column
    assert str(rows["snapshotAt"].dtype) == "datetime64[ns, UTC]"
    assert list(stones.columns) == ["brokerId", "snapshotAt"]
    assert stones["brokerId"].dtype == np.int64
    assert str(stones["snapshotAt"].dtype) == "datetime64[ns, UTC]"
    assert rows["volumeName"].map(re.compile(r"/dev/(nvme\d+n1|sd[b-z]|xvd[b-z])").fullmatch).all()
    assert rows["path"].map(re.compile(r"/var/lib/kafka/data-\d+").fullmatch).all()
    pairs = rows[["brokerId", "volumeName", "path"]].drop_duplicates()
    assert not pairs.duplicated(["brokerId", "volumeName"]).any()
    assert not pairs.duplicated(["brokerId", "path"]).any()


def test_bytes_are_filesystem_blocks_within_capacity(cluster: Cluster) -> None:
    rows = cluster.rows
    capacity, consumed, free = rows["capacity"], rows["consumed"], rows["free"]
    for column in (capacity, consumed, free):
        assert (column % BLOCK == 0).all()
    assert (capacity > 100 * 2**30).all()
    assert ((consumed >= 0) & (consumed <= capacity)).all()
    assert ((free >= 0) & (free <= capacity - consumed)).all()
    reserved = capacity - consumed - free
    assert (reserved[free > 0] <= capacity[free > 0] // 100 + BLOCK).all()
    assert (reserved > 0).any(), "some filesystems keep reserved blocks"


def test_one_truth_per_volume_and_jbod_brokers(cluster: Cluster) -> None:
    keys = [(t.broker_id, t.volume_name) for t in cluster.truths]
    assert len(keys) == len(set(keys)) == VOLUMES
    pairs = cluster.rows[["brokerId", "volumeName"]].drop_duplicates()
    assert set(keys) == set(pairs.itertuples(index=False, name=None))
    per_broker = pairs.groupby("brokerId").size()
    assert per_broker.between(2, 8).all()
    assert per_broker.nunique() > 3


@pytest.mark.parametrize("volumes", [2, 9, 17, 41])
def test_volume_counts_add_up(volumes: int) -> None:
    rows, _, truths = generate(7, volumes, 240.0)
    assert len(truths) == volumes
    assert len(rows[["brokerId", "volumeName"]].drop_duplicates()) == volumes
    assert rows.groupby("brokerId")["volumeName"].nunique().between(2, 8).all()


def test_kind_labels(cluster: Cluster) -> None:
    assert {base(t) for t in cluster.truths} == KINDS
    by_broker: dict[int, set[str]] = {}
    for truth in cluster.truths:
        flaws = truth.kind.split("+")[1:]
        assert flaws == sorted(flaws, key=FLAWS.index), truth.kind
        by_broker.setdefault(truth.broker_id, set()).add("+".join(flaws))
        assert truth.retired == ("retired" in flaws)
    assert all(len(labels) == 1 for labels in by_broker.values()), "flaws belong to brokers"
    assert set().union(*cluster.flaws().values()) == set(FLAWS)


def test_snapshots_cover_all_volumes_at_a_steady_cadence(cluster: Cluster) -> None:
    rows = cluster.rows.drop_duplicates()
    for broker, instants in cluster.instants.items():
        spacing = np.diff(instants) * 3600.0
        median = float(np.median(spacing))
        assert 59.0 <= median <= 301.0
        assert (np.abs(spacing - median) < 3.0).mean() > 0.9, "small jitter only"
        mine = rows[rows["brokerId"] == broker]
        sizes = mine.groupby("snapshotAt").size()
        assert (sizes == mine["volumeName"].nunique()).mean() > 0.9


def test_history_spans_and_ends(cluster: Cluster) -> None:
    flaws = cluster.flaws()
    for broker, instants in cluster.instants.items():
        first, last = instants[0], instants[-1]
        slack = 3.1 if "skew" in flaws[broker] else 5 / 3600
        assert -21 * 24 - slack <= first <= -7 * 24 + slack
        if "retired" in flaws[broker]:
            assert last < -24.0
        elif "skew" not in flaws[broker]:
            assert -310 / 3600 <= last <= 0.0


def test_skewed_clock_is_the_only_one_past_the_forecast_instant(cluster: Cluster) -> None:
    flaws = cluster.flaws()
    ahead = {broker for broker, instants in cluster.instants.items() if instants[-1] > 0.0}
    assert ahead
    assert all("skew" in flaws[broker] for broker in ahead)


def test_gaps(cluster: Cluster) -> None:
    flaws = cluster.flaws()
    recent = False
    for broker, instants in cluster.instants.items():
        spacing = np.diff(instants)
        if "gap" in flaws[broker]:
            assert 2.0 <= spacing.max() <= 49.0
            ends = instants[1:][spacing >= 2.0]
            recent |= bool(((ends >= -24.0) & (ends < 0.0)).any())
        else:
            assert spacing.max() < 2.0
    assert recent, "one outage ends within the last day"


def test_duplicates_are_identical_rows_of_dup_brokers_only(cluster: Cluster) -> None:
    flaws = cluster.flaws()
    duplicated = cluster.rows[cluster.rows.duplicated()]
    assert len(duplicated) > 0
    assert set(duplicated["brokerId"].unique().tolist()) == {
        broker for broker, found in flaws.items() if "dup" in found
    }


def test_retired_brokers_and_tombstones(cluster: Cluster) -> None:
    flaws = cluster.flaws()
    retired = {broker for broker, found in flaws.items() if "retired" in found}
    assert len(retired) >= 2
    assert all(t.fill_hours is None for t in cluster.truths if t.retired)
    stones = cluster.tombstones
    assert not stones["brokerId"].duplicated().any()
    assert 0 < len(stones) < len(retired)
    deleted = hours_after_at(stones["snapshotAt"])
    for broker, hour in zip(stones["brokerId"].tolist(), deleted, strict=True):
        assert broker in retired
        assert cluster.instants[broker][-1] < hour < 0.0


def test_full_volumes_are_full_for_the_last_hours(cluster: Cluster) -> None:
    full = [t for t in cluster.truths if t.fill_hours == 0.0]
    assert full
    assert {base(t) for t in full} == {"full"}
    assert all(t.fill_hours == 0.0 for t in live(cluster, "full"))
    for truth in full:
        volume = cluster.volume(truth)
        hours = hours_after_at(volume["snapshotAt"])
        last_hour = volume[hours > hours[-1] - 1.0]
        assert (last_hour["consumed"] == last_hour["capacity"]).all()
        assert (last_hour["free"] == 0).all()


def test_volumes_not_yet_full_end_below_capacity(cluster: Cluster) -> None:
    for truth in cluster.truths:
        if truth.fill_hours is None or truth.fill_hours > 0.0:
            last = cluster.volume(truth).iloc[-1]
            assert last["consumed"] < last["capacity"], truth


def test_fill_share_and_spread(cluster: Cluster) -> None:
    candidates = [t for t in cluster.truths if not t.retired and t.fill_hours != 0.0]
    hours = [t.fill_hours for t in candidates]
    within = [h for h in hours if h is not None and h <= HORIZON]
    late = [h for h in hours if h is not None and h > HORIZON]
    assert 0.35 <= len(within) / len(candidates) <= 0.65
    assert sum(h <= 24 for h in within) >= 3
    assert sum(24 < h <= 14 * 24 for h in within) >= 3
    assert sum(h > 14 * 24 for h in within) >= 10
    assert max(within) > 0.8 * HORIZON
    assert all(h <= 2.5 * HORIZON for h in late)
    assert 3 <= len(late) < hours.count(None)


def test_fill_follows_the_kind(cluster: Cluster) -> None:
    assert all(t.fill_hours is None for t in live(cluster, *NEVER))
    assert all(t.fill_hours is not None and t.fill_hours > HORIZON for t in live(cluster, "slow"))
    filling = live(cluster, *FILLING)
    fills = [t for t in filling if t.fill_hours is not None and 0 < t.fill_hours <= HORIZON]
    assert len(fills) >= 0.75 * len(filling)


def test_imminent_fills_are_nearly_full(cluster: Cluster) -> None:
    soon = [t for t in cluster.truths if t.fill_hours is not None and 0 < t.fill_hours <= 12]
    assert soon
    for truth in soon:
        assert fraction(cluster.volume(truth))[-1] > 0.8, truth


def complete_day_growth(volume: pd.DataFrame) -> npt.NDArray[np.float64]:
    """Usage added on each UTC day the publisher covered without an hour's break."""
    hours = hours_after_at(volume["snapshotAt"])
    used = fraction(volume)
    growth = []
    for start in np.arange(np.ceil(hours[0] / 24) * 24, -24.0, 24.0):
        inside = (hours >= start - 1) & (hours <= start + 25)
        if np.diff(hours[inside]).max(initial=0.0) < 1.0:
            growth.append(np.interp(start + 24, hours, used) - np.interp(start, hours, used))
    return np.asarray(growth, dtype=np.float64)


def test_weekly_volumes_slow_down_on_weekends(cluster: Cluster) -> None:
    ratios = []
    for truth in live(cluster, "weekly"):
        growth = complete_day_growth(cluster.volume(truth))
        if len(growth) >= 7:
            ratios.append(growth.min() / np.median(growth))
    assert len(ratios) >= 5
    assert max(ratios) < 0.75
    assert np.median(ratios) < 0.5


def test_sawtooth_of_deleted_segments(cluster: Cluster) -> None:
    rising = live(cluster, "sawtooth_rising")
    assert rising
    drops = [int((np.diff(fraction(cluster.volume(t))) < -0.01).sum()) for t in rising]
    assert sum(count >= 5 for count in drops) >= 0.75 * len(rising)


def test_replaced_disks_empty_then_refill(cluster: Cluster) -> None:
    replaced = live(cluster, "replaced")
    assert replaced
    for truth in replaced:
        used = fraction(cluster.volume(truth))
        lowest = int(used.argmin())
        assert used[lowest] < 0.05
        assert used[:lowest].max() > 0.1
        assert used[lowest:].max() > 0.1


def test_resized_volumes_grow_once(cluster: Cluster) -> None:
    for truth in cluster.truths:
        capacity = np.asarray(cluster.volume(truth)["capacity"])
        changes = np.diff(capacity)
        if base(truth) == "resized" and not truth.retired:
            assert (changes != 0).sum() == 1
            assert capacity[-1] >= 1.2 * capacity[0]
        elif base(truth) != "resized":
            assert (changes == 0).all()


def test_reassignments_step_up_within_hours(cluster: Cluster) -> None:
    moved = live(cluster, "reassigned_in")
    assert moved
    stepped = 0
    for truth in moved:
        volume = cluster.volume(truth)
        used = pd.Series(fraction(volume), index=pd.DatetimeIndex(volume["snapshotAt"]))
        rise = used - used.rolling("3h").min()
        stepped += bool(rise.max() >= 0.03)
    assert stepped >= 0.75 * len(moved)


def test_deterministic_in_seed() -> None:
    first, again, other = (
        generate(11, 24, 1440.0),
        generate(11, 24, 1440.0),
        generate(12, 24, 1440.0),
    )
    pd.testing.assert_frame_equal(first[0], again[0])
    pd.testing.assert_frame_equal(first[1], again[1])
    assert first[2] == again[2]
    assert len(first[0]) != len(other[0]) or not first[0].equals(other[0])
    assert first[2] != other[2]


def test_truths_follow_the_horizon() -> None:
    horizon = 240.0
    _, _, truths = generate(5, 40, horizon)
    hours = [t.fill_hours for t in truths if t.fill_hours is not None]
    assert all(0.0 <= h <= 2.5 * horizon for h in hours)
    assert any(0.0 < h <= horizon for h in hours)


def test_steady_fills_agree_with_the_last_week_of_growth(cluster: Cluster) -> None:
    """The truth continues the process: for steady growers a week's trend lands near it."""
    ratios = []
    for truth in live(cluster, "steady", "weekly", "slow"):
        if truth.fill_hours is None:
            continue
        volume = cluster.volume(truth)
        hours = hours_after_at(volume["snapshotAt"])
        used = np.asarray(volume["consumed"], dtype=np.float64)
        week = (used[-1] - np.interp(hours[-1] - 168.0, hours, used)) / 168.0
        headroom = float(volume["capacity"].iloc[-1]) - used[-1]
        ratios.append(truth.fill_hours / (headroom / week) if week > 0 else 0.0)
    assert len(ratios) >= 20
    assert 0.7 <= float(np.median(ratios)) <= 1.25
    assert np.mean([0.4 <= ratio <= 2.5 for ratio in ratios]) >= 0.7
