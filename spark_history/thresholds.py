"""Threshold tuning: which soft and hard limits would have warned early without throttling much?

Two replays over the lookback window (30 days by default), both on hourly pre-aggregates:

- **the cluster** (``cluster_replay``, the consumer's rule): per candidate and for the limits
  in force, the cluster-hours THROTTLE and PAUSE (an hour counts in the worst state the cluster
  reached in it), the hours paused only for missing data, and state flips. This is what
  producers saw, and what the recommendation minimises;
- **each volume** (``decision_replay.replay_volume`` on the volume's hourly minimum of free
  space): episodes, the ones reaching PAUSE, and the warning each gave (hours from the first
  soft breach to the first hard breach).

The recommendation is the candidate with the fewest cluster-hours throttled plus paused (then
paused, then flips, then the higher hard and soft limits: more margin for the same cost) among
those whose every observed hard breach had ``min_warning_hours`` of warning; a candidate whose
hard limit was never reached qualifies (nothing to warn of), which is why the table says
whether the warning was observed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.broker_samples import broker_buckets, to_samples, tombstone_times, window_rows
from spark_history.cluster_replay import ClusterTimeline, ReplayPolicy, replay_cluster
from spark_history.decision_replay import Candidate, replay_volume

DEFAULT_SOFT_GRID: tuple[float, ...] = (5.0, 7.5, 10.0, 12.5, 15.0, 20.0, 25.0, 30.0)
DEFAULT_HARD_GRID: tuple[float, ...] = (2.0, 3.0, 5.0, 7.5, 10.0)
DEFAULT_MIN_WARNING_HOURS = 6.0
IN_FORCE = "in force"

_VOLUME_SCHEMA = (
    "brokerId int, volumeName string, softPercent double, hardPercent double, "
    "episodes long, hardEpisodes long, warningHours array<double>"
)

TRADEOFF_COLUMNS: tuple[str, ...] = (
    "limits",
    "softPercent",
    "hardPercent",
    "throttledHours",
    "pausedHours",
    "missingDataPausedHours",
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
    merge_gap_hours: float = 1.0
    lookback_hours: float = 30 * 24.0
    """Replay this much history before ``at``."""
    bucket_seconds: float = 3600.0
    policy: ReplayPolicy = field(default_factory=ReplayPolicy)

    def candidates(self) -> list[Candidate]:
        """Every (soft, hard) pair of the grids with soft > hard (else THROTTLE never shows)."""
        return [
            Candidate(soft, hard)
            for soft, hard in itertools.product(
                sorted(set(self.soft_grid)), sorted(set(self.hard_grid))
            )
            if soft > hard
        ]


@dataclass(frozen=True, slots=True)
class Tradeoffs:
    table: pd.DataFrame
    """One row for the limits in force, then one per candidate (:data:`TRADEOFF_COLUMNS`)."""
    in_force: ClusterTimeline
    """The cluster hour by hour under the limits in force (the incidents timeline)."""
    buckets: pd.DataFrame
    """Per broker and hour: the worst volume (``broker_samples.broker_buckets``)."""


def replay_volumes(rows: DataFrame, at: datetime, params: TuningParams) -> DataFrame:
    """Per volume and candidate: episodes, hard episodes and warnings, on hourly minima."""
    candidates = params.candidates()
    step = params.bucket_seconds
    offset = F.unix_micros(F.col("snapshotAt")) / 1e6 - F.lit(at.timestamp())
    hourly = (
        window_rows(rows, at, params.lookback_hours)
        .withColumn("bucket", F.ceil(offset / F.lit(step)))
        .groupBy("brokerId", "volumeName", "bucket")
        .agg(F.min("free").alias("free"), F.max_by("capacity", "snapshotAt").alias("capacity"))
    )

    def per_volume(frame: pd.DataFrame) -> pd.DataFrame:
        ordered = frame.sort_values("bucket", kind="stable")
        times = ordered["bucket"].to_numpy(dtype=np.float64) * step
        free = ordered["free"].to_numpy(dtype=np.float64)
        capacity = ordered["capacity"].to_numpy(dtype=np.int64)
        records = []
        for candidate in candidates:
            stats = replay_volume(
                times,
                free,
                capacity,
                candidate,
                max_gap_hours=step / 3600.0,
                merge_gap_hours=params.merge_gap_hours,
            )
            records.append(
                {
                    "brokerId": int(ordered["brokerId"].iloc[0]),
                    "volumeName": str(ordered["volumeName"].iloc[0]),
                    "softPercent": candidate.soft_percent,
                    "hardPercent": candidate.hard_percent,
                    "episodes": stats.episodes,
                    "hardEpisodes": stats.hard_episodes,
                    "warningHours": stats.warning_hours,
                }
            )
        return pd.DataFrame.from_records(records)

    return hourly.groupBy("brokerId", "volumeName").applyInPandas(per_volume, _VOLUME_SCHEMA)


def cluster_grid(buckets: pd.DataFrame, at: datetime, params: TuningParams) -> np.ndarray:
    """Bucket ends from the first bucket with data to ``at``."""
    step = params.bucket_seconds
    end = at.timestamp()
    if buckets.empty:
        return np.array([end])
    first = math.ceil((float(buckets["t"].min()) - end) / step)
    return end + step * np.arange(first, 1, dtype=np.float64)


def threshold_tradeoffs(
    rows: DataFrame,
    at: datetime,
    params: TuningParams | None = None,
    tombstones: DataFrame | None = None,
) -> Tradeoffs:
    """The cluster replay of the limits in force and of every candidate, plus the per-volume
    warning statistics, with the recommendation flagged."""
    params = params or TuningParams()
    buckets = broker_buckets(rows, at, params.lookback_hours, params.bucket_seconds)
    samples = to_samples(buckets, tombstone_times(tombstones, at))
    grid = cluster_grid(buckets, at, params)
    in_force = replay_cluster(samples, grid, params.policy, None)
    records = [{"limits": IN_FORCE, **in_force.hours(params.bucket_seconds)}]
    for candidate in params.candidates():
        timeline = replay_cluster(samples, grid, params.policy, candidate)
        records.append(
            {
                "limits": "candidate",
                "softPercent": candidate.soft_percent,
                "hardPercent": candidate.hard_percent,
                **timeline.hours(params.bucket_seconds),
            }
        )
    cluster = pd.DataFrame.from_records(records)
    volumes = (
        replay_volumes(rows, at, params)
        .groupBy("softPercent", "hardPercent")
        .agg(
            F.sum("episodes").alias("episodes"),
            F.sum("hardEpisodes").alias("hardEpisodes"),
            F.flatten(F.collect_list("warningHours")).alias("warnings"),
        )
        .toPandas()
    )
    merged = cluster.merge(volumes, on=["softPercent", "hardPercent"], how="left")
    return Tradeoffs(summarise_tradeoffs(merged, params.min_warning_hours), in_force, buckets)


def summarise_tradeoffs(merged: pd.DataFrame, min_warning_hours: float) -> pd.DataFrame:
    """Warning statistics and the recommendation (small, pandas)."""
    table = merged.copy()
    warnings = [
        np.asarray(list(values) if isinstance(values, list | np.ndarray) else [], dtype=float)
        for values in table["warnings"]
    ]
    table["minWarningHours"] = [float(w.min()) if w.size else math.nan for w in warnings]
    table["medianWarningHours"] = [float(np.median(w)) if w.size else math.nan for w in warnings]
    hard = table["hardEpisodes"].fillna(0)
    table["meetsMinimumWarning"] = [
        limits != IN_FORCE
        and (episodes == 0 or (w.size > 0 and float(w.min()) >= min_warning_hours))
        for limits, episodes, w in zip(table["limits"], hard, warnings, strict=True)
    ]
    table = table.drop(columns=["warnings"])
    table["recommended"] = False
    eligible = table[table["meetsMinimumWarning"]].copy()
    if not eligible.empty:
        eligible["cost"] = eligible["throttledHours"] + eligible["pausedHours"]
        eligible["lessMargin"] = -eligible["hardPercent"]
        eligible["lessSoftMargin"] = -eligible["softPercent"]
        order = ["cost", "pausedHours", "flips", "lessMargin", "lessSoftMargin"]
        best = eligible.sort_values(order, kind="stable").index[0]
        table.loc[best, "recommended"] = True
    return table.reset_index(drop=True)[list(TRADEOFF_COLUMNS)]
