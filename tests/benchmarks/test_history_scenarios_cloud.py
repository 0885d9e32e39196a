"""Outside-in checks of the cloud capacity scenarios: wire format, bounds, truths, flaws."""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from datetime import UTC, timedelta

import numpy as np
import pandas as pd
import pytest

from benchmarks.history_scenario_truth import Truth
from benchmarks.history_scenarios_cloud import AT, generate

SEED, VOLUMES, HORIZON = 2026, 160, 1440.0
BLOCK = 4096
ROW_COLUMNS = ["brokerId", "volumeName", "path", "snapshotAt", "capacity", "consumed", "free"]
BASE_KINDS = {
    "retention_growth",
    "infinite_retention",
    "accelerating",
    "migration",
    "month_end_batch",
    "retention_raised",
    "retention_lowered",
    "disk_replaced",
    "capacity_resize",
    "reassign_in",
    "reassign_out",
    "retention_plateau",
    "growth_stopped",
    "shrinking",
    "full",
    "retired",
}
NEVER_FILLING = {"retention_plateau", "growth_stopped", "shrinking"}
AT_TS = pd.Timestamp(AT)


@dataclass(frozen=True)
class Scenario:
    rows: pd.DataFrame
    tombstones: pd.DataFrame
    truths: list[Truth]
    seconds: float

    def brokers_with(self, flaw: str) -> set[int]:
        return {t.broker_id for t in self.truths if flaw in t.kind.split("+")[1:]}

    def last_rows(self) -> pd.DataFrame:
        ordered = self.rows.sort_values("snapshotAt", kind="stable")
        return (
            ordered.groupby(["brokerId", "volumeName"])
            .tail(1)
            .set_index(["brokerId", "volumeName"])
        )

    def snapshot_steps(self) -> pd.DataFrame:
        """One row per distinct snapshot, with the time since the broker's previous one."""
        snapshots = self.rows[["brokerId", "snapshotAt"]].drop_duplicates()
        snapshots = snapshots.sort_values(["brokerId", "snapshotAt"])
        step = snapshots.groupby("brokerId")["snapshotAt"].diff()
        return snapshots.assign(step=step)


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    started = time.perf_counter()
    rows, tombstones, truths = generate(SEED, VOLUMES, HORIZON)
    return Scenario(rows, tombstones, truths, time.perf_counter() - started)


def _base(truth: Truth) -> str:
    return truth.kind.split("+")[0]


def test_at_is_an_early_sunday_or_monday_in_utc() -> None:
    assert AT.tzinfo is not None
    assert AT.utcoffset() == timedelta(0)
    assert AT.weekday() in {0, 6}
    assert 0 <= AT.hour < 6


def test_wire_format(scenario: Scenario) -> None:
    rows = scenario.rows
    assert list(rows.columns) == ROW_COLUMNS
    for column in ("brokerId", "capacity", "consumed", "free"):
        assert rows[column].dtype == np.int64, column
    assert str(rows["snapshotAt"].dtype) == "datetime64[ns, UTC]"
    nanos = rows["snapshotAt"].astype("int64")
    assert (nanos % 1_000_000 == 0).all(), "millisecond precision"
    assert rows["volumeName"].str.fullmatch(r"/dev/xvd[f-k]").all()
    assert rows["path"].str.fullmatch(r"/kafka/data/d[1-6]").all()
    tombstones = scenario.tombstones
    assert list(tombstones.columns) == ["brokerId", "snapshotAt"]
    assert tombstones["brokerId"].dtype == np.int64
    assert str(tombstones["snapshotAt"].dtype) == "datetime64[ns, UTC]"


