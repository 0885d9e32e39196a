"""Balance: volumes and brokers whose usage departs from their peers (JBOD skew).

Why robust z-scores: a fleet's used-percent distribution has the very outliers we look for,
and they inflate a mean and standard deviation enough to hide themselves. The median and the
median absolute deviation (MAD, scaled by 1.4826 to match a standard deviation on normal
data) do not move much for a few outliers. A floor on the scale (``min_scale_percent``)
keeps identical peers from turning a 0.1-point difference into an infinite score. The 3.5
cut-off is Iglewicz and Hoaglin's usual one for modified z-scores.
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history import hourly_rollup
from spark_history.broker_samples import window_rows

OUTLIER_Z = 3.5
MAD_TO_SIGMA = 1.4826
DEFAULT_MIN_SCALE_PERCENT = 2.0
DEFAULT_LOOKBACK_HOURS = 7 * 24.0
"""A volume without a snapshot in the last week is not compared (its broker left, or its
history stopped)."""

BALANCE_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "volumeName",
    "usedPercent",
    "brokerMedianPercent",
    "zWithinBroker",
    "volumeSkewed",
    "brokerUsedPercent",
    "zAcrossBrokers",
    "brokerSkewed",
    "snapshotAt",
)


def latest_volumes(
    rows: DataFrame, at: datetime, lookback_hours: float | None, rollup: DataFrame | None = None
) -> DataFrame:
    """Each volume's latest snapshot at or before ``at``, of the volumes seen in the lookback
    (its date partitions only are read); from ``rollup`` (the hourly rollup of ``rows``) where
    its hours are the window's (``hourly_rollup.serves``)."""
    if (
        rollup is not None
        and lookback_hours is not None
        and hourly_rollup.serves(at, lookback_hours)
    ):
        return hourly_rollup.newest_per_volume(rollup, at, lookback_hours, ("consumed", "capacity"))
    return (
        window_rows(rows, at, lookback_hours)
        .groupBy("brokerId", "volumeName")
        .agg(
            F.max_by("consumed", "snapshotAt").alias("consumed"),
            F.max_by("capacity", "snapshotAt").alias("capacity"),
            F.max("snapshotAt").alias("snapshotAt"),
        )
    )


def _robust_z(value: Column, median: Column, mad: Column, floor: float) -> Column:
    scale = F.greatest(mad * MAD_TO_SIGMA, F.lit(floor))
    return (value - median) / scale


def balance(
    rows: DataFrame,
    at: datetime,
    min_scale_percent: float = DEFAULT_MIN_SCALE_PERCENT,
    lookback_hours: float | None = DEFAULT_LOOKBACK_HOURS,
    rollup: DataFrame | None = None,
) -> DataFrame:
    """Per volume: robust z of used % within its broker, and of its broker across brokers
    (``rollup``: as for :func:`latest_volumes`)."""
    latest = (
        latest_volumes(rows, at, lookback_hours, rollup)
        .where(F.col("capacity") > 0)
        .withColumn("usedPercent", 100.0 * F.col("consumed") / F.col("capacity"))
    )
    per_broker = Window.partitionBy("brokerId")
    fleet = Window.partitionBy()  # one row per volume: the whole fleet fits one partition
    used = F.col("usedPercent")
    volumes = (
        latest.withColumn("brokerMedianPercent", F.median(used).over(per_broker))
        .withColumn(
            "brokerMad", F.median(F.abs(used - F.col("brokerMedianPercent"))).over(per_broker)
        )
        .withColumn(
            "zWithinBroker",
            _robust_z(used, F.col("brokerMedianPercent"), F.col("brokerMad"), min_scale_percent),
        )
        .withColumn(
            "brokerUsedPercent",
            100.0 * F.sum("consumed").over(per_broker) / F.sum("capacity").over(per_broker),
        )
        # Each broker counts once in the fleet statistics, however many volumes it has.
        .withColumn(
            "brokerWeight", F.when(F.row_number().over(per_broker.orderBy("volumeName")) == 1, 1)
        )
    )
    broker_used = F.when(F.col("brokerWeight") == 1, F.col("brokerUsedPercent"))
    with_fleet = volumes.withColumn("fleetMedian", F.median(broker_used).over(fleet))
    with_fleet = with_fleet.withColumn(
        "fleetMad",
        F.median(
            F.when(
                F.col("brokerWeight") == 1, F.abs(F.col("brokerUsedPercent") - F.col("fleetMedian"))
            )
        ).over(fleet),
    )
    return (
        with_fleet.withColumn(
            "zAcrossBrokers",
            _robust_z(
                F.col("brokerUsedPercent"),
                F.col("fleetMedian"),
                F.col("fleetMad"),
                min_scale_percent,
            ),
        )
        .withColumn("volumeSkewed", F.abs(F.col("zWithinBroker")) >= OUTLIER_Z)
        .withColumn("brokerSkewed", F.abs(F.col("zAcrossBrokers")) >= OUTLIER_Z)
        .select(*BALANCE_COLUMNS)
    )
