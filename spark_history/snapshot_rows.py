"""Snapshot messages to volume-level rows, in Spark: parse, validate, explode, add thresholds.

The rules are those of ``schemas.snapshot.VolumeSnapshot`` and ``schemas.decode`` (the single
source of truth), restated as Spark column expressions so that validation runs on the
executors at Spark speed; ``tests/spark/test_snapshot_rows.py`` checks message by message that
the two agree on accept/reject. A rejected message is skipped whole, as the consumer does.
Limits become thresholds in free bytes through ``consumer.limits.free_bytes_threshold`` itself
(a pandas UDF memoised on the few distinct (type, level, capacity) combinations), so the
history carries exactly the thresholds a consumer would have computed.
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention
from pyspark.sql import types as T  # noqa: N812 - Spark's convention
from pyspark.sql.pandas.functions import pandas_udf

from consumer.limits import free_bytes_threshold
from schemas.decode import MAX_MESSAGE_BYTES, RejectionReason
from schemas.snapshot import (
    MAX_BROKER_ID,
    MAX_BYTES,
    MAX_NAME_LENGTH,
    MAX_VOLUMES_PER_BROKER,
    SNAPSHOT_SCHEMA_VERSION,
    ConsumedSpaceLimit,
    Limit,
    LimitType,
    MinFreeBytesLimit,
    MinFreePercentageLimit,
)

TOMBSTONE = "tombstone"
"""Rejection label of a null value (a deleted broker's record on the compacted topic)."""

REJECTION_LABELS: tuple[str, ...] = (TOMBSTONE, *(reason.value for reason in RejectionReason))

_INSTANT_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|z|[+-]\d{2}:\d{2})$"
_KEY_PATTERN = r"^[0-9]{1,10}$"

VOLUME_ROW_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "volumeName",
    "path",
    "snapshotAt",
    "capacity",
    "consumed",
    "free",
    "softLimitType",
    "softLimitLevel",
    "hardLimitType",
    "hardLimitLevel",
    "softThresholdBytes",
    "hardThresholdBytes",
    "date",
)
"""The columns of the history dataset, partitioned by ``date`` (UTC day of ``snapshotAt``)."""


def snapshot_schema() -> T.StructType:
    """The Spark schema ``from_json`` reads a snapshot value with (unknown fields ignored)."""
    limit = T.StructType(
        [
            T.StructField("type", T.StringType()),
            T.StructField("level", T.DoubleType()),
        ]
    )
    volume = T.StructType(
        [
            T.StructField("volumeName", T.StringType()),
            T.StructField("path", T.StringType()),
            T.StructField("capacity", T.LongType()),
            T.StructField("consumed", T.LongType()),
            T.StructField("softLimit", limit),
            T.StructField("hardLimit", limit),
        ]
    )
    return T.StructType(
        [
            T.StructField("schemaVersion", T.LongType()),
            T.StructField("brokerId", T.LongType()),
            T.StructField("snapshotAt", T.StringType()),
            T.StructField("softLimit", limit),
            T.StructField("hardLimit", limit),
            T.StructField("volumes", T.ArrayType(volume)),
        ]
    )


def _limit_valid(limit: Column) -> Column:
    """A limit struct that ``schemas.snapshot.Limit`` would accept."""
    level = limit["level"]
    byte_types = [LimitType.CONSUMED_SPACE.value, LimitType.MIN_FREE_BYTES.value]
    bytes_ok = (level == F.floor(level)) & (level <= F.lit(float(MAX_BYTES)))
    return (
        limit.isNotNull()
        & level.isNotNull()
        & (level >= 0)
        & F.when(limit["type"].isin(byte_types), bytes_ok)
        .when(limit["type"] == LimitType.MIN_FREE_PERCENTAGE.value, level <= 100)
        .otherwise(F.lit(False))
    )


def _volume_valid(volume: Column) -> Column:
    name_length = F.length(volume["volumeName"])
    return (
        volume["volumeName"].isNotNull()
        & (name_length >= 1)
        & (name_length <= MAX_NAME_LENGTH)
        & (volume["path"].isNull() | (F.length(volume["path"]) <= MAX_NAME_LENGTH))
        & volume["capacity"].isNotNull()
        & volume["consumed"].isNotNull()
        & (volume["capacity"] >= 0)
        & (volume["consumed"] >= 0)
        & (volume["consumed"] <= volume["capacity"])
        & (volume["softLimit"].isNull() | _limit_valid(volume["softLimit"]))
        & (volume["hardLimit"].isNull() | _limit_valid(volume["hardLimit"]))
    )


