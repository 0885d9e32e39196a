from __future__ import annotations

from consumer.cluster_state import ClusterState
from consumer.stream_replay import replay_snapshot_lines
from schemas.decode import RejectionReason
from tests.snapshot_factory import NOON, snapshot_line


def test_replay_applies_valid_lines_and_collects_bad_ones_with_line_numbers() -> None:
    lines = [
        snapshot_line(broker_id=0),
        b"\n",
        b"{broken",
        snapshot_line(broker_id=1).replace(b'"schemaVersion": 1', b'"schemaVersion": 7'),
        snapshot_line(broker_id=2),
    ]
    result = replay_snapshot_lines(lines, ClusterState())
    assert result.accepted == 2
    assert [(bad.line_number, bad.rejection.reason) for bad in result.rejected] == [
        (3, RejectionReason.MALFORMED_JSON),
        (4, RejectionReason.UNSUPPORTED_VERSION),
    ]
    assert result.brokers_seen == {0, 1, 2}, "broker 1 is known to exist though its line was bad"
    assert result.state.assessment(1) is None


def test_older_line_later_in_the_stream_is_counted_as_superseded() -> None:
    newer = snapshot_line(broker_id=0, at="2026-11-22T12:00:10Z")
    older = snapshot_line(broker_id=0, at=NOON)
    result = replay_snapshot_lines([newer, older], ClusterState())
    assert (result.accepted, result.superseded) == (1, 1)
