"""The hourly rollup of the snapshot history: one row per volume and hour, as Spark columns.

The raw history holds one row per broker, volume and snapshot (a snapshot a minute: a
1,000-broker fleet of 16 volumes is 23 M rows a day). The analyses that bucket by the hour (the
forecast's hourly envelope, weekly growth, the usage series and the capacity panels) read only
a few aggregates of each volume's hour, so the rollup keeps exactly those, and each of them
reads the rollup instead of the raw rows.

**The hour.** The analyses' buckets are right-closed: a snapshot at ``t`` is in the bucket
``ceil((t - at) / 1 h)``, so the bucket ending at ``at`` holds ``(at - 1 h, at]``. The rollup
uses the same convention on the clock's hours: a row stands for ``(hourEnd - 1 h, hourEnd]``.
When ``at`` is on a whole hour and the window is a whole number of hours, the analyses' buckets
are exactly rollup hours and their results from the rollup are those from the raw rows
(:func:`serves`); otherwise they read the raw rows, as before.

**Partials.** A rollup row is also per ``date`` (the raw row's partition, the UTC day of its
``snapshotAt``), so each date partition of the rollup is computed from one date partition of
the raw history alone: the hour ending at midnight holds one snapshot at exactly 00:00:00 of
the next day, which goes to that day's partition. Every column is an associative aggregate
(min, max, sum, count, the newest sample's values), so :func:`merge_hours` combines the
partials of an hour into one row.

Pure transformations on DataFrames: the I/O (where the rollup lives, when it is refreshed) is
``rollup_store``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.broker_samples import in_force_factor
from spark_history.clock_skew import RECEIVED_AT

HOUR_SECONDS = 3600.0
_HOUR_MICROS = 3_600_000_000

ROLLUP_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "volumeName",
    "hourEnd",
    "samples",
    "firstAt",
    "lastAt",
    "minConsumed",
    "maxConsumed",
    "sumConsumed",
    "sumOffsetMicros",
    "minUsedPercent",
    "maxUsedPercent",
    "maxCapacity",
    "minFree",
    "worstFree",
    "worstCapacity",
    "minInForceFactor",
    "maxAheadSeconds",
    "lastConsumed",
    "lastCapacity",
    "lastFree",
    "lastPath",
    "lastSoftLimitType",
    "lastSoftLimitLevel",
    "lastHardLimitType",
    "lastHardLimitLevel",
    "lastSoftThresholdBytes",
    "lastHardThresholdBytes",
    "date",
)
"""One row per (``brokerId``, ``volumeName``, ``hourEnd``, ``date``).

