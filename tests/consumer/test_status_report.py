from __future__ import annotations

from datetime import timedelta

from consumer.cluster_state import ClusterState
from consumer.overrides import RefusalReason, RefusedOverride
from consumer.status_report import cluster_status, render_status_table, status_as_json
from schemas.decision import QuotaDecision, QuotaState
from tests.snapshot_factory import NOON, make_snapshot, volume


def build() -> tuple[ClusterState, QuotaDecision]:
    state = ClusterState()
    state.apply_snapshot(make_snapshot(broker_id=0, volumes=[volume("/dev/a", 1000, 100)]))
    state.apply_snapshot(
        make_snapshot(
            broker_id=1,
            volumes=[volume("/dev/a", 1000, 850, path="/data0"), volume("/dev/b", 1000, 0)],
        )
    )
    state.set_live_brokers([0])
    return state, state.decide(NOON + timedelta(seconds=30))


def test_rows_cover_every_volume_worst_first_with_independent_figures() -> None:
    state, decision = build()
    status = cluster_status(state, decision, NOON + timedelta(seconds=30))
    assert [(row.broker_id, row.volume_name) for row in status.volumes] == [
        (1, "/dev/a"),
        (0, "/dev/a"),
        (1, "/dev/b"),
    ]
    worst = status.volumes[0]
    assert (worst.free_bytes, worst.free_percent) == (150, 15.0)
    assert worst.state is QuotaState.THROTTLE
    assert worst.broker_live is False
    assert worst.snapshot_age_seconds == 30.0


def test_table_names_down_brokers_throttle_factor_and_the_decision() -> None:
    state, decision = build()
    text = render_status_table(cluster_status(state, decision, NOON))
    header, first = text.splitlines()[:2]
    assert header.split()[:2] == ["BROKER", "VOLUME"]
    assert first.startswith("1 (down)")
    assert "THROTTLE 0.50" in first
    assert "cluster decision: THROTTLE, throttle factor 0.500" in text


def test_json_form_uses_wire_names() -> None:
    state, decision = build()
    document = status_as_json(cluster_status(state, decision, NOON))
    assert document["decision"]["state"] == "THROTTLE"
    assert document["volumes"][0]["freePercent"] == 15.0


REFUSED = RefusedOverride(
    RefusalReason.NOT_AN_OPERATOR,
    "CN=kafka-2 is not an operator identity (override_signers)",
    NOON,
    "OPEN",
    "CN=kafka-2",
)


def test_refused_override_records_are_listed_with_their_reason() -> None:
    state, decision = build()
    text = render_status_table(cluster_status(state, decision, NOON, [REFUSED]))
    assert "refused override records (never took effect):" in text
    assert (
        "2026-11-22T12:00:00+00:00 forcing OPEN, signed by CN=kafka-2: not_an_operator: "
        "CN=kafka-2 is not an operator identity" in text
    )
    assert "refused override" not in render_status_table(cluster_status(state, decision, NOON))


def test_refused_override_records_are_in_the_json_form() -> None:
    state, decision = build()
    document = status_as_json(cluster_status(state, decision, NOON, [REFUSED]))
    assert document["refusedOverrides"] == [
        {
            "reason": "not_an_operator",
            "detail": "CN=kafka-2 is not an operator identity (override_signers)",
            "arrivedAt": "2026-11-22T12:00:00Z",
            "state": "OPEN",
            "signer": "CN=kafka-2",
        }
    ]
