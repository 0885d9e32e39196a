"""What ``history report`` reads: its hourly rollup, and the raw window beside it.

Every analysis of the report reads the hourly rollup when its buckets are the rollup's hours
(``hourly_rollup.serves``) and, for the limits' replay, when no snapshot of its window was
refused (``replay_rows.rollup_serves``). The raw window then keeps only what the rollup lacks:
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
from spark_history.replay_rows import ReplayWindow, rollup_serves
from spark_history.rollup_store import has_sink_log
from spark_history.weekly_growth import WEEK_HOURS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_history.forecast.trend import ForecastParams
    from spark_history.history_input import RawWindow
    from spark_history.report import PanelParams
    from spark_history.thresholds import TuningParams


def rollup_and_window(
    session: SparkSession,
    path: str,
    at: datetime,
    params: tuple[ForecastParams, TuningParams],
    windows: tuple[float, float],
) -> tuple[DataFrame | None, RawWindow]:
    """The report's hourly rollup (None off the hour) and its raw window: where every analysis
    reads the stored rollup, only what the rollup lacks (tombstones, record timestamps), and
    the stale dates' raw rows read once to compute theirs."""
    (forecast_params, tuning), (longest, widest) = params, windows
    window = None
    if not _spark_call(lambda: has_sink_log(session, path)):
        # No stored rollup: it is computed from the window's rows, read once and kept.
        window = _spark_call(lambda: load_window(session, path, at, widest))
    source = window.rows if window else _spark_call(lambda: rows_with_receipts(session, path))
    rollup = _spark_call(
        lambda: _rollup_for(session, path, source, at, forecast_params, lookback_hours=longest)
    )
    if window is None:
        served = rollup is not None and _spark_call(lambda: replay_reads_rollup(rollup, at, tuning))
        columns = RECEIPT_COLUMNS if served else WINDOW_COLUMNS
        window = _spark_call(lambda: load_window(session, path, at, widest, columns=columns))
    return rollup, window


def replay_reads_rollup(rollup: DataFrame, at: datetime, tuning: TuningParams) -> bool:
    """True when the limits' replay reads the rollup (``replay_rows.rollup_serves``); says why
    not when only the consumer's refusals stop it."""
    skew = tuning.policy.max_clock_skew_seconds
    window = ReplayWindow(at, tuning.lookback_hours, tuning.bucket_seconds, skew)
    if not serves(at, tuning.lookback_hours, tuning.bucket_seconds):
        return False
    if rollup_serves(rollup, window):
        return True
    print(
        f"[history] some snapshots in the replay's window were dated more than {skew:g} s "
        "after their Kafka record timestamp (the consumer refused them): the replay reads the "
        "raw rows to leave them out",
        file=sys.stderr,
    )
    return False


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
