"""The PAUSE bound on the real 3-broker cluster, both clients: ``python -m
benchmarks.pause_bound_real --connections 1,8,32``.

For each connection count N, ``--principals`` K principals of Kafka's Java producer (on
broker 0) and K of librdkafka (on broker 1), each with N connections (own client ids), produce
0.8 x base (``--base-mib``, default 2 MiB/s; see tests/e2e/pause_bound.py) each, then a PAUSE
of ``--hold`` seconds (broker 2's tmpfs volume filled past the hard limit, real sidecars), then
OPEN. Prints one row per producer, a summary per principal, and per broker the highest write
rate over any 10 s of the PAUSE from the moment the ceiling is in force, against the
per-broker ceiling. Needs root (tmpfs), Java 17,
Maven and the callback jar (`mvn -q -B package` in deploy/broker-plugin).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.machine import describe_machine
from tests.e2e.pause_bound import (
    BASE_RATE,
    CEILING_OFF,
    MIB,
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
    peak_rate,
    principal_recovery_s,
    producer_figures,
)

CEILING_IN_FORCE_S = 30.0
"""The PAUSE ceiling is in force from this long into a PAUSE (docs/broker-plugin.md)."""
BROKER_CEILING = 8 * MIB
"""The shipped per-broker PAUSE ceiling, bytes/s."""

SUMMARY_HEADER = (
    "| client | N | longest stall (s), producer | longest throttle from the broker (s), producer | "
    "slowest back to 90 % (s), producer | principal back to 90 % (s) | "
    "oldest record at ack (s) | records failed | "
    "paused rate, 2nd half (KiB/s) | principal floor F (KiB/s) |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def summary(
    group: ProducerGroup, rows: list[ProducerFigures], run: PauseRun, base_rate: int
) -> str:
    stall = max(rows, key=lambda row: row.longest_stall_s)
    throttle = max(rows, key=lambda row: row.longest_throttle_s)
    slowest = max(rows, key=lambda row: 1e9 if row.recovery_s is None else row.recovery_s)
    recovery = "never" if slowest.recovery_s is None else f"{slowest.recovery_s:.1f}"
    paused = paused_principal_rate(group.windows(), run.paused_at, run.opened_at)
    together = principal_recovery_s(group.windows(), run.paused_at, run.opened_at)
    floor = min(base_rate, max(256 * 1024, group.connections * 1024 * 1024 / 12))
    return (
        f"| {group.client} | {group.connections} | {stall.longest_stall_s:.1f} "
        f"(#{stall.producer}) | {throttle.longest_throttle_s:.1f} (#{throttle.producer}) | "
        f"{recovery} (#{slowest.producer}) | "
        f"{'never' if together is None else f'{together:.1f}'} | "
        f"{max(row.max_latency_s for row in rows):.1f} | {sum(row.failed for row in rows)} | "
        f"{paused / 1024:.0f} | {floor / 1024:.0f} |"
    )


BROKER_HEADER = (
    "| N | principals on the broker | broker | highest write rate over 10 s, PAUSE from "
    f"{CEILING_IN_FORCE_S:g} s (KiB/s) | per-broker ceiling (KiB/s) | highest over 10 s, "
    "whole PAUSE (KiB/s) |\n|---|---|---|---|---|---|"
)


def broker_peaks(
    count: int, groups: list[ProducerGroup], run: PauseRun, broker_ceiling: int
) -> str:
    """Per leader broker: the highest rate its principals together wrote over any 10 s."""
    lines = []
    for leader in sorted({group.leader for group in groups}):
        producers = [
            windows
            for group in groups
            if group.leader == leader
            for windows in group.windows().values()
        ]
        pause_ms, open_ms = run.paused_at * 1000, run.opened_at * 1000
        in_force = peak_rate(producers, pause_ms + CEILING_IN_FORCE_S * 1000, open_ms)
        whole = peak_rate(producers, pause_ms, open_ms)
        principals = sum(1 for group in groups if group.leader == leader)
        lines.append(
            f"| {count} | {principals} | {leader} | {in_force / 1024:.0f} | "
            f"{broker_ceiling / 1024:.0f} | {whole / 1024:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", default="1,8,32", help="comma-separated counts")
    parser.add_argument("--clients", default="java,rdkafka")
    parser.add_argument("--hold", type=float, default=60.0, help="PAUSE length, seconds")
    parser.add_argument(
        "--principals", type=int, default=1, help="principals per client, each its own topic"
    )
    parser.add_argument(
        "--shared-client-id", action="store_true", help="all N connections share one client.id"
    )
    parser.add_argument("--base-mib", type=float, default=BASE_RATE / MIB, help="base, MiB/s")
    parser.add_argument(
        "--producer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a client property over the harness's own, for every producer (repeatable), e.g. "
        "max.in.flight.requests.per.connection=1",
    )
    parser.add_argument(
        "--ceiling",
        choices=("on", "off"),
        default="on",
        help="the PAUSE ceiling: on (the shipped defaults) or off (the throttle bound alone, "
        "as tests/e2e measures it)",
    )
    parser.add_argument(
        "--broker-ceiling-mib",
        type=float,
        default=BROKER_CEILING / MIB,
        help="the per-broker PAUSE ceiling, MiB/s (with --ceiling on); lower it to make it "
        "bind at rates this machine can produce",
    )
    args = parser.parse_args(argv)
    counts = [int(text) for text in args.connections.split(",")]
    clients = args.clients.split(",")
    base_rate = int(args.base_mib * MIB)
    properties = dict(item.split("=", 1) for item in args.producer_property)
    print(f"machine: {describe_machine()}")
    print(f"start: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()}")
    print(f"base {base_rate / MIB:g} MiB/s, PAUSE {args.hold:g} s, connections {counts}")
    print(f"producer properties over the harness's: {properties or 'none'}")
    print(f"PAUSE ceiling: {args.ceiling}, per broker {args.broker_ceiling_mib:g} MiB/s")
    rows: list[str] = []
    summaries: list[str] = []
    brokers: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pause-bound-") as directory:
        base = Path(directory)
        java_classes = compile_java_producers(base / "java-classes")
        broker_ceiling = int(args.broker_ceiling_mib * MIB)
        extra = (
            {"volume.quota.pause.broker.max.bytes.per.second": str(broker_ceiling)}
            if args.ceiling == "on"
            else CEILING_OFF
        )
        with pause_bound_cluster(base / "cluster", base_rate, callback_extra=extra) as cluster:
            for count in counts:
                names = [
                    (client, leader, f"{client}-{count}" + (f"-{k}" if args.principals > 1 else ""))
                    for leader, client in enumerate(clients)
                    for k in range(args.principals)
                ]
                groups = [
                    ProducerGroup(client, count, name, f"data-{name}", leader, base,
                                  args.shared_client_id, properties)
                    for client, leader, name in names
                ]  # fmt: skip
                started = time.time()
                run = run_pause(cluster, groups, java_classes, hold_s=args.hold, after_open_s=45)
                print(f"N={count}: {time.time() - started:.0f} s, load {os.getloadavg()}")
                for group in groups:
                    figures = producer_figures(
                        group.client, group.principal, group.windows(), run.paused_at,
                        run.opened_at,
                    )  # fmt: skip
                    rows += [row.row() for row in figures]
                    summaries.append(summary(group, figures, run, base_rate))
                    print(summaries[-1], flush=True)
                brokers.append(broker_peaks(count, groups, run, broker_ceiling))
                print(brokers[-1], flush=True)
    print(f"end: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()}")
    print("\n" + SUMMARY_HEADER + "\n" + "\n".join(summaries))
    print("\n" + BROKER_HEADER + "\n" + "\n".join(brokers))
    print("\n" + ROW_HEADER + "\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
