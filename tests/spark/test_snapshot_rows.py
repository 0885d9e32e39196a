"""Spark reads Kafka messages as the consumer does, and rows carry the consumer's thresholds.

The corpus of values is ``test_differential_spark.py``'s; these cases are about keys and tombstones.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from pyspark.sql import SparkSession

from consumer.limits import free_bytes_threshold
from consumer.topic_messages import interpret_message
from schemas.decode import Rejection
from schemas.snapshot import MinFreeBytesLimit, MinFreePercentageLimit
from spark_history.snapshot_rows import (
    TOMBSTONE,
    classify_messages,
    limit_threshold,
    only_volumes,
    tombstone_rows,
    volume_rows,
)

pytestmark = pytest.mark.spark


def _snapshot(**overrides: object) -> dict[str, object]:
    message: dict[str, object] = {
        "schemaVersion": 1,
        "brokerId": 3,
        "snapshotAt": "2026-11-22T11:59:00.000Z",
        "softLimit": {"type": "MinFreePercentage", "level": 10},
        "hardLimit": {"type": "MinFreeBytes", "level": 1000},
        "volumes": [
            {"volumeName": "/dev/a", "path": "/data/a", "capacity": 10_000, "consumed": 4_000},
            {
                "volumeName": "/dev/b",
                "capacity": 20_000,
                "consumed": 19_500,
                "softLimit": {"type": "ConsumedSpace", "level": 15_000},
            },
        ],
    }
    message.update(overrides)
    return message


def _volume(**overrides: object) -> dict[str, object]:
    volume: dict[str, object] = {"volumeName": "/dev/x", "capacity": 100, "consumed": 10}
    volume.update(overrides)
    return volume


GOOD = json.dumps(_snapshot()).encode()

CASES: list[tuple[str, bytes | None, bytes | None]] = [
    ("valid", GOOD, b"3"),
    ("valid, extra field ignored", json.dumps(_snapshot(extra=1)).encode(), b"3"),
    (
        "valid, offset timestamp",
        json.dumps(_snapshot(snapshotAt="2026-11-22T13:59:00+02:00")).encode(),
        b"3",
    ),
    ("tombstone", None, b"3"),
    ("malformed", b'{"schemaVersion": 1, ', b"3"),
    ("version 2", json.dumps(_snapshot(schemaVersion=2)).encode(), b"3"),
    ("version 0", json.dumps(_snapshot(schemaVersion=0)).encode(), b"3"),
    (
        "consumed over capacity",
        json.dumps(_snapshot(volumes=[_volume(consumed=101)])).encode(),
        b"3",
    ),
    (
        "unknown limit type",
        json.dumps(_snapshot(softLimit={"type": "Whatever", "level": 1})).encode(),
        b"3",
    ),
    (
        "percentage over 100",
        json.dumps(_snapshot(hardLimit={"type": "MinFreePercentage", "level": 150})).encode(),
        b"3",
    ),
    (
        "negative capacity",
        json.dumps(_snapshot(volumes=[_volume(capacity=-1, consumed=0)])).encode(),
        b"3",
    ),
    (
        "duplicate volume names",
        json.dumps(_snapshot(volumes=[_volume(), _volume()])).encode(),
        b"3",
    ),
    ("empty volume name", json.dumps(_snapshot(volumes=[_volume(volumeName="")])).encode(), b"3"),
    (
        "missing volumes",
        json.dumps({k: v for k, v in _snapshot().items() if k != "volumes"}).encode(),
        b"3",
    ),
    ("naive timestamp", json.dumps(_snapshot(snapshotAt="2026-11-22T11:59:00")).encode(), b"3"),
    ("broker id too large", json.dumps(_snapshot(brokerId=2**31)).encode(), b"2147483648"),
    (
        "bad volume limit",
        json.dumps(
            _snapshot(volumes=[_volume(hardLimit={"type": "MinFreeBytes", "level": -5})])
        ).encode(),
        b"3",
    ),
    ("key mismatch", GOOD, b"4"),
    ("key not a number", GOOD, b"three"),
    ("no key", GOOD, None),
    # Java's regex "$" also matches before a final newline: an expression-built check took this.
    ("key with a newline", GOOD, b"3\n"),
]


def _expected(value: bytes | None, key: bytes | None) -> str | None:
    if value is None:
        return TOMBSTONE
    event = interpret_message(key, value)
    return event.reason.value if isinstance(event, Rejection) else None


def test_spark_reads_each_kafka_message_as_the_consumer_does(spark: SparkSession) -> None:
    frame = spark.createDataFrame(
        [(name, key, value) for name, value, key in CASES],
        "name string, key binary, value binary",
    )
    got = {
        row["name"]: row["rejection"]
        for row in classify_messages(frame, check_key=True).select("name", "rejection").collect()
    }
    expected = {name: _expected(value, key) for name, value, key in CASES}
    assert got == expected


def test_volume_rows_take_the_volume_limit_over_the_broker_limit(spark: SparkSession) -> None:
    frame = spark.createDataFrame([(b"3", GOOD)], "key binary, value binary")
    rows = {
        row["volumeName"]: row
        for row in volume_rows(classify_messages(frame, check_key=True)).collect()
    }
    a, b = rows["/dev/a"], rows["/dev/b"]
    assert (a["brokerId"], a["capacity"], a["consumed"], a["free"]) == (3, 10_000, 4_000, 6_000)
    assert a["softThresholdBytes"] == 1_000.0  # 10% of 10 000
    assert a["hardThresholdBytes"] == 1_000.0  # MinFreeBytes 1000
    assert b["softLimitType"] == "ConsumedSpace"
    assert b["softThresholdBytes"] == 5_000.0  # 20 000 - 15 000
    assert b["path"] is None
    assert str(a["date"]) == "2026-11-22"


def test_limit_threshold_is_the_consumers_rule() -> None:
    assert limit_threshold("MinFreeBytes", 1234.0, 10_000) == free_bytes_threshold(
        MinFreeBytesLimit(type="MinFreeBytes", level=1234), 10_000
    )
    assert limit_threshold("MinFreePercentage", 12.5, 8_000) == free_bytes_threshold(
        MinFreePercentageLimit(type="MinFreePercentage", level=12.5), 8_000
    )


def test_a_tombstone_becomes_one_tombstone_row_with_its_timestamp(spark: SparkSession) -> None:
    frame = spark.createDataFrame(
        [
            (b"3", GOOD, datetime(2026, 11, 22, 10, 0)),
            (b"7", None, datetime(2026, 11, 22, 11, 30)),
            (b"x", None, datetime(2026, 11, 22, 11, 31)),  # no broker id in the key: dropped
            (b"8\n", None, datetime(2026, 11, 22, 11, 32)),  # the consumer retires no broker
        ],
        "key binary, value binary, timestamp timestamp",
    )
    rows = volume_rows(classify_messages(frame, check_key=True))
    assert sorted(row["volumeName"] for row in only_volumes(rows).collect()) == ["/dev/a", "/dev/b"]
    stones = tombstone_rows(rows).collect()
    assert [(row["brokerId"], row["snapshotAt"]) for row in stones] == [
        (7, datetime(2026, 11, 22, 11, 30))
    ]
