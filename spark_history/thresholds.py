"""Threshold tuning: which soft and hard limits would have warned early without throttling much?

Two replays over the lookback window (30 days by default), both on hourly pre-aggregates:

- **the cluster** (``cluster_replay``, the consumer's rule): per candidate and for the limits
  in force, the cluster-hours THROTTLE and PAUSE (an hour counts in the worst state the cluster
  reached in it), the hours paused only for missing data, and state flips. This is what
  producers saw, and what the recommendation minimises;
- **each volume** (``decision_replay.replay_candidates`` on the volume's hourly minimum of free
  space): episodes, the ones reaching PAUSE, and the warning each gave (hours from the first
  soft breach to the first hard breach).

A candidate may be recommended only if it is never less safe than the history allows:

- **it covers the fleet's climb**: its soft limit sits at least as far above its hard limit as
  the fleet's volumes climb within ``min_warning_hours``, per volume class (volumes of like
  capacity, ``decision_replay.capacity_class``): the 95th percentile over the class's volumes of
  each volume's largest rise of used share within that time, and the steepest class counts. So
  a volume climbing like 95 % of its class's worst gets that much warning, whether or not a hard
  breach was observed, and a few small disks are not averaged away by many large ones;
- **every observed hard breach had ``min_warning_hours`` of warning**;
- **it warns at the worst dip**: a soft limit lower than the one in force must still be above
  the lowest free share any volume reached, or the warning that dip gave would be gone.

Hours an operator's override decided (``override_history``: the override topic's records judged
as the consumer judges them) are the override's state for the limits in force and every
candidate alike; they are counted apart (``overrideOpenHours``, ``overridePausedHours``) and not
in ``throttledHours`` / ``pausedHours``, so no limits are preferred for hours no limits could
have changed. An hour counts under an override only when the override was in force all of it.

Among those, the one with the fewest cluster-hours throttled plus paused (then paused, then
flips, then the higher hard and soft limits: more margin for the same cost). It is recommended
only if it is better than the limits in force: they fail one of the conditions above, or it
throttles and pauses fewer hours; otherwise the advice is to keep the limits in force.
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

from spark_history.broker_samples import to_samples, tombstone_times, window_rows
from spark_history.cluster_replay import (
    ClusterTimeline,
    ReplayPolicy,
    replay_cluster,
)
from spark_history.decision_replay import (
    Candidate,
    ClassClimb,
    capacity_class,
    class_climbs,
    largest_climb_percent,
    replay_candidates,
)
from spark_history.override_history import OverrideInterval, forced_states, whole_buckets
from spark_history.replay_rows import (
    LIMIT_FIELDS,
    ReplayRows,
    ReplayWindow,
    ServingRollup,
    replay_rows,
)
from spark_history.volume_groups import each_volume

DEFAULT_SOFT_GRID: tuple[float, ...] = (5.0, 7.5, 10.0, 12.5, 15.0, 20.0, 25.0, 30.0)
DEFAULT_HARD_GRID: tuple[float, ...] = (2.0, 3.0, 5.0, 7.5, 10.0)
DEFAULT_MIN_WARNING_HOURS = 6.0
IN_FORCE = "in force"

_VOLUME_SCHEMA = (
    "brokerId int, volumeName string, softPercent double, hardPercent double, "
    "episodes long, hardEpisodes long, warningHours array<double>, climbPercent double, "
    "lowestFreePercent double, volumeClass string"
)
CLIMB_QUANTILE = 0.95
"""A class's climb is this quantile, over its volumes, of each volume's largest climb."""
_UNITS = {"MinFreePercentage": "% free", "MinFreeBytes": " bytes free", "ConsumedSpace": " bytes"}

TRADEOFF_COLUMNS: tuple[str, ...] = (
    "limits",
    "softPercent",
    "hardPercent",
    "throttledHours",
    "pausedHours",
    "missingDataPausedHours",
    "overrideOpenHours",
    "overridePausedHours",
    "flips",
    "episodes",
    "hardEpisodes",
    "minWarningHours",
    "medianWarningHours",
    "meetsMinimumWarning",
    "coversFleetClimb",
    "warnsAtWorstDip",
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
class LimitsInForce:
    text: str
    """e.g. "soft 10% free, hard 5% free (all 48 volumes)"."""
    volumes: int
    soft_percent: float | None = None
    """The most common pair's soft limit when it is MinFreePercentage, else None."""
    hard_percent: float | None = None


