from __future__ import annotations

import os
from pathlib import Path

import pytest

from consumer.cluster_state import ClusterState
from consumer.decision_file import write_decision_atomically
from schemas.decision import QuotaDecision
from tests.snapshot_factory import NOON


def test_decision_is_written_whole_and_readable_by_others(tmp_path: Path) -> None:
    path = tmp_path / "decision.json"
    decision = ClusterState().decide(NOON)
    write_decision_atomically(path, decision)
    assert QuotaDecision.model_validate_json(path.read_bytes()) == decision
    assert path.stat().st_mode & 0o777 == 0o644
    assert [entry.name for entry in tmp_path.iterdir()] == ["decision.json"]


def test_failed_write_leaves_the_previous_decision_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "decision.json"
    first = ClusterState().decide(NOON)
    write_decision_atomically(path, first)

    def refuse(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_decision_atomically(path, ClusterState().decide(NOON.replace(hour=13)))
    assert QuotaDecision.model_validate_json(path.read_bytes()) == first
    assert [entry.name for entry in tmp_path.iterdir()] == ["decision.json"]
