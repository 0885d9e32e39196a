"""The PAUSE bound on the real 3-broker cluster with real clients, judged per producer.

Kafka's Java producer (it mutes the channel on throttle on its own side, like Connect, Streams
and MirrorMaker on top of it) at 1 and 8 connections per principal, and librdkafka at 8, all
in the same PAUSE of 60 s: every principal is an ordinary one with WRITE on its own topic
only, every connection its own client id. The bound (docs/broker-plugin.md, issue 10): no
producer goes more than 30 s without an ack, each is back to 90 % of its own earlier rate
within 30 s of OPEN, and no record fails delivery under a 120 s delivery timeout (the Java
client's default), while the paused principals' rates stay small.

Figures from this machine (2 shared cores, heavy load) are pessimistic; the assertions are the
issue's bounds, not tighter. ``python -m benchmarks.pause_bound_real`` runs 1, 8 and 32.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.pause_bound import (
    BASE_RATE,
    DEMAND,
    PauseRun,
    ProducerGroup,
    compile_java_producers,
    pause_bound_cluster,
    run_pause,
)
from tests.e2e.pause_figures import (
    ROW_HEADER,
    ProducerFigures,
    paused_principal_rate,
    producer_figures,
)

pytestmark = [pytest.mark.e2e, pytest.mark.real_broker, pytest.mark.real_fs]

GROUPS = [("java", 1, 0), ("java", 8, 0), ("rdkafka", 8, 1)]  # client, connections, leader
HOLD_S = 60.0
STALL_BOUND_S = 30.0
RECOVERY_BOUND_S = 30.0
DELIVERY_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PauseRun]:
    base = tmp_path_factory.mktemp("pause-bound")
    java_classes = compile_java_producers(base / "java-classes")
    with pause_bound_cluster(base / "cluster") as cluster:
        groups = [
            ProducerGroup(client, n, f"{client}-{n}", f"data-{client}-{n}", leader, base)
            for client, n, leader in GROUPS
        ]
        yield run_pause(cluster, groups, java_classes, hold_s=HOLD_S, after_open_s=40)


@pytest.fixture(scope="module")
def figures(run: PauseRun) -> list[ProducerFigures]:
    rows = []
    for group in run.groups:
        rows += producer_figures(
            group.client, group.principal, group.windows(), run.paused_at, run.opened_at
        )
    print("\n" + ROW_HEADER + "\n" + "\n".join(row.row() for row in rows))
    return rows


def test_the_pause_lasted_as_long_as_the_bound_assumes(run: PauseRun) -> None:
    assert run.opened_at - run.paused_at >= HOLD_S


def test_every_producer_ran_before_the_pause(figures: list[ProducerFigures]) -> None:
    for row in figures:
        share = DEMAND * BASE_RATE / row.connections
        assert row.baseline_bytes_per_s >= 0.5 * share, row


def test_no_producer_stalls_longer_than_30_seconds(figures: list[ProducerFigures]) -> None:
    stalled = [row for row in figures if row.longest_stall_s > STALL_BOUND_S]
    assert not stalled, "\n".join(row.row() for row in stalled)


def test_every_producer_is_back_to_90_percent_within_30_seconds_of_open(
    figures: list[ProducerFigures],
) -> None:
    slow = [row for row in figures if row.recovery_s is None or row.recovery_s > RECOVERY_BOUND_S]
    assert not slow, "\n".join(row.row() for row in slow)


def test_no_record_fails_delivery(figures: list[ProducerFigures]) -> None:
    for row in figures:
        assert row.finished, f"{row.principal}-{row.producer} did not report its last acks"
        assert row.failed == 0, f"{row.row()} {row.error}"
        assert row.acked == row.sent, row.row()
        assert row.max_latency_s < DELIVERY_TIMEOUT_S, row.row()


def test_paused_principals_rate_stays_small(run: PauseRun) -> None:
    for group in run.groups:
        paused = paused_principal_rate(group.windows(), run.paused_at, run.opened_at)
        # The principal floor F is N x 1 MiB / 12 s (at least the configured 256 KiB/s, at most
        # base); docs/broker-plugin.md: a paused principal writes about 1.5 to 2 x F on average.
        floor = min(BASE_RATE, max(256 * 1024, group.connections * 1024 * 1024 / 12))
        assert paused <= 2 * floor, f"{group.principal}: {paused / 1024:.0f} KiB/s"
        # And the PAUSE holds each principal below what it wants (here F < demand: 256 KiB/s for
        # one connection, 683 KiB/s for eight, against 0.8 x 2 MiB/s). Not below half of it: eight
        # connections of 1 MiB are promised 1.5 to 2 x F, 62 to 83 % of this demand, and since the
        # floor plans for the backlog of the first mute (rule 3) they get it.
        assert paused < DEMAND * BASE_RATE, f"{group.principal}: {paused / 1024:.0f} KiB/s"