``hourEnd``: the end of the hour ``(hourEnd - 1 h, hourEnd]``; ``samples``: its snapshots;
``firstAt``/``lastAt``: the oldest and newest ``snapshotAt``; ``sumConsumed``: the sum of
``consumed`` (the mean is ``sumConsumed / samples``); ``sumOffsetMicros``: the sum of each
snapshot's time minus ``hourEnd`` in microseconds (<= 0; the mean sample time is ``hourEnd``
plus its mean); ``*UsedPercent``: ``100 consumed / capacity`` per snapshot; ``maxCapacity``:
the largest capacity; ``minFree``: the least free space; ``worstFree``/``worstCapacity``: the
free space and capacity of the snapshot with the least free share; ``minInForceFactor``: the
smallest factor under the limits the snapshots were taken with (``in_force_factor``);
``maxAheadSeconds``: the most a snapshot was dated after its Kafka record timestamp (null
without one), so a replay knows whether the consumer refused any of the hour's snapshots;
``last*``: the newest snapshot's values.
"""

_LAST_FIELDS: tuple[tuple[str, str], ...] = (
    ("consumed", "lastConsumed"),
    ("capacity", "lastCapacity"),
    ("free", "lastFree"),
    ("path", "lastPath"),
    ("softLimitType", "lastSoftLimitType"),
    ("softLimitLevel", "lastSoftLimitLevel"),
    ("hardLimitType", "lastHardLimitType"),
    ("hardLimitLevel", "lastHardLimitLevel"),
    ("softThresholdBytes", "lastSoftThresholdBytes"),
    ("hardThresholdBytes", "lastHardThresholdBytes"),
)


def hour_end(snapshot_at: Column) -> Column:
    """The end of the right-closed hour holding ``snapshot_at`` (whole microseconds: exact)."""
    micros = F.unix_micros(snapshot_at)
    hours = F.floor((micros + F.lit(_HOUR_MICROS - 1)) / F.lit(_HOUR_MICROS)).cast("long")
    return F.timestamp_micros(hours * F.lit(_HOUR_MICROS))


def hourly_rollup(rows: DataFrame) -> DataFrame:
    """Volume rows (the dataset's columns; tombstone rows are left out) to the rollup."""
    volumes = rows.where(F.col("volumeName").isNotNull())
    dated = volumes.withColumn("hourEnd", hour_end(F.col("snapshotAt")))
    offset = F.unix_micros(F.col("snapshotAt")) - F.unix_micros(F.col("hourEnd"))
    used = 100.0 * F.col("consumed") / F.col("capacity")
    newest = F.struct(*[F.col(source).alias(target) for source, target in _LAST_FIELDS])
    factor = in_force_factor(
        F.col("free"), F.col("softThresholdBytes"), F.col("hardThresholdBytes")
    )
    worst = F.struct(F.col("free").alias("free"), F.col("capacity").alias("capacity"))
    grouped = dated.groupBy("brokerId", "volumeName", "hourEnd", "date").agg(
        F.count(F.lit(1)).alias("samples"),
        F.min("snapshotAt").alias("firstAt"),
        F.max("snapshotAt").alias("lastAt"),
        F.min("consumed").alias("minConsumed"),
        F.max("consumed").alias("maxConsumed"),
        F.sum("consumed").alias("sumConsumed"),
        F.sum(offset).alias("sumOffsetMicros"),
        F.min(used).alias("minUsedPercent"),
        F.max(used).alias("maxUsedPercent"),
        F.max("capacity").alias("maxCapacity"),
        F.min("free").alias("minFree"),
        F.min_by(worst, F.col("free") / F.col("capacity")).alias("worst"),
        F.min(factor).alias("minInForceFactor"),
        F.max(_ahead_seconds(volumes)).alias("maxAheadSeconds"),
        F.max_by(newest, "snapshotAt").alias("newest"),
    )
    return _columns(grouped)


def _ahead_seconds(rows: DataFrame) -> Column:
    """How far each snapshot is dated after its Kafka record timestamp (null without one)."""
    if RECEIVED_AT not in rows.columns:
        return F.lit(None).cast("double")
    return (F.unix_micros(F.col("snapshotAt")) - F.unix_micros(F.col(RECEIVED_AT))) / 1e6


def merge_hours(rollup: DataFrame) -> DataFrame:
    """One row per volume and hour from rollup rows (the partials of one hour, from different
    date partitions, combined); the rollup's columns without ``date``."""
    return _merged(rollup, ("brokerId", "volumeName", "hourEnd")).drop("date")


def extend_rollup(rollup: DataFrame, rows: DataFrame) -> DataFrame:
    """The rollup of the raw rows ``rollup`` was computed from and of ``rows`` (volume rows),
    from ``rollup`` and ``rows`` alone: ``rows`` rolled up, and each hour's partials of the
    same date merged."""
    partials = rollup.select(*ROLLUP_COLUMNS).unionByName(hourly_rollup(rows))
    return _merged(partials, ("brokerId", "volumeName", "hourEnd", "date"))


def _merged(rollup: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    names = [target for _, target in _LAST_FIELDS]
    newest = F.struct(*[F.col(name) for name in names])
    grouped = rollup.groupBy(*keys).agg(
        F.sum("samples").alias("samples"),
        F.min("firstAt").alias("firstAt"),
        F.max("lastAt").alias("lastAt"),
        F.min("minConsumed").alias("minConsumed"),
        F.max("maxConsumed").alias("maxConsumed"),
        F.sum("sumConsumed").alias("sumConsumed"),
        F.sum("sumOffsetMicros").alias("sumOffsetMicros"),
        F.min("minUsedPercent").alias("minUsedPercent"),
        F.max("maxUsedPercent").alias("maxUsedPercent"),
        F.max("maxCapacity").alias("maxCapacity"),
        F.min("minFree").alias("minFree"),
        F.min_by(
            F.struct(F.col("worstFree").alias("free"), F.col("worstCapacity").alias("capacity")),
            F.col("worstFree") / F.col("worstCapacity"),
        ).alias("worst"),
        F.min("minInForceFactor").alias("minInForceFactor"),
        F.max("maxAheadSeconds").alias("maxAheadSeconds"),
        F.max_by(newest, "lastAt").alias("newest"),
    )
    return _columns(grouped)


def _columns(grouped: DataFrame) -> DataFrame:
    dated = ["date"] if "date" in grouped.columns else [F.lit(None).cast("date").alias("date")]
    computed = {"date", "worstFree", "worstCapacity"}
    fixed = [
        name for name in ROLLUP_COLUMNS if not name.startswith("last") and name not in computed
    ]
    return grouped.select(
        *fixed,
        F.col("worst.free").alias("worstFree"),
        F.col("worst.capacity").alias("worstCapacity"),
        F.col("lastAt"),
        *[F.col(f"newest.{target}").alias(target) for _, target in _LAST_FIELDS],
        *dated,
    ).select(*ROLLUP_COLUMNS)


def serves(at: datetime, lookback_hours: float | None, bucket_seconds: float = 3600.0) -> bool:
    """True when the buckets of an analysis (``bucket_seconds`` wide, ending at ``at``, over
    ``lookback_hours``) are whole rollup hours, so the rollup gives what the raw rows give."""
    if lookback_hours is None:
        return False
    return clock_hours(at, bucket_seconds) and float(lookback_hours).is_integer()


def clock_hours(at: datetime | None, bucket_seconds: float) -> bool:
    """True when buckets ``bucket_seconds`` wide that end at ``at`` (None: anywhere) are the
    clock's hours, and so the rollups' hours."""
    if bucket_seconds != HOUR_SECONDS:
        return False
    return at is None or at.timestamp() % HOUR_SECONDS == 0.0


def window_hours(rollup: DataFrame, at: datetime, lookback_hours: float) -> DataFrame:
    """The merged hours (:func:`merge_hours`) of the window ``(at - lookback_hours, at]``,
    reading only the date partitions that can hold it. Exact only where :func:`serves`."""
    return merge_hours(window_partials(rollup, at, lookback_hours))


def newest_per_volume(
    rollup: DataFrame, at: datetime, lookback_hours: float, columns: Sequence[str]
) -> DataFrame:
    """Per volume seen in the window, its newest sample's ``columns`` (the raw rows' names:
    ``consumed``, ``capacity``, ...) and its ``snapshotAt``: what a ``max_by(..., snapshotAt)``
    of the raw rows gives. Exact only where :func:`serves`."""
    last = dict(_LAST_FIELDS)
    hours = window_hours(rollup, at, lookback_hours)
    return hours.groupBy("brokerId", "volumeName").agg(
        *[F.max_by(F.col(last[name]), "lastAt").alias(name) for name in columns],
        F.max("lastAt").alias("snapshotAt"),
    )


def window_partials(rollup: DataFrame, at: datetime, lookback_hours: float) -> DataFrame:
    """The rollup rows of the window's hours, not merged (an hour ending at midnight may have
    two), reading only the date partitions that can hold them."""
    start = at - timedelta(hours=lookback_hours)
    dates = F.col("date").between(
        F.lit(start.astimezone(UTC).date()), F.lit(at.astimezone(UTC).date())
    )
    # The hour ending at the window's start lies before it; the partial of an hour ending at
    # midnight sits in the next day's partition, which the date range includes.
    inside = (F.col("hourEnd") > F.lit(start)) & (F.col("hourEnd") <= F.lit(at))
    return rollup.where(dates).where(inside)


def bucket_of(at: datetime) -> Column:
    """The analyses' bucket of a merged hour: ``ceil((t - at) / 1 h)`` for its snapshots."""
    seconds = F.unix_seconds(F.col("hourEnd")) - F.lit(int(at.timestamp()))
    return (seconds / F.lit(int(HOUR_SECONDS))).cast("long")


def mean_consumed() -> Column:
    return F.col("sumConsumed").cast("double") / F.col("samples")


def mean_epoch_seconds() -> Column:
    """The mean ``snapshotAt`` of a merged hour, in seconds since the epoch."""
    mean_offset = F.col("sumOffsetMicros").cast("double") / F.col("samples") / F.lit(1e6)
    return F.unix_seconds(F.col("hourEnd")).cast("double") + mean_offset


def offset_hours(instant: Column, at: datetime) -> Column:
    """``instant`` relative to ``at`` in hours: ``broker_samples.bucket_offset``'s formula."""
    return (F.unix_micros(instant) / 1e6 - F.lit(at.timestamp())) / F.lit(HOUR_SECONDS)