@dataclass(frozen=True, slots=True)
class FleetEvidence:
    """What the history says about the fleet, whatever the limits."""

    climb_percent: float
    """The fleet's climb within ``min_warning_hours`` (points of used share): its steepest
    volume class's."""
    lowest_free_percent: float
    """The lowest free share any volume reached (its bucket minimum)."""
    in_force: LimitsInForce
    climb_by_class: tuple[ClassClimb, ...] = ()
    """Each volume class's climb, the steepest first."""


@dataclass(frozen=True, slots=True)
class Tradeoffs:
    table: pd.DataFrame
    """One row for the limits in force, then one per candidate (:data:`TRADEOFF_COLUMNS`)."""
    in_force: ClusterTimeline
    """The cluster hour by hour under the limits in force (the incidents timeline)."""
    buckets: pd.DataFrame
    """Per broker and hour: the worst volume (``broker_samples.broker_buckets``)."""
    evidence: FleetEvidence


def limits_in_force(
    rows: DataFrame, at: datetime, lookback_hours: float | None = None
) -> LimitsInForce:
    """The most common (soft, hard) limit pair among the newest snapshots of the volumes seen
    within the lookback."""
    newest = (
        window_rows(rows, at, lookback_hours)
        .groupBy("brokerId", "volumeName")
        .agg(F.max_by(F.struct(*LIMIT_FIELDS), "snapshotAt").alias("limits"))
    )
    return most_common_limits(newest)


def most_common_limits(newest: DataFrame) -> LimitsInForce:
    """The most common pair of ``newest`` (``replay_rows.ReplayRows.newest_limits``)."""
    latest = newest.groupBy("limits").count().orderBy(F.desc("count")).collect()
    if not latest:
        return LimitsInForce("unknown (no snapshot)", 0)
    total = sum(int(row["count"]) for row in latest)
    limits, count = latest[0]["limits"], int(latest[0]["count"])
    soft = _limit(limits["softLimitType"], limits["softLimitLevel"])
    hard = _limit(limits["hardLimitType"], limits["hardLimitLevel"])
    scope = f"all {total} volumes" if count == total else f"{count} of {total} volumes"
    return LimitsInForce(
        f"soft {soft}, hard {hard} ({scope})",
        total,
        _percent(limits["softLimitType"], limits["softLimitLevel"]),
        _percent(limits["hardLimitType"], limits["hardLimitLevel"]),
    )


def _limit(kind: str, level: float) -> str:
    return f"{level:g}{_UNITS.get(kind, ' ' + kind)}"


def _percent(kind: str, level: float) -> float | None:
    return float(level) if kind == "MinFreePercentage" else None


