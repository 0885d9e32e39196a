"""What ``history report`` reads: its hourly rollup, and the raw window beside it.

Every analysis of the report reads the hourly rollup when its buckets are the rollup's hours
(``hourly_rollup.serves``) and, for the limits' replay, when no snapshot of its window was
refused (``replay_rows.serving_rollup``). The raw window then keeps only what the rollup lacks:
the tombstones and each message's Kafka record timestamp (``history_input.RECEIPT_COLUMNS``).
Otherwise it keeps every column, read once for the analyses that need the raw rows.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING

from spark_history.balance import DEFAULT_LOOKBACK_HOURS
from spark_history.command_runs import _rollup_for, _spark_call
from spark_history.history_input import (
    RECEIPT_COLUMNS,
    WINDOW_COLUMNS,
    load_window,
    rows_with_receipts,
)
from spark_history.hourly_rollup import serves
from spark_history.replay_rows import ServingRollup, serving_rollup
from spark_history.rollup_store import has_sink_log
from spark_history.thresholds import TuningParams, replay_window
from spark_history.weekly_growth import WEEK_HOURS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_history.forecast.trend import ForecastParams
    from spark_history.history_input import RawWindow
    from spark_history.report import PanelParams


def rollup_and_window(
    session: SparkSession,
    path: str,
    at: datetime,
    params: tuple[ForecastParams, TuningParams],
    windows: tuple[float, float],
) -> tuple[DataFrame | None, ServingRollup | None, RawWindow]:
    """The report's hourly rollup (None off the hour), the same checked for the limits'
    replay (``replay_rollup``), and its raw window: where every analysis reads the stored
    rollup, only what the rollup lacks (tombstones, record timestamps), and the stale dates'
    raw rows read once to compute theirs."""
    (forecast_params, tuning), (longest, widest) = params, windows
    window = None
    if not _spark_call(lambda: has_sink_log(session, path)):
        # No stored rollup: it is computed from the window's rows, read once and kept.
        window = _spark_call(lambda: load_window(session, path, at, widest))
    source = window.rows if window else _spark_call(lambda: rows_with_receipts(session, path))
    rollup = _spark_call(
        lambda: _rollup_for(session, path, source, at, forecast_params, lookback_hours=longest)
    )
    serving = None
    if rollup is not None:
        serving = _spark_call(lambda: replay_rollup(rollup, at, tuning))
    if window is None:
        columns = RECEIPT_COLUMNS if serving is not None else WINDOW_COLUMNS
        window = _spark_call(lambda: load_window(session, path, at, widest, columns=columns))
    return rollup, serving, window


def replay_rollup(rollup: DataFrame, at: datetime, tuning: TuningParams) -> ServingRollup | None:
    """``rollup`` checked to serve the limits' replay (``replay_rows.serving_rollup``), or
    None; says why not when only the consumer's refusals stop it."""
    if not serves(at, tuning.lookback_hours, tuning.bucket_seconds):
        return None
    serving = serving_rollup(rollup, replay_window(at, tuning))
    if serving is None:
        print(
            f"[history] some snapshots in the replay's window were dated more than "
            f"{tuning.policy.max_clock_skew_seconds:g} s after their Kafka record timestamp "
            "(the consumer refused them): the replay reads the raw rows to leave them out",
            file=sys.stderr,
        )
    return serving


def report_windows(
    panels: PanelParams, forecast_params: ForecastParams, tuning: TuningParams
) -> tuple[float, float]:
    """The report's longest window in hours (every analysis reads the rollup in its buckets),
    and the same in hours of the raw rows (a lookback counts buckets, which may be wider)."""
    longest = max(
        forecast_params.lookback_hours,
        (panels.growth_weeks + 1) * WEEK_HOURS,
        tuning.lookback_hours,
        DEFAULT_LOOKBACK_HOURS,
    )
    bucket = max(forecast_params.bucket_seconds, tuning.bucket_seconds)
    return longest, longest * max(1.0, bucket / 3600.0)
