"""Snapshot messages to volume-level rows, in Spark: decode, explode, add thresholds.

One contract (``docs/decision-rule.md``): the executors read every message with the consumer's
own ``schemas.decode.decode_snapshot`` (in ``mapInArrow``), so no rule is restated here and the
rows come from the snapshot it returned; ``tests/spark/test_differential_spark.py`` holds the
ingest to the verdicts of the JSON Schema file and the decoder. A rejected message is skipped
whole, as the consumer does. Thresholds are ``consumer.limits.free_bytes_threshold``'s (a
pandas UDF memoised on the few distinct (type, level, capacity) combinations).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import lru_cache, partial
from typing import Any, NamedTuple

import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention
from pyspark.sql import types as T  # noqa: N812 - Spark's convention
from pyspark.sql.pandas.functions import pandas_udf

from consumer.limits import free_bytes_threshold
from consumer.topic_messages import Retirement, interpret_message
from schemas.decode import RejectionReason, decode_snapshot
from schemas.snapshot import (
    ConsumedSpaceLimit,
    Limit,
    LimitType,
    MinFreeBytesLimit,
    MinFreePercentageLimit,
    VolumeSnapshot,
)

TOMBSTONE = "tombstone"
"""Rejection label of a null value (a deleted broker's record on the compacted topic)."""

REJECTION_LABELS: tuple[str, ...] = (TOMBSTONE, *(reason.value for reason in RejectionReason))

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

_LIMIT = T.StructType(
    [
        T.StructField("type", T.StringType()),
        T.StructField("level", T.DoubleType()),
    ]
)
_VOLUME = T.StructType(
    [
        T.StructField("volumeName", T.StringType()),
        T.StructField("path", T.StringType()),
        T.StructField("capacity", T.LongType()),
        T.StructField("consumed", T.LongType()),
        T.StructField("softLimit", _LIMIT),
        T.StructField("hardLimit", _LIMIT),
    ]
)


def snapshot_schema() -> T.StructType:
    """The ``snapshot`` column: what ``decode_snapshot`` read (a limit's level as a double)."""
    return T.StructType(
        [
            T.StructField("brokerId", T.IntegerType()),
            T.StructField("snapshotAt", T.TimestampType()),
            T.StructField("softLimit", _LIMIT),
            T.StructField("hardLimit", _LIMIT),
            T.StructField("volumes", T.ArrayType(_VOLUME)),
        ]
    )


class MessageVerdict(NamedTuple):
    """How the contract reads one message: ``rejection`` (``None`` when accepted, else
    ``TOMBSTONE`` or a ``RejectionReason`` value), the snapshot of an accepted message, the
    broker a tombstone retires."""

    rejection: str | None
    snapshot: VolumeSnapshot | None
    retired_broker_id: int | None


def message_verdict(key: bytes | None, value: bytes | None, check_key: bool) -> MessageVerdict:
    """The consumer's reading of a message; ``check_key``: the key must name the broker (Kafka).

    Without ``check_key`` (JSONL values) the value alone is decoded; a null value is always a
    tombstone, which retires the broker its key names if the consumer would.
    """
    event = interpret_message(key, value) if value is None or check_key else decode_snapshot(value)
    if isinstance(event, VolumeSnapshot):
        return MessageVerdict(None, event, None)
    if isinstance(event, Retirement):
        return MessageVerdict(TOMBSTONE, None, event.broker_id)
    return MessageVerdict(TOMBSTONE if value is None else event.reason.value, None, None)


def classify_messages(messages: DataFrame, check_key: bool) -> DataFrame:
    """Add ``rejection`` (null when the message is valid), ``snapshot`` (the decoded snapshot,
    null unless valid) and ``retiredBrokerId`` (the broker a tombstone retires, else null).

    ``messages`` has a binary or string ``value`` (null for a tombstone) and, when
    ``check_key`` is true, a binary ``key`` that must be the decimal brokerId; every column
    passes through unchanged.
    """
    schema = T.StructType(
        [
            *messages.schema.fields,
            T.StructField("rejection", T.StringType()),
            T.StructField("snapshot", snapshot_schema()),
            T.StructField("retiredBrokerId", T.IntegerType()),
        ]
    )
    return messages.mapInArrow(partial(_classify_batches, check_key=check_key), schema)


def _classify_batches(batches: Iterator[Any], check_key: bool) -> Iterator[Any]:
    """``mapInArrow``: each Arrow record batch with the three columns of the verdicts added."""
    for batch in batches:
        names = list(batch.schema.names)
        values = _bytes_list(batch.column(names.index("value")))
        keys = (
            _bytes_list(batch.column(names.index("key")))
            if "key" in names
            else [None] * batch.num_rows
        )
        columns = _VerdictColumns()
        for key, value in zip(keys, values, strict=True):
            columns.add(message_verdict(key, value, check_key))
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, *columns.arrays()],
            names=[*names, "rejection", "snapshot", "retiredBrokerId"],
        )