def replay_volumes(hourly: DataFrame, params: TuningParams) -> DataFrame:
    """Per volume and candidate: episodes, hard episodes and warnings, on ``hourly``: per
    volume and bucket the least free space and the newest capacity
    (``replay_rows.ReplayRows.volume_buckets``)."""
    candidates = params.candidates()
    step = params.bucket_seconds
    gap_hours = (step / 3600.0, params.merge_gap_hours)
    climb_buckets = math.ceil(params.min_warning_hours * 3600.0 / step)

    def per_volume(volume: pd.DataFrame) -> pd.DataFrame:
        volume = volume.sort_values("bucket", kind="stable")
        buckets = volume["bucket"].to_numpy(dtype=np.int64)
        free = volume["free"].to_numpy(dtype=np.float64)
        capacity = volume["capacity"].to_numpy(dtype=np.int64)
        free_percent = 100.0 * free / capacity
        stats = replay_candidates(buckets * step, free, capacity, candidates, gap_hours)
        return pd.DataFrame(
            {
                "brokerId": int(volume["brokerId"].iloc[0]),
                "volumeName": str(volume["volumeName"].iloc[0]),
                "softPercent": [candidate.soft_percent for candidate in candidates],
                "hardPercent": [candidate.hard_percent for candidate in candidates],
                "episodes": [each.episodes for each in stats],
                "hardEpisodes": [each.hard_episodes for each in stats],
                "warningHours": [each.warning_hours for each in stats],
                "climbPercent": largest_climb_percent(buckets, 100.0 - free_percent, climb_buckets),
                "lowestFreePercent": float(free_percent.min()),
                "volumeClass": capacity_class(int(capacity[-1])),
            }
        )

    return hourly.groupBy("brokerId").applyInPandas(each_volume(per_volume), _VOLUME_SCHEMA)


def cluster_grid(buckets: pd.DataFrame, at: datetime, params: TuningParams) -> np.ndarray:
    """Bucket ends from the first bucket with data to ``at``."""
    step = params.bucket_seconds
    end = at.timestamp()
    if buckets.empty:
        return np.array([end])
    first = math.ceil((float(buckets["t"].min()) - end) / step)
    return end + step * np.arange(first, 1, dtype=np.float64)


def _volume_evidence(read: ReplayRows, params: TuningParams) -> tuple[pd.DataFrame, FleetEvidence]:
    """Per candidate, the volumes' episodes and warnings, and the fleet's evidence."""
    volumes = (
        replay_volumes(read.volume_buckets, params)
        .groupBy("softPercent", "hardPercent")
        .agg(
            F.sum("episodes").alias("episodes"),
            F.sum("hardEpisodes").alias("hardEpisodes"),
            F.flatten(F.collect_list("warningHours")).alias("warnings"),
            # Every candidate's group holds every volume once: the same figures in each.
            F.collect_list("volumeClass").alias("classes"),
            F.collect_list("climbPercent").alias("climbs"),
            F.min("lowestFreePercent").alias("lowestFree"),
        )
        .toPandas()
    )
    climbs = (
        class_climbs(
            list(volumes["classes"].iloc[0]), list(volumes["climbs"].iloc[0]), CLIMB_QUANTILE
        )
        if len(volumes)
        else ()
    )
    evidence = FleetEvidence(
        climbs[0].climb_percent if climbs else 0.0,
        float(volumes["lowestFree"].min()) if len(volumes) else 100.0,
        most_common_limits(read.newest_limits),
        climbs,
    )
    return volumes, evidence


def replay_window(at: datetime, params: TuningParams) -> ReplayWindow:
    """The window of the replay at ``at``: its lookback, buckets and allowed clock skew."""
    return ReplayWindow(
        at, params.lookback_hours, params.bucket_seconds, params.policy.max_clock_skew_seconds
    )