def test_byte_bounds(scenario: Scenario) -> None:
    rows = scenario.rows
    capacity, consumed, free = rows["capacity"], rows["consumed"], rows["free"]
    assert (capacity > 0).all()
    assert ((consumed >= 0) & (consumed <= capacity)).all()
    assert ((free >= 0) & (free <= capacity - consumed)).all()
    assert (free >= capacity - consumed - capacity // 100 - BLOCK).all(), "reserved <= 1 %"
    for column in ("capacity", "consumed", "free"):
        assert (rows[column] % BLOCK == 0).all(), column


def test_one_truth_per_volume_and_broker_layout(scenario: Scenario) -> None:
    keys = [(t.broker_id, t.volume_name) for t in scenario.truths]
    assert len(keys) == len(set(keys)) == VOLUMES
    in_rows = set(scenario.rows[["brokerId", "volumeName"]].itertuples(index=False, name=None))
    assert set(keys) == in_rows
    per_broker = scenario.rows.groupby("brokerId")["volumeName"].nunique()
    assert per_broker.between(1, 6).all()
    mounts = scenario.rows.groupby(["brokerId", "volumeName"])["path"].nunique()
    assert (mounts == 1).all(), "a volume keeps its mount path"


def test_deterministic_in_seed() -> None:
    first = generate(7, 30, HORIZON)
    again = generate(7, 30, HORIZON)
    other = generate(8, 30, HORIZON)
    pd.testing.assert_frame_equal(first[0], again[0])
    pd.testing.assert_frame_equal(first[1], again[1])
    assert first[2] == again[2]
    assert len(first[0]) != len(other[0]) or not first[0].equals(other[0])
    assert sum(t.volume_name != "" for t in first[2]) == 30


def test_every_kind_and_flaw_is_present(scenario: Scenario) -> None:
    assert {_base(t) for t in scenario.truths} == BASE_KINDS
    for flaw in ("gap", "dup", "skew", "tombstone"):
        assert scenario.brokers_with(flaw), flaw
    assert {f.name for f in fields(Truth)} == {
        "broker_id",
        "volume_name",
        "kind",
        "fill_hours",
        "retired",
    }


def test_generation_is_fast(scenario: Scenario) -> None:
    assert scenario.seconds < 30
    assert len(scenario.rows) > 100_000


def test_snapshot_cadence_and_history_span(scenario: Scenario) -> None:
    steps = scenario.snapshot_steps()
    median = steps.groupby("brokerId")["step"].median().dt.total_seconds()
    assert median.between(27, 330).all()
    skewed, retired = (
        scenario.brokers_with("skew"),
        {t.broker_id for t in scenario.truths if t.retired},
    )
    span = steps.groupby("brokerId")["snapshotAt"].agg(["min", "max"])
    steady = span.loc[~span.index.isin(skewed | retired)]
    assert (steady["min"] >= AT_TS - timedelta(days=14)).all()
    assert (steady["min"] <= AT_TS - timedelta(days=6)).all()
    assert (steady["max"] <= AT_TS).all()
    assert (steady["max"] > AT_TS - timedelta(seconds=330)).all(), "live brokers report to AT"


def test_retired_brokers_and_tombstones(scenario: Scenario) -> None:
    retired = [t for t in scenario.truths if t.retired]
    assert retired
    assert all(t.fill_hours is None for t in retired)
    assert all(_base(t) == "retired" for t in retired)
    last = scenario.rows.groupby("brokerId")["snapshotAt"].max()
    retired_ids = {t.broker_id for t in retired}
    assert (last[list(retired_ids)] < AT_TS - timedelta(days=1)).all()
    tombstones = scenario.tombstones
    assert len(tombstones) >= 1
    assert set(tombstones["brokerId"]) <= retired_ids
    assert set(tombstones["brokerId"]) == scenario.brokers_with("tombstone")
    for broker_id, deleted_at in tombstones.itertuples(index=False, name=None):
        assert last[broker_id] < deleted_at <= AT_TS


def test_full_volumes_match_their_rows(scenario: Scenario) -> None:
    last = scenario.last_rows()
    live = [t for t in scenario.truths if not t.retired]
    full_at_end = last["consumed"] == last["capacity"]
    for truth in live:
        is_full = bool(full_at_end[(truth.broker_id, truth.volume_name)])
        assert is_full == (truth.fill_hours == 0.0), truth
        assert (_base(truth) == "full") == (truth.fill_hours == 0.0), truth
    rows = scenario.rows
    recent = rows[rows["snapshotAt"] > AT_TS - timedelta(hours=1)]
    for truth in (t for t in live if _base(t) == "full" and "skew" not in t.kind):
        mine = recent[
            (recent["brokerId"] == truth.broker_id) & (recent["volumeName"] == truth.volume_name)
        ]
        assert len(mine) > 0
        assert (mine["consumed"] == mine["capacity"]).all()
        assert (mine["free"] == 0).all()


def test_fill_proportions(scenario: Scenario) -> None:
    candidates = [t for t in scenario.truths if not t.retired and t.fill_hours != 0.0]
    fills = [t.fill_hours for t in candidates if t.fill_hours is not None]
    within = [h for h in fills if h <= HORIZON]
    urgent = [h for h in fills if h <= 48]
    late = [h for h in fills if h > HORIZON]
    never = len(candidates) - len(fills)
    assert 0.35 <= len(within) / len(candidates) <= 0.65
    assert 0.04 <= len(urgent) / len(candidates) <= 0.2
    assert min(fills) < 6
    assert max(within) > 0.75 * HORIZON
    assert 0 < len(late) < never, "some fill shortly after the horizon, most never"
    assert all(h <= 2.5 * HORIZON for h in fills)
    assert all(t.fill_hours is None for t in candidates if _base(t) in NEVER_FILLING)


def test_fill_truth_agrees_with_the_latest_usage(scenario: Scenario) -> None:
    last = scenario.last_rows()
    used = last["consumed"] / last["capacity"]
    live = [t for t in scenario.truths if not t.retired and t.fill_hours is not None]
    for truth in live:  # a swapped disk may still be re-replicating back to near full
        if (
            truth.fill_hours is not None
            and truth.fill_hours < 6
            and _base(truth) != "disk_replaced"
        ):
            assert used[(truth.broker_id, truth.volume_name)] > 0.8, truth
    never = [t for t in scenario.truths if _base(t) in NEVER_FILLING]
    peak = (
        (scenario.rows["consumed"] / scenario.rows["capacity"])
        .groupby([scenario.rows["brokerId"], scenario.rows["volumeName"]])
        .max()
    )
    near_full = [t for t in never if 0.85 <= peak[(t.broker_id, t.volume_name)] < 0.99]
    assert near_full, "some never-filling plateaus run at 85-95 %"


def test_duplicated_snapshots(scenario: Scenario) -> None:
    rows = scenario.rows
    twice = rows[rows.duplicated(keep=False)]
    assert set(twice["brokerId"]) == scenario.brokers_with("dup")
    key = ["brokerId", "volumeName", "snapshotAt"]
    clean = rows[~rows["brokerId"].isin(scenario.brokers_with("dup"))]
    assert not clean.duplicated(key).any()
    assert not rows.drop_duplicates().duplicated(key).any(), "duplicates are identical rows"


def test_publisher_gaps(scenario: Scenario) -> None:
    steps = scenario.snapshot_steps()
    longest = steps.groupby("brokerId")["step"].max()
    gapped = scenario.brokers_with("gap")
    assert (longest[list(gapped)] >= timedelta(hours=2)).all()
    others = longest[~longest.index.isin(gapped)]
    assert (others < timedelta(minutes=15)).all()
    long_steps = steps[steps["step"] >= timedelta(hours=2)]
    assert (long_steps["snapshotAt"] > AT_TS - timedelta(days=1)).any(), "a gap ends lately"
    assert (long_steps["step"] <= timedelta(hours=48, minutes=10)).all()


def test_skewed_clocks(scenario: Scenario) -> None:
    last = scenario.rows.groupby("brokerId")["snapshotAt"].max()
    skewed = scenario.brokers_with("skew")
    offset = (last[list(skewed)] - AT_TS).abs()
    assert (offset > timedelta(seconds=330)).all()
    assert (last[list(skewed)] > AT_TS).any(), "one clock runs ahead of AT"
    assert (last[~last.index.isin(skewed)] <= AT_TS).all()


def test_capacity_resizes_only_where_expected(scenario: Scenario) -> None:
    rows = scenario.rows.sort_values("snapshotAt", kind="stable")
    by_volume = rows.groupby(["brokerId", "volumeName"])["capacity"]
    distinct = by_volume.nunique()
    growing = by_volume.apply(lambda c: bool(c.is_monotonic_increasing))
    resized = {
        (t.broker_id, t.volume_name) for t in scenario.truths if _base(t) == "capacity_resize"
    }
    assert resized
    never_shrinks = growing.to_dict()
    for key, count in distinct.to_dict().items():
        assert count == (2 if key in resized else 1), key
        assert never_shrinks[key], key


def test_disk_replacement_drops_near_empty(scenario: Scenario) -> None:
    rows = scenario.rows
    used = rows["consumed"] / rows["capacity"]
    swapped = [t for t in scenario.truths if _base(t) == "disk_replaced" and "gap" not in t.kind]
    assert swapped
    for truth in swapped:
        mine = used[
            (rows["brokerId"] == truth.broker_id) & (rows["volumeName"] == truth.volume_name)
        ]
        assert mine.min() < 0.06, truth
        assert mine.max() > 3 * mine.min() + 0.01, truth


def test_snapshot_times_are_utc_millis(scenario: Scenario) -> None:
    first = scenario.rows["snapshotAt"].iloc[0]
    assert first.tzinfo is not None
    assert first.tz_convert(UTC).utcoffset() == timedelta(0)