def _bytes_list(column: Any) -> list[bytes | None]:
    """A binary or string column's values as bytes (a string's bytes as Spark holds them)."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.binary())
    values: list[bytes | None] = column.to_pylist()
    return values


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _limit_array(limits: list[Limit | None]) -> Any:
    """A column of limit structs (``_LIMIT``)."""
    return pa.StructArray.from_arrays(
        [
            pa.array(
                [None if limit is None else limit.type.value for limit in limits], pa.string()
            ),
            pa.array(
                [None if limit is None else float(limit.level) for limit in limits], pa.float64()
            ),
        ],
        names=_LIMIT.fieldNames(),
        mask=pa.array([limit is None for limit in limits], pa.bool_()),
    )


class _VerdictColumns:
    """The ``rejection``, ``snapshot`` and ``retiredBrokerId`` columns of one batch, as plain
    values appended message by message: a decoded volume dies with its message (holding a batch
    of them made the garbage collector a third of the cost; limits are shared models)."""

    def __init__(self) -> None:
        self.rejections: list[str | None] = []
        self.retired: list[int | None] = []
        self.rejected: list[bool] = []
        self.brokers: list[int | None] = []
        self.instants: list[int | None] = []
        self.soft: list[Limit | None] = []
        self.hard: list[Limit | None] = []
        self.offsets = [0]
        self.names: list[str] = []
        self.paths: list[str | None] = []
        self.capacities: list[int] = []
        self.consumed: list[int] = []
        self.volume_soft: list[Limit | None] = []
        self.volume_hard: list[Limit | None] = []

    def add(self, verdict: MessageVerdict) -> None:
        self.rejections.append(verdict.rejection)
        self.retired.append(verdict.retired_broker_id)
        snapshot = verdict.snapshot
        self.rejected.append(snapshot is None)
        self.brokers.append(None if snapshot is None else snapshot.broker_id)
        self.instants.append(
            None if snapshot is None else (snapshot.snapshot_at - _EPOCH) // _MICROSECOND
        )
        self.soft.append(None if snapshot is None else snapshot.soft_limit)
        self.hard.append(None if snapshot is None else snapshot.hard_limit)
        for volume in () if snapshot is None else snapshot.volumes:
            self.names.append(volume.volume_name)
            self.paths.append(volume.path)
            self.capacities.append(volume.capacity)
            self.consumed.append(volume.consumed)
            self.volume_soft.append(volume.soft_limit)
            self.volume_hard.append(volume.hard_limit)
        self.offsets.append(len(self.names))

    def arrays(self) -> list[Any]:
        volumes = pa.StructArray.from_arrays(
            [
                pa.array(self.names, pa.string()),
                pa.array(self.paths, pa.string()),
                pa.array(self.capacities, pa.int64()),
                pa.array(self.consumed, pa.int64()),
                _limit_array(self.volume_soft),
                _limit_array(self.volume_hard),
            ],
            names=_VOLUME.fieldNames(),
        )
        snapshots = pa.StructArray.from_arrays(
            [
                pa.array(self.brokers, pa.int32()),
                pa.array(self.instants, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                _limit_array(self.soft),
                _limit_array(self.hard),
                pa.ListArray.from_arrays(pa.array(self.offsets, pa.int32()), volumes),
            ],
            names=snapshot_schema().fieldNames(),
            mask=pa.array(self.rejected, pa.bool_()),
        )
        return [
            pa.array(self.rejections, pa.string()),
            snapshots,
            pa.array(self.retired, pa.int32()),
        ]


def rejection_metrics() -> list[Column]:
    """Aggregates for ``DataFrame.observe``: messages seen, valid, and each rejection label."""
    metrics = [
        F.count(F.lit(1)).alias("messages"),
        F.count_if(F.col("rejection").isNull()).alias("valid"),
    ]
    metrics += [F.count_if(F.col("rejection") == label).alias(label) for label in REJECTION_LABELS]
    return metrics


def _explode_volumes(classified: DataFrame) -> DataFrame:
    """One row per volume of a valid message, one null-volume row per retiring tombstone."""
    retired = F.col("retiredBrokerId")
    # Any other message explodes a null array: no row.
    volumes = F.when(F.col("rejection").isNull(), F.col("snapshot.volumes")).when(
        retired.isNotNull(), F.array(F.lit(None).cast(_VOLUME))
    )
    received = (
        F.col("timestamp").cast("timestamp")
        if "timestamp" in classified.columns
        else F.lit(None).cast("timestamp")
    )
    return classified.select(
        F.coalesce(F.col("snapshot.brokerId"), retired).alias("brokerId"),
        F.coalesce(F.col("snapshot.snapshotAt"), received).alias("snapshotAt"),
        F.col("snapshot.softLimit").alias("brokerSoft"),
        F.col("snapshot.hardLimit").alias("brokerHard"),
        received.alias("receivedAt"),
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
        # The Kafka record timestamp of the message (clock skew); JSONL input has none.
        *(["receivedAt"] if "timestamp" in classified.columns else []),
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
    """(``brokerId``, ``snapshotAt``, and ``date`` when the rows have it, for pruning) of every
    tombstone recorded by the ingest."""
    dated = ["date"] if "date" in rows.columns else []
    return rows.where(F.col("volumeName").isNull()).select("brokerId", "snapshotAt", *dated)


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
