"""The synthetic generator: seeded, truthful about fill times, valid wire format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from schemas.decode import decode_snapshot
from schemas.snapshot import VolumeSnapshot
from spark_history import synthetic
from spark_history.synthetic_jsonl import write_jsonl

pytestmark = pytest.mark.spark


def test_same_seed_same_history() -> None:
    config = synthetic.HistoryConfig(history_hours=12, interval_seconds=600)
    first = synthetic.history_frame(synthetic.make_traces(4, 6, config), 4, config)
    second = synthetic.history_frame(synthetic.make_traces(4, 6, config), 4, config)
    assert first.equals(second)


def test_fill_time_is_where_the_noiseless_shape_reaches_capacity() -> None:
    shape = synthetic.TraceShape(capacity=1000, level_at=500.0, growth_per_hour=10.0)
    assert shape.fill_hours() == pytest.approx(50.0, abs=0.1)
    flat = synthetic.TraceShape(capacity=1000, level_at=500.0, growth_per_hour=0.0)
    assert flat.fill_hours() is None


def test_every_kind_is_generated_and_plateaus_never_fill() -> None:
    traces = synthetic.make_traces(2, 60)
    assert {trace.kind for trace in traces} == set(synthetic.TRACE_KINDS)
    for trace in traces:
        if trace.plateaued:
            assert trace.true_fill_hours is None
        if trace.kind == "linear":
            assert trace.true_fill_hours is not None


def test_history_stays_within_capacity_and_jitters_the_clock() -> None:
    config = synthetic.HistoryConfig(history_hours=24, interval_seconds=60)
    frame = synthetic.history_frame(synthetic.make_traces(3, 8, config), 3, config)
    assert (frame["consumed"] <= frame["capacity"]).all()
    assert (frame["consumed"] >= 0).all()
    instants = frame[frame["brokerId"] == 0]["snapshotAt"].drop_duplicates()
    spacing = np.diff(instants.astype("int64").to_numpy()) / 1e6
    assert np.ptp(spacing[spacing < 90]) > 1.0


def test_jsonl_lines_are_valid_snapshots(tmp_path: Path) -> None:
    config = synthetic.HistoryConfig(history_hours=2, interval_seconds=600)
    frame = synthetic.history_frame(synthetic.make_traces(1, 8, config), 1, config)
    path = tmp_path / "h.jsonl"
    lines = write_jsonl(frame, path)
    messages = path.read_text().splitlines()
    assert len(messages) == lines
    for line in messages:
        assert isinstance(
            decode_snapshot(line.encode(), str(json.loads(line)["brokerId"]).encode()),
            VolumeSnapshot,
        )
    volumes = sum(len(json.loads(line)["volumes"]) for line in messages)
    assert volumes == len(frame)
