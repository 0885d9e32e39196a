"""Threshold tuning: which soft and hard limits would have warned early without throttling much?

Each candidate pair (MinFreePercentage soft and hard) is replayed over every volume's history
with ``decision_replay.replay_volume`` (one ``applyInPandas`` call per volume, all candidates
at once), and the per-volume figures are summed per candidate. The recommendation is the
candidate whose every observed hard breach was preceded by at least ``min_warning_hours`` of
throttling, with the fewest throttled plus paused hours (then the fewest flips, then the
lower soft limit). Candidates whose hard limit was never reached in the history have no
observed warning and are not recommended: history cannot vouch for them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.decision_replay import Candidate, replay_volume

DEFAULT_SOFT_GRID: tuple[float, ...] = (5.0, 7.5, 10.0, 12.5, 15.0, 20.0, 25.0, 30.0)
DEFAULT_HARD_GRID: tuple[float, ...] = (2.0, 3.0, 5.0, 7.5, 10.0)
DEFAULT_MIN_WARNING_HOURS = 6.0

_REPLAY_SCHEMA = (
    "brokerId int, volumeName string, softPercent double, hardPercent double, "
    "throttledHours double, pausedHours double, flips long, episodes long, hardEpisodes long, "
    "warningHours array<double>"
)

TRADEOFF_COLUMNS: tuple[str, ...] = (
    "softPercent",
    "hardPercent",
    "throttledHours",
    "pausedHours",
    "flips",
    "episodes",
    "hardEpisodes",
    "minWarningHours",
    "medianWarningHours",
    "meetsMinimumWarning",
    "recommended",
)


@dataclass(frozen=True, slots=True)
class TuningParams:
    soft_grid: Sequence[float] = DEFAULT_SOFT_GRID
    hard_grid: Sequence[float] = DEFAULT_HARD_GRID
    min_warning_hours: float = DEFAULT_MIN_WARNING_HOURS
    max_gap_hours: float = 0.25
    merge_gap_hours: float = 1.0
    lookback_hours: float | None = None
    """Replay only this much history before ``at`` (default: all of it)."""

    def candidates(self) -> list[Candidate]:
        """Every (soft, hard) pair of the grids with soft > hard (else THROTTLE never shows)."""
        return [
            Candidate(soft, hard)
            for soft, hard in itertools.product(
                sorted(set(self.soft_grid)), sorted(set(self.hard_grid))
            )
            if soft > hard
        ]


def replay_candidates(rows: DataFrame, at: datetime, params: TuningParams) -> DataFrame:
    """Per volume and candidate: hours throttled and paused, flips, episodes, warnings."""
    candidates = params.candidates()
    window = rows.where(F.col("snapshotAt") <= F.lit(at))
    if params.lookback_hours is not None:
        window = window.where(
            F.col("snapshotAt") > F.lit(at) - F.expr(f"INTERVAL {params.lookback_hours} HOURS")
        )
    narrow = window.select(
        "brokerId",
        "volumeName",
        (F.unix_micros(F.col("snapshotAt")) / 1e6).alias("t"),
        "free",
        "capacity",
    )

    def per_volume(frame: pd.DataFrame) -> pd.DataFrame:
        ordered = frame.sort_values("t", kind="stable")
        times = ordered["t"].to_numpy(dtype=np.float64)
        free = ordered["free"].to_numpy(dtype=np.float64)
        capacity = ordered["capacity"].to_numpy(dtype=np.int64)
        records = []
        for candidate in candidates:
            stats = replay_volume(
                times,
                free,
                capacity,
                candidate,
                max_gap_hours=params.max_gap_hours,
                merge_gap_hours=params.merge_gap_hours,
            )
            records.append(
                {
                    "brokerId": int(ordered["brokerId"].iloc[0]),
                    "volumeName": str(ordered["volumeName"].iloc[0]),
                    "softPercent": candidate.soft_percent,
                    "hardPercent": candidate.hard_percent,
                    "throttledHours": stats.throttled_hours,
                    "pausedHours": stats.paused_hours,
                    "flips": stats.flips,
                    "episodes": stats.episodes,
                    "hardEpisodes": stats.hard_episodes,
                    "warningHours": stats.warning_hours,
                }
            )
        return pd.DataFrame.from_records(records)

    return narrow.groupBy("brokerId", "volumeName").applyInPandas(per_volume, _REPLAY_SCHEMA)


def threshold_tradeoffs(
    rows: DataFrame, at: datetime, params: TuningParams | None = None
) -> pd.DataFrame:
    """One row per candidate over all volumes, with the recommendation flagged."""
    params = params or TuningParams()
    per_volume = replay_candidates(rows, at, params)
    summed = (
        per_volume.groupBy("softPercent", "hardPercent")
        .agg(
            F.sum("throttledHours").alias("throttledHours"),
            F.sum("pausedHours").alias("pausedHours"),
            F.sum("flips").alias("flips"),
            F.sum("episodes").alias("episodes"),
            F.sum("hardEpisodes").alias("hardEpisodes"),
            F.flatten(F.collect_list("warningHours")).alias("warnings"),
        )
        .toPandas()
    )
    return summarise_tradeoffs(summed, params.min_warning_hours)


def summarise_tradeoffs(summed: pd.DataFrame, min_warning_hours: float) -> pd.DataFrame:
    """Warning statistics and the recommendation from per-candidate sums (small, pandas)."""
    table = summed.copy()
    warnings = [
        np.asarray(list(values) if values is not None else [], dtype=np.float64)
        for values in table["warnings"]
    ]
    table["minWarningHours"] = [float(w.min()) if w.size else math.nan for w in warnings]
    table["medianWarningHours"] = [float(np.median(w)) if w.size else math.nan for w in warnings]
    table["meetsMinimumWarning"] = [
        bool(w.size) and float(w.min()) >= min_warning_hours for w in warnings
    ]
    table = table.drop(columns=["warnings"]).sort_values(["softPercent", "hardPercent"])
    table["recommended"] = False
    eligible = table[table["meetsMinimumWarning"]].copy()
    if not eligible.empty:
        eligible["cost"] = eligible["throttledHours"] + eligible["pausedHours"]
        best = eligible.sort_values(["cost", "flips", "softPercent"], kind="stable").index[0]
        table.loc[best, "recommended"] = True
    return table.reset_index(drop=True)[list(TRADEOFF_COLUMNS)]
