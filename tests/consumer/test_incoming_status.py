"""``status --incoming``: moves in flight per volume, judged against the volume's limits."""

from __future__ import annotations

from datetime import timedelta

from consumer.cluster_state import ClusterState
from consumer.incoming_bytes import IncomingMove, MoveKind
from consumer.incoming_status import incoming_status, render_incoming
from consumer.status_report import (
    ClusterStatus,
    cluster_status,
    render_status_table,
    status_as_json,
)
from schemas.decision import QuotaState
from tests.snapshot_factory import NOON, make_snapshot, volume


def status() -> ClusterStatus:
    """Broker 0: one volume, 900 of 1000 bytes free (soft at 200, hard at 100). Broker 1: two
    volumes."""
    state = ClusterState()
    state.apply_snapshot(make_snapshot(broker_id=0, volumes=[volume("/dev/a", 1000, 100)]))
    state.apply_snapshot(
        make_snapshot(
            broker_id=1,
            volumes=[
                volume("/dev/a", 1000, 100, path="/data0"),
                volume("/dev/b", 1000, 0, path="/data1"),
            ],
        )
    )
    state.set_live_brokers([0, 1])
    return cluster_status(state, state.decide(NOON), NOON + timedelta(seconds=1))


def reassignment(broker: int, size: int, log_dir: str | None = None) -> IncomingMove:
    likely = None if log_dir is not None else "/data1/logs"
    return IncomingMove(MoveKind.REASSIGNMENT, "t", 0, broker, size, log_dir, likely, 2, None)


def test_a_move_that_would_take_the_volume_past_its_soft_limit_says_so() -> None:
    rows = status().volumes
    (entry,) = incoming_status([reassignment(0, 750)], rows)
    assert (entry.broker_id, entry.volume_name, entry.incoming_bytes) == (0, "/dev/a", 750)
    assert (entry.free_bytes, entry.free_after_bytes, entry.used_after_bytes) == (900, 150, 850)
    assert (entry.state_now, entry.state_after) == (QuotaState.OPEN, QuotaState.THROTTLE)
    text = render_incoming([entry])
    assert (
        "broker 0 volume /dev/a: incoming: 750 bytes (750 B; reassignment of t-0 from broker 2)"
        in text
    )
    assert "WOULD CROSS THE SOFT LIMIT" in text


def test_past_the_hard_limit_and_a_small_move_that_stays_open() -> None:
    rows = status().volumes
    (entry,) = incoming_status([reassignment(0, 850)], rows)
    assert entry.state_after is QuotaState.PAUSE
    assert "WOULD CROSS THE HARD LIMIT" in render_incoming([entry])
    (small,) = incoming_status([reassignment(0, 10)], rows)
    assert small.state_after is QuotaState.OPEN
    assert "stays OPEN" in render_incoming([small])


def test_an_unplaced_move_on_a_broker_with_two_volumes_is_judged_on_the_likely_one() -> None:
    rows = status().volumes
    (entry,) = incoming_status([reassignment(1, 950)], rows)
    assert entry.volume_name is None
    assert entry.judged_volume_name == "/dev/b"
    assert entry.state_after is QuotaState.PAUSE
    assert "broker 1 (volume not chosen yet, likely /dev/b)" in render_incoming([entry])


def test_moves_that_write_nothing_more_are_not_shown_and_nothing_says_nothing() -> None:
    assert incoming_status([reassignment(0, 0)], status().volumes) == []
    assert render_incoming([]).startswith("incoming: nothing")


def test_a_volume_without_a_snapshot_is_shown_without_limits() -> None:
    (entry,) = incoming_status([reassignment(7, 5, log_dir="/x")], status().volumes)
    assert (entry.broker_id, entry.volume_name, entry.state_after) == (7, None, None)
    assert "limits not known" in render_incoming([entry])


def test_the_status_table_and_json_carry_incoming_only_when_asked() -> None:
    plain = status()
    assert "incoming" not in render_status_table(plain)
    assert "incoming" not in status_as_json(plain)
    entries = incoming_status([reassignment(0, 750)], plain.volumes)
    shown = plain.model_copy(update={"incoming": entries})
    assert "broker 0 volume /dev/a: incoming: 750 bytes" in render_status_table(shown)
    (document,) = status_as_json(shown)["incoming"]
    assert document["incomingBytes"] == 750
    assert document["stateAfter"] == "THROTTLE"
    assert document["moves"][0]["source"] == "reassignment of t-0 from broker 2"
    refused = plain.model_copy(update={"incoming": [], "incoming_problem": "not authorized"})
    assert "incoming: not known: not authorized" in render_status_table(refused)
