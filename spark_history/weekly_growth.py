"""Weekly growth per broker: how many bytes each broker's volumes gained, week by week.

Spark reduces the window (the ``weeks + 1`` weeks before ``at``) to hourly pre-aggregates:
each volume's maximum consumed bytes per hour (the envelope the forecast reads too; a
snapshot stored twice cannot move it), summed per broker (:func:`broker_hours`). The driver
then works on those few rows (brokers x hours) in pandas (:func:`weekly_growth`):

- weeks are 7-day windows ending at ``at``: week 0 is the last 7 days, week 1 the 7 before;
- a week's *level* is the mean of its hourly broker totals, placed at the mean time of those
  hours; a week with fewer than :data:`MIN_HOURS_PER_WEEK` hours of data has no level;
- a week's growth is the change of level from the week before, divided by the distance of the
  two mean times and scaled to 168 hours.

Why whole-week means rather than two snapshots a week apart: a week holds seven daily cycles
and several retention teeth, so its mean is not at the mercy of the hour it is read at. Why
the mean *time*: a week with a gap (an ingest outage, a broker that joined mid-week) has its
level at the centre of the hours it has, not at the centre of the week; dividing by the actual
distance keeps steady growth exact whatever the coverage.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import hourly_rollup
from spark_history.broker_samples import window_rows

WEEK_HOURS = 168
MIN_HOURS_PER_WEEK = 24
DEFAULT_GROWTH_WEEKS = 4

HOUR_COLUMNS: tuple[str, ...] = ("brokerId", "bucket", "consumed", "capacity")
"""``bucket``: the hour ending ``bucket`` hours after ``at`` (0: the hour up to ``at``)."""

GROWTH_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "week",
    "weekStart",
    "weekEnd",
    "hoursOfData",
    "meanConsumedBytes",
    "growthBytesPerWeek",
    "growthPercentPerWeek",
)


def broker_hours(
    rows: DataFrame, at: datetime, weeks: int, rollup: DataFrame | None = None
) -> pd.DataFrame:
    """Spark: per broker and hour of the last ``weeks + 1`` weeks, the sum over its volumes
    of each volume's maximum consumed (and capacity) in that hour; from ``rollup`` (the
    hourly rollup of ``rows``) where its hours are those (``hourly_rollup.serves``)."""
    lookback = (weeks + 1) * float(WEEK_HOURS)
    if rollup is not None and hourly_rollup.serves(at, lookback):
        per_volume = hourly_rollup.window_hours(rollup, at, lookback).select(
            "brokerId",
            "volumeName",
            hourly_rollup.bucket_of(at).alias("bucket"),
            F.col("maxConsumed").alias("consumed"),
            F.col("maxCapacity").alias("capacity"),
        )
    else:
        window = window_rows(rows, at, lookback)
        seconds = F.unix_micros(F.col("snapshotAt")) / 1e6
        bucket = F.ceil((seconds - F.lit(at.timestamp())) / F.lit(3600.0)).cast("long")
        per_volume = window.groupBy("brokerId", "volumeName", bucket.alias("bucket")).agg(
            F.max("consumed").alias("consumed"), F.max("capacity").alias("capacity")
        )
    per_broker = per_volume.groupBy("brokerId", "bucket").agg(
        F.sum("consumed").alias("consumed"), F.sum("capacity").alias("capacity")
    )
    frame = per_broker.toPandas()
    return frame[list(HOUR_COLUMNS)].sort_values(["brokerId", "bucket"]).reset_index(drop=True)


def weekly_growth(hours: pd.DataFrame, at: datetime, weeks: int) -> pd.DataFrame:
    """Pure: one row per broker and week ``0 .. weeks - 1`` from :func:`broker_hours`' rows.

    ``growthBytesPerWeek`` is empty when the week or the one before it has too little data;
    ``growthPercentPerWeek`` is that growth in percent of the broker's mean capacity that week.
    """
    if hours.empty:
        return pd.DataFrame(columns=list(GROWTH_COLUMNS))
    frame = hours.assign(
        week=(-hours["bucket"].astype(np.int64)) // WEEK_HOURS,
        centre=hours["bucket"].astype(np.float64) - 0.5,
    )
    means = (
        frame.groupby(["brokerId", "week"])
        .agg(
            hoursOfData=("bucket", "size"),
            level=("consumed", "mean"),
            centre=("centre", "mean"),
            capacity=("capacity", "mean"),
        )
        .reset_index()
    )
    means.loc[means["hoursOfData"] < MIN_HOURS_PER_WEEK, ["level", "centre"]] = np.nan
    records = []
    for _, group in means.groupby("brokerId", sort=True):
        broker = int(group["brokerId"].iloc[0])
        by_week = group.set_index("week")
        records += [_week_record(broker, week, by_week, at) for week in range(weeks)]
    return pd.DataFrame.from_records(records, columns=list(GROWTH_COLUMNS))


def _week_record(broker: int, week: int, by_week: pd.DataFrame, at: datetime) -> dict[str, object]:
    here = by_week.loc[week] if week in by_week.index else None
    before = by_week.loc[week + 1] if week + 1 in by_week.index else None
    growth = np.nan
    percent = np.nan
    if here is not None and before is not None:
        hours_apart = float(here["centre"]) - float(before["centre"])
        growth = (float(here["level"]) - float(before["level"])) / hours_apart * WEEK_HOURS
        percent = 100.0 * growth / float(here["capacity"])
    end = at - timedelta(hours=week * WEEK_HOURS)
    return {
        "brokerId": broker,
        "week": week,
        "weekStart": _instant(end - timedelta(hours=WEEK_HOURS)),
        "weekEnd": _instant(end),
        "hoursOfData": int(here["hoursOfData"]) if here is not None else 0,
        "meanConsumedBytes": float(here["level"]) if here is not None else np.nan,
        "growthBytesPerWeek": growth,
        "growthPercentPerWeek": percent,
    }


def growth_pivot(growth: pd.DataFrame, unit_bytes: float = 1024.0**3) -> pd.DataFrame:
    """Pure: the table the report shows: one row per broker, one column per week (oldest
    first), growth in ``unit_bytes`` (GiB) per week."""
    if growth.empty:
        return pd.DataFrame()
    labels = growth.assign(label="to " + growth["weekEnd"].str.slice(0, 10))
    table = labels.pivot(index="brokerId", columns="week", values="growthBytesPerWeek")
    table = table.reindex(columns=sorted(table.columns, reverse=True)) / unit_bytes
    names = labels.drop_duplicates("week").set_index("week")["label"]
    table.columns = [names[week] for week in table.columns]
    return table.reset_index()


def _instant(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
