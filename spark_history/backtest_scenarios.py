"""Write the synthetic history as JSONL for ``history backtest``.

``python -m spark_history.backtest_scenarios synthetic --output FILE`` writes the history of
``spark_history.synthetic`` (14 days of 5-minute snapshots: linear growth with or without
daily cycles, steps, retention plateaus, sawtooth, idle, near-full-then-cleaned volumes).
Only the history is written: the backtest scores forecasts inside the recorded history,
never against the generator's own truth.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from spark_history import synthetic
from spark_history.synthetic_jsonl import write_jsonl

GENERATORS = ("synthetic",)
SYNTHETIC_HISTORY_HOURS = 14 * 24.0


def history_rows(generator: str, seed: int, volumes: int) -> pd.DataFrame:
    """The generator's history rows (the ingest's volume columns)."""
    if generator not in GENERATORS:
        raise ValueError(f"unknown generator {generator!r}: one of {', '.join(GENERATORS)}")
    config = synthetic.HistoryConfig(history_hours=SYNTHETIC_HISTORY_HOURS, interval_seconds=300)
    return synthetic.history_frame(synthetic.make_traces(seed, volumes, config), seed, config)


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
