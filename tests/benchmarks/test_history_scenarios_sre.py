"""The SRE scenario generator, checked from the outside: wire format, bounds, truths."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from benchmarks.history_scenario_truth import Truth
from benchmarks.history_scenarios_sre import AT, KIND_WEIGHTS, generate

HORIZON = 1440.0
VOLUMES = 160
SEED = 2026


@pytest.fixture(scope="module")
def fleet() -> tuple[pd.DataFrame, pd.DataFrame, list[Truth], float]:
    started = time.perf_counter()
    rows, tombstones, truths = generate(SEED, VOLUMES, HORIZON)
    return rows, tombstones, truths, time.perf_counter() - started


@pytest.fixture(scope="module")
def last_rows(fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float]) -> pd.DataFrame:
    rows = fleet[0]
    return rows.sort_values("snapshotAt").groupby(["brokerId", "volumeName"]).tail(1)


def _base(truth: Truth) -> str:
    return truth.kind.split("+")[0]


def _flaws(truth: Truth) -> set[str]:
    return set(truth.kind.split("+")[1:])


def _by_broker(truths: list[Truth]) -> dict[int, Truth]:
    return {truth.broker_id: truth for truth in truths}


def test_wire_format(fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float]) -> None:
    rows, tombstones, _, elapsed = fleet
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
        assert rows[column].dtype == "int64"
    assert str(rows["snapshotAt"].dtype) == "datetime64[ns, UTC]"
    assert (rows["snapshotAt"].astype("int64") % 1_000_000 == 0).all()
    assert list(tombstones.columns) == ["brokerId", "snapshotAt"]
    assert tombstones["brokerId"].dtype == "int64"
    assert str(tombstones["snapshotAt"].dtype) == "datetime64[ns, UTC]"
    assert rows["volumeName"].map(lambda n: re.fullmatch(r"/dev/nvme\d+n1", n) is not None).all()
    assert rows["path"].map(lambda p: re.fullmatch(r"/data/kafka-logs-\d+", p) is not None).all()
    assert elapsed < 30.0


def test_byte_bounds(fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float]) -> None:
    rows = fleet[0]
    capacity, consumed, free = rows["capacity"], rows["consumed"], rows["free"]
    assert (consumed >= 0).all()
    assert (consumed <= capacity).all()
    assert (free >= 0).all()
    assert (free <= capacity - consumed).all()
    assert (capacity - consumed - free <= capacity // 100 + 4096).all()
    for column in (capacity, consumed, free):
        assert (column % 4096 == 0).all()


def test_one_truth_per_volume(
    fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float],
) -> None:
    rows, _, truths, _ = fleet
    keys = [(t.broker_id, t.volume_name) for t in truths]
    assert len(keys) == len(set(keys)) == VOLUMES
    pairs = rows[["brokerId", "volumeName"]].drop_duplicates()
    assert set(keys) == set(zip(pairs["brokerId"], pairs["volumeName"], strict=True))
    per_broker = pairs.groupby("brokerId").size()
    assert per_broker.between(1, 12).all()
    assert per_broker.max() > 1


def test_deterministic_in_seed() -> None:
    first = generate(7, 40, HORIZON)
    second = generate(7, 40, HORIZON)
    pd.testing.assert_frame_equal(first[0], second[0])
    pd.testing.assert_frame_equal(first[1], second[1])
    assert first[2] == second[2]
    other = generate(8, 40, HORIZON)
    assert not other[0]["consumed"].equals(first[0]["consumed"])


def test_every_kind_and_flaw_present(
    fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float],
) -> None:
    truths = fleet[2]
    assert {_base(t) for t in truths} == set(KIND_WEIGHTS) | {"retired"}
    flaws = set().union(*(_flaws(t) for t in truths))
    assert flaws == {"gap", "dup", "skew"}


def test_truths_agree_with_last_rows(
    fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float], last_rows: pd.DataFrame
) -> None:
    truths = fleet[2]
    last = {
        (int(broker), str(name)): (int(consumed), int(capacity), at)
        for broker, name, consumed, capacity, at in zip(
            last_rows["brokerId"],
            last_rows["volumeName"],
            last_rows["consumed"],
            last_rows["capacity"],
            last_rows["snapshotAt"],
            strict=True,
        )
    }
    for truth in truths:
        consumed, capacity, seen_at = last[(truth.broker_id, truth.volume_name)]
        full = consumed == capacity
        if truth.retired:
            assert truth.fill_hours is None
            assert seen_at < AT - timedelta(days=1)
            continue
        assert full == (truth.fill_hours == 0.0), truth
        assert (_base(truth) == "full") <= full, truth
        if truth.fill_hours is not None:
            assert 0.0 <= truth.fill_hours <= 2.5 * HORIZON


def test_fill_mix(fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float]) -> None:
    truths = fleet[2]
    open_volumes = [t for t in truths if not t.retired and t.fill_hours != 0.0]
    fills = [t.fill_hours for t in open_volumes if t.fill_hours is not None]
    within_horizon = sum(hours <= HORIZON for hours in fills) / len(open_volumes)
    within_two_days = sum(hours <= 48.0 for hours in fills) / len(open_volumes)
    assert 0.35 <= within_horizon <= 0.65
    assert 0.07 <= within_two_days <= 0.2
    assert any(hours <= 6.0 for hours in fills)
    assert any(hours > HORIZON for hours in fills)
    assert sum(t.fill_hours is None for t in open_volumes) >= 0.25 * len(open_volumes)
    assert any(t.fill_hours == 0.0 for t in truths)
    assert all(t.fill_hours is None for t in truths if _base(t) in {"plateau", "shrinking"})


def _snapshot_hours(rows: pd.DataFrame) -> dict[int, npt.NDArray[np.float64]]:
    """Each broker's distinct reported snapshot instants, in hours relative to AT, sorted."""
    nanos = rows["snapshotAt"].astype("int64").to_numpy() - pd.Timestamp(AT).value
    brokers = rows["brokerId"].to_numpy()
    return {
        int(broker): np.unique(nanos[brokers == broker]) / 3.6e12 for broker in np.unique(brokers)
    }


