"""Ingest validation throughput: ``classify_messages`` + ``volume_rows`` on Spark local[2].

Times the part of ``history ingest`` that reads messages: validation (the verdict of every
message), the volume rows and their thresholds, on ``--messages`` synthetic Kafka messages
(keyed, ``check_key=True``) of ``--volumes`` volumes each, all valid as publishers send them.
The messages are built by Spark SQL and cached before timing; each timed run writes the rows
to Spark's ``noop`` sink, so every column is computed and nothing is written.

``--implementation`` names a module with the functions of ``spark_history.snapshot_rows``
(repeat it to compare two versions in one session: runs alternate between them, so that the
load of a shared machine falls on both alike). Each run prints its time and the 1-minute
load average, and the CPU seconds the process tree (driver, JVM, Python workers) used, which
a busy machine disturbs less than wall time; the summary gives medians per implementation.

Run: ``python -m benchmarks.ingest_validation`` (``--messages 200000 --volumes 4 --runs 3``).
"""

# ruff: noqa: PLC0415 - Spark loads only when the benchmark runs, not on --help

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from benchmarks.machine import describe_machine

DEFAULT_IMPLEMENTATION = "spark_history.snapshot_rows"


def message_frame(session: Any, messages: int, volumes: int, partitions: int) -> Any:
    """``messages`` keyed snapshot messages (key, value, timestamp), cached and counted."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

    broker = F.col("id") % 1000
    instant = F.date_format(
        F.timestamp_seconds(F.lit(1_795_000_000) + F.col("id") * 6),
        "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'",
    )
    volume_list = F.concat_ws(
        ",",
        F.transform(
            F.sequence(F.lit(1), F.lit(volumes)),
            lambda index: F.format_string(
                '{"volumeName":"/dev/nvme%dn1","path":"/data/%d","capacity":%d,"consumed":%d}',
                index,
                index,
                F.lit(4_000_000_000_000) * index,
                (F.col("id") * 7919 + index * 104_729) % (F.lit(4_000_000_000_000) * index),
            ),
        ),
    )
    value = F.concat(
        F.lit('{"schemaVersion":1,"brokerId":'),
        broker.cast("string"),
        F.lit(',"snapshotAt":"'),
        instant,
        F.lit('","softLimit":{"type":"MinFreePercentage","level":10.0},'),
        F.lit('"hardLimit":{"type":"MinFreeBytes","level":50000000000},"volumes":['),
        volume_list,
        F.lit("]}"),
    )
    frame = (
        session.range(messages, numPartitions=partitions)
        .select(
            broker.cast("string").cast("binary").alias("key"),
            value.cast("binary").alias("value"),
            F.timestamp_seconds(F.lit(1_795_000_000) + F.col("id") * 6).alias("timestamp"),
        )
        .cache()
    )
    frame.count()
    return frame


def process_tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process, the Spark JVM and its Python workers."""
    import psutil

    total = 0.0
    this = psutil.Process()
    for process in [this, *this.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def timed_run(implementation: ModuleType, messages: Any) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process tree) of one run."""
    classified = implementation.classify_messages(messages, check_key=True)
    rows = implementation.volume_rows(classified)
    cpu_before = process_tree_cpu_seconds()
    started = time.monotonic()
    rows.write.format("noop").mode("overwrite").save()
    elapsed = time.monotonic() - started
    return elapsed, process_tree_cpu_seconds() - cpu_before


def check_rows(implementation: ModuleType, messages: Any, expected: int) -> None:
    """Every message valid: one row per volume, none rejected (not timed)."""
    rows = implementation.volume_rows(implementation.classify_messages(messages, check_key=True))
    count = rows.count()
    if count != expected:
        raise SystemExit(f"{implementation.__name__}: {count} volume rows, expected {expected}")


def run(arguments: argparse.Namespace) -> dict[str, object]:
    from spark_history.session import SessionSettings, build_session

    implementations = [importlib.import_module(name) for name in arguments.implementation]
    session = build_session(SessionSettings(master="local[2]"))
    messages = message_frame(session, arguments.messages, arguments.volumes, partitions=4)
    expected_rows = arguments.messages * arguments.volumes
    for implementation in implementations:
        check_rows(implementation, messages, expected_rows)  # also warms the Python workers
    seconds: dict[str, list[float]] = {module.__name__: [] for module in implementations}
    cpu: dict[str, list[float]] = {module.__name__: [] for module in implementations}
    loads: list[float] = []
    for attempt in range(arguments.runs):
        for implementation in implementations:
            elapsed, cpu_seconds = timed_run(implementation, messages)
            load = os.getloadavg()[0]
            seconds[implementation.__name__].append(elapsed)
            cpu[implementation.__name__].append(cpu_seconds)
            loads.append(load)
            print(
                f"  run {attempt + 1} {implementation.__name__}: {elapsed:.1f} s, "
                f"{cpu_seconds:.1f} CPU s (load average {load:.2f})",
                file=sys.stderr,
                flush=True,
            )
    session.stop()
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    return {
        "machine": describe_machine(),
        "messages": arguments.messages,
        "volumesPerMessage": arguments.volumes,
        "volumeRows": expected_rows,
        "seconds": seconds,
        "medianSeconds": medians,
        "messagesPerSecond": {name: arguments.messages / value for name, value in medians.items()},
        "cpuSeconds": cpu,
        "medianCpuSeconds": cpu_medians,
        "messagesPerCpuSecond": {
            name: arguments.messages / value for name, value in cpu_medians.items()
        },
        "loadAverage1m": {"min": min(loads), "max": max(loads)},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--volumes", type=int, default=4, help="volumes per message")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per implementation")
    parser.add_argument(
        "--implementation",
        action="append",
        help=f"module with classify_messages and volume_rows (default {DEFAULT_IMPLEMENTATION})",
    )
    arguments = parser.parse_args(argv)
    arguments.implementation = arguments.implementation or [DEFAULT_IMPLEMENTATION]
    print(json.dumps(run(arguments), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
