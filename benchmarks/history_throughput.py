"""History job throughput: volume rows per second on Spark local[2] vs single-process pandas.

For each size (10 and 20 million volume rows by default) the benchmark generates a week of
one-minute snapshots for as many volumes as the size needs (so that every row is inside the
forecast's 7-day window), writes them as JSONL snapshot values, and then times, in one run:

- Spark ``history ingest`` of the JSONL (Structured Streaming, availableNow, to Parquet);
- Spark forecast, threshold replay (default grid) and balance, reading that Parquet dataset;
- pandas (one process): read the same Parquet dataset and run the same forecast.

Generating and writing the JSONL is not timed. Everything runs on this machine; the sizes
scale the number of volumes, so the growth of cost with size is visible.

Run: ``python -m benchmarks.history_throughput`` (``--rows 1000000`` for a quick look).
"""

# ruff: noqa: PLC0415 - Spark loads only when the benchmark runs, not on --help

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pandas as pd

from benchmarks.machine import describe_machine
from spark_history import synthetic
from spark_history.synthetic_jsonl import write_jsonl

_T = TypeVar("_T")

SNAPSHOTS_PER_VOLUME_WEEK = 7 * 24 * 60
VOLUMES_PER_BROKER = 4


def timed(results: dict[str, float], name: str, call: Callable[[], _T]) -> _T:
    started = time.monotonic()
    value = call()
    results[name] = time.monotonic() - started
    print(f"  {name}: {results[name]:.1f} s", file=sys.stderr, flush=True)
    return value


def prepare(rows: int, workdir: Path, seed: int) -> tuple[Path, int, int]:
    """Write the JSONL for about ``rows`` volume rows; returns (path, rows, volumes)."""
    volumes = max(
        VOLUMES_PER_BROKER,
        round(rows / SNAPSHOTS_PER_VOLUME_WEEK / VOLUMES_PER_BROKER) * VOLUMES_PER_BROKER,
    )
    config = synthetic.HistoryConfig(
        interval_seconds=60.0, missing_fraction=0.0, jitter_seconds=5.0
    )
    path = workdir / f"snapshots-{rows}.jsonl"
    written_rows = 0
    # Generate per block of brokers to bound memory; each block is one JSONL file.
    traces = synthetic.make_traces(seed, volumes, config)
    block = 200
    path.mkdir(parents=True, exist_ok=True)
    for start in range(0, volumes, block):
        frame = synthetic.history_frame(traces[start : start + block], seed + start, config)
        write_jsonl(frame, path / f"part-{start:06d}.jsonl")
        written_rows += len(frame)
        del frame
        gc.collect()
    return path, written_rows, volumes


def run_size(rows: int, workdir: Path, seed: int, at: datetime) -> dict[str, object]:
    from spark_history.balance import balance
    from spark_history.forecast.pandas_trend import forecast_volumes_pandas
    from spark_history.forecast.spark_trend import forecast_volumes
    from spark_history.ingest import JsonlSource, run_ingest
    from spark_history.session import SessionSettings, StageProgress, build_session
    from spark_history.thresholds import TuningParams, threshold_tradeoffs

    print(f"size {rows:,}: generating", file=sys.stderr, flush=True)
    started = time.monotonic()
    jsonl, actual_rows, volumes = prepare(rows, workdir, seed)
    generation = time.monotonic() - started
    dataset, checkpoint = workdir / f"dataset-{rows}", workdir / f"checkpoint-{rows}"
    seconds: dict[str, float] = {}
    session = build_session(SessionSettings(master="local[2]"))
    with StageProgress(session, interval=30.0):
        counts = timed(
            seconds,
            "spark ingest",
            lambda: run_ingest(session, JsonlSource(str(jsonl)), str(checkpoint), str(dataset)),
        )
        history = session.read.parquet(str(dataset))
        timed(seconds, "spark forecast", lambda: forecast_volumes(history, at).toPandas())
        timed(
            seconds,
            "spark threshold replay",
            lambda: threshold_tradeoffs(history, at, TuningParams()),
        )
        timed(seconds, "spark balance", lambda: balance(history, at).toPandas())
    frame = timed(
        seconds,
        "pandas read parquet",
        lambda: pd.read_parquet(
            dataset,
            columns=["brokerId", "volumeName", "path", "snapshotAt", "capacity", "consumed"],
        ),
    )
    timed(seconds, "pandas forecast", lambda: forecast_volumes_pandas(frame, at))
    spark_forecast = seconds["spark forecast"]
    pandas_forecast = seconds["pandas read parquet"] + seconds["pandas forecast"]
    spark_total = sum(value for key, value in seconds.items() if key.startswith("spark"))
    return {
        "rows": actual_rows,
        "volumes": volumes,
        "messages": counts.messages,
        "rowsWritten": counts.rows,
        "generationSeconds": generation,
        "seconds": seconds,
        "rowsPerSecond": {
            "spark ingest": actual_rows / seconds["spark ingest"],
            "spark forecast": actual_rows / spark_forecast,
            "spark ingest + forecast + thresholds + balance": actual_rows / spark_total,
            "pandas read + forecast": actual_rows / pandas_forecast,
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="History job throughput, Spark vs pandas.")
    parser.add_argument(
        "--rows",
        default="10000000,20000000",
        help="comma-separated sizes in volume rows (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, help="keep data here (default: a temp dir)")
    parser.add_argument("--json", help="also write the results to this file")
    arguments = parser.parse_args(argv)
    sizes = [int(part) for part in arguments.rows.split(",") if part.strip()]
    at = synthetic.HistoryConfig().at.astimezone(UTC)
    workdir = arguments.workdir or Path(tempfile.mkdtemp(prefix="history-throughput-"))
    results = []
    try:
        for size in sizes:
            results.append(run_size(size, workdir, arguments.seed, at))
            for path in workdir.iterdir():
                shutil.rmtree(path, ignore_errors=True)
    finally:
        if arguments.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"machine: {describe_machine()}")
    print("| volume rows | volumes | step | seconds | volume rows/s |")
    print("|---|---|---|---|---|")
    for result in results:
        seconds = result["seconds"]
        assert isinstance(seconds, dict)
        for step, value in seconds.items():
            print(
                f"| {result['rows']:,} | {result['volumes']:,} | {step} | {value:.1f} | "
                f"{result['rows'] / value:,.0f} |"
            )
        rates = result["rowsPerSecond"]
        assert isinstance(rates, dict)
        for name, rate in rates.items():
            print(
                f"| {result['rows']:,} | {result['volumes']:,} | **{name}** | | **{rate:,.0f}** |"
            )
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