def test_history_span_and_cadence(
    fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float],
) -> None:
    rows, _, truths, _ = fleet
    by_broker = _by_broker(truths)
    for broker_id, hours in _snapshot_hours(rows).items():
        truth = by_broker[broker_id]
        assert 4.9 * 24 <= -hours[0] <= 20.2 * 24, broker_id
        median_step_seconds = float(np.median(np.diff(hours))) * 3600.0
        assert 25.0 <= median_step_seconds <= 340.0
        if not truth.retired and "skew" not in _flaws(truth):
            assert -20.0 / 60.0 <= hours[-1] <= 0.0


def test_gaps(fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float]) -> None:
    rows, _, truths, _ = fleet
    by_broker = _by_broker(truths)
    recent_gap_end = False
    for broker_id, hours in _snapshot_hours(rows).items():
        steps = np.diff(hours)
        has_gap = "gap" in _flaws(by_broker[broker_id])
        assert (steps.max() >= 2.0) == has_gap, broker_id
        if has_gap:
            assert steps.max() <= 49.0
            gap_end = hours[int(np.argmax(steps)) + 1]
            recent_gap_end |= gap_end >= -24.0
    assert recent_gap_end


def test_duplicates(fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float]) -> None:
    rows, _, truths, _ = fleet
    duplicated = set(rows.loc[rows.duplicated(), "brokerId"].astype(int))
    flagged = {t.broker_id for t in truths if "dup" in _flaws(t)}
    assert duplicated == flagged
    assert flagged


def test_skew_and_tombstones(
    fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float],
) -> None:
    rows, tombstones, truths, _ = fleet
    last_seen = rows.groupby("brokerId")["snapshotAt"].max()
    skewed = {t.broker_id for t in truths if "skew" in _flaws(t)}
    assert skewed
    assert any(last_seen[b] > AT for b in skewed)
    retired = {t.broker_id for t in truths if t.retired}
    tombstoned = set(tombstones["brokerId"].astype(int))
    assert tombstoned
    assert tombstoned < retired
    for broker_id, at in zip(tombstones["brokerId"], tombstones["snapshotAt"], strict=True):
        assert last_seen[broker_id] < at <= AT


def test_event_signatures(
    fleet: tuple[pd.DataFrame, pd.DataFrame, list[Truth], float],
) -> None:
    rows, _, truths, _ = fleet
    ordered = rows.sort_values(["brokerId", "volumeName", "snapshotAt"], kind="stable")
    kinds = {(t.broker_id, t.volume_name): t.kind for t in truths}
    for key, volume in ordered.groupby(["brokerId", "volumeName"]):
        broker_id, volume_name = key
        kind = kinds[(int(str(broker_id)), str(volume_name))]
        if "gap" in kind:
            continue  # the publisher may have been down during the event
        kind = kind.split("+")[0]
        used = volume["consumed"] / volume["capacity"]
        if kind == "disk_replaced":
            assert used.min() <= 0.08
        if kind == "resized":
            assert volume["capacity"].nunique() == 2
            assert volume["capacity"].is_monotonic_increasing
        if kind == "plateau_high":
            assert 0.65 <= used.iloc[-1] <= 0.97
        if kind == "full":
            recent = volume[volume["snapshotAt"] >= volume["snapshotAt"].max() - timedelta(hours=1)]
            assert (recent["consumed"] == recent["capacity"]).all()