def threshold_tradeoffs(
    rows: DataFrame,
    at: datetime,
    params: TuningParams | None = None,
    tombstones: DataFrame | None = None,
    overrides: Sequence[OverrideInterval] = (),
    *,
    rollup: ServingRollup | None = None,
) -> Tradeoffs:
    """The cluster replay of the limits in force and of every candidate (``overrides``: when
    an operator's override was in force), per-volume warnings, the recommendation flagged;
    read from ``rollup`` (the hourly rollup of ``rows``, checked to serve this replay:
    ``replay_rows.serving_rollup``) when given."""
    params = params or TuningParams()
    read = replay_rows(rows, replay_window(at, params), rollup)
    buckets = read.buckets
    retired = tombstone_times(tombstones, at, params.lookback_hours)
    samples = to_samples(buckets, retired, read.refused)
    grid = cluster_grid(buckets, at, params)
    forced = forced_states(whole_buckets(overrides, params.bucket_seconds), grid)
    in_force = replay_cluster(samples, grid, params.policy, None, forced)
    records = [{"limits": IN_FORCE, **in_force.hours(params.bucket_seconds)}]
    for candidate in params.candidates():
        timeline = replay_cluster(samples, grid, params.policy, candidate, forced)
        records.append(
            {
                "limits": "candidate",
                "softPercent": candidate.soft_percent,
                "hardPercent": candidate.hard_percent,
                **timeline.hours(params.bucket_seconds),
            }
        )
    cluster = pd.DataFrame.from_records(records)
    volumes, evidence = _volume_evidence(read, params)
    merged = cluster.merge(
        volumes.drop(columns=["classes", "climbs", "lowestFree"]),
        on=["softPercent", "hardPercent"],
        how="left",
    )
    table = summarise_tradeoffs(merged, params.min_warning_hours, evidence)
    return Tradeoffs(table, in_force, buckets, evidence)


def summarise_tradeoffs(
    merged: pd.DataFrame, min_warning_hours: float, evidence: FleetEvidence
) -> pd.DataFrame:
    """Warning statistics, the safety conditions and the recommendation (small, pandas)."""
    table = merged.copy()
    in_force = evidence.in_force
    is_in_force = table["limits"] == IN_FORCE
    table.loc[is_in_force, "softPercent"] = _or_nan(in_force.soft_percent)
    table.loc[is_in_force, "hardPercent"] = _or_nan(in_force.hard_percent)
    warnings = [
        np.asarray(list(values) if isinstance(values, list | np.ndarray) else [], dtype=float)
        for values in table["warnings"]
    ]
    table["minWarningHours"] = [float(w.min()) if w.size else math.nan for w in warnings]
    table["medianWarningHours"] = [float(np.median(w)) if w.size else math.nan for w in warnings]
    hard = table["hardEpisodes"].fillna(0)
    table["meetsMinimumWarning"] = [
        episodes == 0 or (w.size > 0 and float(w.min()) >= min_warning_hours)
        for episodes, w in zip(hard, warnings, strict=True)
    ]
    table.loc[is_in_force, "meetsMinimumWarning"] = False  # not replayed per volume
    gap = table["softPercent"] - table["hardPercent"]
    table["coversFleetClimb"] = gap >= evidence.climb_percent
    lowered = table["softPercent"] < _or_nan(in_force.soft_percent)
    table["warnsAtWorstDip"] = table["softPercent"].notna() & ~(
        (table["softPercent"] < evidence.lowest_free_percent)
        & (lowered | (in_force.soft_percent is None))
    )
    table = table.drop(columns=["warnings"])
    table["recommended"] = False
    eligible = table[
        ~is_in_force
        & table["meetsMinimumWarning"]
        & table["coversFleetClimb"]
        & table["warnsAtWorstDip"]
    ].copy()
    if not eligible.empty:
        eligible["cost"] = eligible["throttledHours"] + eligible["pausedHours"]
        eligible["lessMargin"] = -eligible["hardPercent"]
        eligible["lessSoftMargin"] = -eligible["softPercent"]
        order = ["cost", "pausedHours", "flips", "lessMargin", "lessSoftMargin"]
        best = eligible.sort_values(order, kind="stable").index[0]
        current = table[is_in_force].iloc[0]
        today_safe = bool(current["coversFleetClimb"]) and bool(current["warnsAtWorstDip"])
        today_cost = float(current["throttledHours"]) + float(current["pausedHours"])
        if not today_safe or float(eligible.loc[best, "cost"]) < today_cost:
            table.loc[best, "recommended"] = True
    return table.reset_index(drop=True)[list(TRADEOFF_COLUMNS)]


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value