def classify_messages(messages: DataFrame, check_key: bool) -> DataFrame:
    """Add ``snapshot`` (the parsed struct) and ``rejection`` (null when the message is valid).

    ``messages`` has a binary or string ``value`` (null for a tombstone) and, when
    ``check_key`` is true, a ``key`` that must be the decimal brokerId.
    """
    value = F.col("value").cast("string")
    parsed = F.from_json(value, snapshot_schema(), {"mode": "PERMISSIVE"})
    frame = messages.withColumn("snapshot", parsed)
    snapshot = F.col("snapshot")
    instant_text = snapshot["snapshotAt"]
    volumes = snapshot["volumes"]
    fields_ok = (
        snapshot["brokerId"].isNotNull()
        & snapshot["brokerId"].between(0, MAX_BROKER_ID)
        & instant_text.isNotNull()
        & instant_text.rlike(_INSTANT_PATTERN)
        & F.try_to_timestamp(instant_text).isNotNull()
        & _limit_valid(snapshot["softLimit"])
        & _limit_valid(snapshot["hardLimit"])
        & volumes.isNotNull()
        & (F.size(volumes) <= MAX_VOLUMES_PER_BROKER)
        & F.forall(volumes, _volume_valid)
        & (F.size(F.array_distinct(volumes["volumeName"])) == F.size(volumes))
    )
    key_text = F.col("key").cast("string") if check_key else F.lit(None).cast("string")
    reason = (
        F.when(F.col("value").isNull(), F.lit(TOMBSTONE))
        .when(F.length(F.col("value")) > MAX_MESSAGE_BYTES, RejectionReason.TOO_LARGE.value)
        # PERMISSIVE parsing turns bad JSON into a struct of nulls; a JSON object has keys.
        .when(
            snapshot.isNull() | F.json_object_keys(value).isNull(),
            RejectionReason.MALFORMED_JSON.value,
        )
        # As in schemas.decode: a version >= 1 we do not know is "unsupported"; a missing or
        # impossible one (0, negative) is an invalid field.
        .when(
            snapshot["schemaVersion"] > SNAPSHOT_SCHEMA_VERSION,
            RejectionReason.UNSUPPORTED_VERSION.value,
        )
        .when(
            snapshot["schemaVersion"].isNull()
            | (snapshot["schemaVersion"] != SNAPSHOT_SCHEMA_VERSION)
            | ~fields_ok,
            RejectionReason.INVALID_FIELD.value,
        )
    )
    if check_key:
        reason = reason.when(
            key_text.isNull() | ~key_text.rlike(_KEY_PATTERN), RejectionReason.INVALID_KEY.value
        ).when(key_text.cast("long") != snapshot["brokerId"], RejectionReason.KEY_MISMATCH.value)
    return frame.withColumn("rejection", reason)


def rejection_metrics() -> list[Column]:
    """Aggregates for ``DataFrame.observe``: messages seen, valid, and each rejection label."""
    metrics = [
        F.count(F.lit(1)).alias("messages"),
        F.count_if(F.col("rejection").isNull()).alias("valid"),
    ]
    metrics += [F.count_if(F.col("rejection") == label).alias(label) for label in REJECTION_LABELS]
    return metrics


def _explode_volumes(classified: DataFrame) -> DataFrame:
    """One row per volume of a valid message, one null-volume row per keyed tombstone."""
    # Not ``where(rejection IS NULL)``: the optimizer would push that filter below the
    # projection and inline ``from_json`` into it once per field reference (dozens of parses
    # per message). Exploding a null array drops the row just the same, parsed once.
    volume_type = snapshot_schema()["volumes"].dataType.elementType  # type: ignore[attr-defined]
    key_text = F.col("key").cast("string")
    retired = (
        (F.col("rejection") == TOMBSTONE)
        & key_text.rlike(_KEY_PATTERN)
        & (key_text.cast("long") <= MAX_BROKER_ID)
    )
    volumes = F.when(F.col("rejection").isNull(), F.col("snapshot.volumes")).when(
        retired, F.array(F.lit(None).cast(volume_type))
    )
    received = (
        F.col("timestamp").cast("timestamp")
        if "timestamp" in classified.columns
        else F.lit(None).cast("timestamp")
    )
    return classified.select(
        F.coalesce(F.col("snapshot.brokerId"), key_text.cast("long")).cast("int").alias("brokerId"),
        F.coalesce(F.to_timestamp(F.col("snapshot.snapshotAt")), received).alias("snapshotAt"),
        F.col("snapshot.softLimit").alias("brokerSoft"),
        F.col("snapshot.hardLimit").alias("brokerHard"),
        F.explode(volumes).alias("volume"),
    )


