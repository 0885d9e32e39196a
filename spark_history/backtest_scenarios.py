"""Write the repository's synthetic histories as JSONL for ``history backtest``.

``python -m spark_history.backtest_scenarios GENERATOR --output FILE`` writes the history
(snapshots before the generator's forecast instant, with its measurement noise, gaps and
flaws) of one generator: ``synthetic`` (``spark_history.synthetic``, 14 days) or one of the
benchmark generators (``benchmarks/history_scenarios*.py``: ``rates``, ``field``, ``cloud``,
``blind``, ``sre``, ``fresh``). Only their histories are written: the backtest scores
forecasts inside the recorded history, never against a generator's own truth. A development
tool: the benchmark generators are imported from the source tree, not from the job's zip.
"""

# ruff: noqa: PLC0415 - each generator is imported only when chosen

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from spark_history.synthetic_jsonl import write_jsonl

BENCHMARK_GENERATORS = {
    "rates": "benchmarks.history_scenarios",
    "field": "benchmarks.history_scenarios_field",
    "cloud": "benchmarks.history_scenarios_cloud",
    "blind": "benchmarks.history_scenarios_blind",
    "sre": "benchmarks.history_scenarios_sre",
    "fresh": "benchmarks.history_scenarios_fresh",
}
GENERATORS = ("synthetic", *BENCHMARK_GENERATORS)
SYNTHETIC_HISTORY_HOURS = 14 * 24.0


def history_rows(generator: str, seed: int, volumes: int) -> pd.DataFrame:
    """The generator's history rows (the ingest's volume columns)."""
    if generator == "synthetic":
        from spark_history import synthetic

        config = synthetic.HistoryConfig(
            history_hours=SYNTHETIC_HISTORY_HOURS, interval_seconds=300
        )
        return synthetic.history_frame(synthetic.make_traces(seed, volumes, config), seed, config)
    module = importlib.import_module(BENCHMARK_GENERATORS[generator])
    rows, _tombstones, _truths = module.generate(seed, volumes, 7 * 24.0)
    frame: pd.DataFrame = rows
    return frame


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spark_history.backtest_scenarios", description=__doc__
    )
    parser.add_argument("generator", choices=GENERATORS)
    parser.add_argument("--output", type=Path, required=True, help="the JSONL file to write")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--volumes", type=int, default=48)
    parser.add_argument(
        "--hard-percent",
        type=float,
        default=5.0,
        help="the snapshots' hard limit, MinFreePercentage (default: %(default)g)",
    )
    arguments = parser.parse_args(argv)
    rows = history_rows(arguments.generator, arguments.seed, arguments.volumes)
    lines = write_jsonl(rows, arguments.output, hard_percent=arguments.hard_percent)
    volumes = rows.groupby(["brokerId", "volumeName"]).ngroups
    print(f"wrote {arguments.output}: {lines} snapshots, {volumes} volumes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