def volume_rows(classified: DataFrame) -> DataFrame:
    """One row per volume of each valid message, with effective limits and their thresholds.

    A tombstone with a valid key (a broker retired from the topic) becomes one *tombstone
    row*: ``brokerId`` from the key, ``snapshotAt`` the message's timestamp (the
    ``timestamp`` column, when the source has one), ``volumeName`` and every figure null.
    Readers of the volumes drop these rows (:func:`only_volumes`); the forecast uses them to
    stop forecasting a broker that left.
    """
    exploded = _explode_volumes(classified)
    soft = F.coalesce(F.col("volume.softLimit"), F.col("brokerSoft"))
    hard = F.coalesce(F.col("volume.hardLimit"), F.col("brokerHard"))
    capacity = F.col("volume.capacity")
    rows = exploded.select(
        "brokerId",
        F.col("volume.volumeName").alias("volumeName"),
        F.col("volume.path").alias("path"),
        "snapshotAt",
        capacity.alias("capacity"),
        F.col("volume.consumed").alias("consumed"),
        (capacity - F.col("volume.consumed")).alias("free"),
        soft["type"].alias("softLimitType"),
        soft["level"].alias("softLimitLevel"),
        hard["type"].alias("hardLimitType"),
        hard["level"].alias("hardLimitLevel"),
    )
    thresholds = threshold_bytes(
        F.col("softLimitType"),
        F.col("softLimitLevel"),
        F.col("hardLimitType"),
        F.col("hardLimitLevel"),
        F.col("capacity"),
    )
    return rows.withColumn("thresholds", thresholds).select(
        *rows.columns,
        F.col("thresholds.soft").alias("softThresholdBytes"),
        F.col("thresholds.hard").alias("hardThresholdBytes"),
        F.to_date(F.col("snapshotAt")).alias("date"),
    )


def only_volumes(rows: DataFrame) -> DataFrame:
    """The volume rows of the dataset, without tombstone rows."""
    return rows.where(F.col("volumeName").isNotNull())


def tombstone_rows(rows: DataFrame) -> DataFrame:
    """(``brokerId``, ``snapshotAt``) of every tombstone recorded by the ingest."""
    return rows.where(F.col("volumeName").isNull()).select("brokerId", "snapshotAt")


@lru_cache(maxsize=65536)
def limit_threshold(limit_type: str, level: float, capacity: int) -> float:
    """``free_bytes_threshold`` of a limit given as (type, level); memoised."""
    limit: Limit
    if limit_type == LimitType.CONSUMED_SPACE.value:
        limit = ConsumedSpaceLimit(type=LimitType.CONSUMED_SPACE, level=int(level))
    elif limit_type == LimitType.MIN_FREE_BYTES.value:
        limit = MinFreeBytesLimit(type=LimitType.MIN_FREE_BYTES, level=int(level))
    else:
        limit = MinFreePercentageLimit(type=LimitType.MIN_FREE_PERCENTAGE, level=level)
    return free_bytes_threshold(limit, capacity)


_THRESHOLDS = T.StructType(
    [
        T.StructField("soft", T.DoubleType()),
        T.StructField("hard", T.DoubleType()),
    ]
)


@pandas_udf(_THRESHOLDS)  # type: ignore[call-overload, untyped-decorator]
def threshold_bytes(
    soft_types: pd.Series,
    soft_levels: pd.Series,
    hard_types: pd.Series,
    hard_levels: pd.Series,
    capacities: pd.Series,
) -> pd.DataFrame:
    """Vectorised UDF: (soft, hard) thresholds in free bytes for each row's limits.

    A batch holds few distinct limits: the rule runs once per distinct combination and the
    result is mapped back, so the per-row cost is a hash join, not a Python call. One UDF for
    both limits: each Python UDF call is a round trip of the batch through Arrow.
    """
    return pd.DataFrame(
        {
            "soft": _thresholds(soft_types, soft_levels, capacities),
            "hard": _thresholds(hard_types, hard_levels, capacities),
        }
    )


def _thresholds(types: pd.Series, levels: pd.Series, capacities: pd.Series) -> pd.Series:
    batch = pd.DataFrame({"type": types, "level": levels, "capacity": capacities})
    # Tombstone rows carry no limits: their thresholds are null.
    distinct = batch.dropna().drop_duplicates().copy()
    distinct["threshold"] = [
        limit_threshold(str(kind), float(level), int(capacity))
        for kind, level, capacity in distinct.itertuples(index=False, name=None)
    ]
    merged = batch.merge(distinct, on=["type", "level", "capacity"], how="left", sort=False)
    return merged["threshold"].astype("float64")
