"""The differential test's Spark reading: one corpus, one Spark job, the same verdict three times.

Every value of the corpus (the hand-written boundary and hostile table of
``tests/schemas/differential_corpus.py``, and values drawn, the same on every run, from the
strategies of ``tests/schemas/test_differential.py``: valid snapshots, one broken field,
broken bytes, arbitrary JSON fields, arbitrary bytes) gets a verdict from (a) the JSON Schema
file (``schema_oracle``), (b) ``decode_snapshot`` and (c) the Spark ingest's
``classify_messages``, all values in one Spark job. The three must agree on accept or the
rejection reason, and for an accepted value the snapshot Spark carries to the volume rows must
be the one the decoder read.
"""

from __future__ import annotations

import calendar
import json
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from schemas.decode import Rejection, decode_snapshot
from schemas.snapshot import VolumeSnapshot
from spark_history.snapshot_rows import classify_messages
from tests.schemas.differential_corpus import ACCEPT, HAND_TABLE
from tests.schemas.differential_strategies import (
    encode,
    json_values,
    mutated_bytes,
    mutated_documents,
    valid_documents,
)
from tests.schemas.schema_oracle import schema_verdict

pytestmark = pytest.mark.spark

DRAWN_PER_STRATEGY = 80


@st.composite
def _valid_values(draw: st.DrawFn) -> bytes:
    return encode(draw(valid_documents()), draw)


_arbitrary_fields = st.fixed_dictionaries(
    {},
    optional=dict.fromkeys(
        ("schemaVersion", "brokerId", "snapshotAt", "softLimit", "hardLimit"), json_values
    )
    | {"volumes": st.lists(json_values, max_size=3)},
).map(lambda document: json.dumps(document).encode())

STRATEGIES: dict[str, st.SearchStrategy[bytes]] = {
    "valid": _valid_values(),
    "one broken field": mutated_documents(),
    "broken bytes": mutated_bytes(),
    "arbitrary fields": _arbitrary_fields,
    "arbitrary bytes": st.binary(max_size=256),
}


def _drawn(strategy: st.SearchStrategy[bytes], count: int) -> list[bytes]:
    """``count`` values of ``strategy``, the same on every run (derandomized, no database)."""
    values: list[bytes] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(value=strategy)
    def collect(value: bytes) -> None:
        values.append(value)

    collect()
    return values


def _corpus() -> list[tuple[str, str, bytes, str | None]]:
    """(kind, name, value, the hand table's expected verdict or None for a drawn value)."""
    corpus: list[tuple[str, str, bytes, str | None]] = [
        ("hand", name, value, expected) for name, value, expected in HAND_TABLE
    ]
    for kind, strategy in STRATEGIES.items():
        drawn = _drawn(strategy, DRAWN_PER_STRATEGY)
        corpus += [(kind, f"{kind} #{index}", value, None) for index, value in enumerate(drawn)]
    return corpus


def _decoder_verdict(decoded: VolumeSnapshot | Rejection) -> str:
    return decoded.reason.value if isinstance(decoded, Rejection) else ACCEPT


def _limit(limit: Any) -> dict[str, object] | None:
    return None if limit is None else {"type": limit.type.value, "level": float(limit.level)}


def _as_decoded(snapshot: VolumeSnapshot) -> dict[str, object]:
    """The decoder's snapshot in the shape of the Spark row below (instant in epoch micros)."""
    utc = snapshot.snapshot_at.astimezone(UTC)
    return {
        "brokerId": snapshot.broker_id,
        "micros": calendar.timegm(utc.timetuple()) * 1_000_000 + utc.microsecond,
        "softLimit": _limit(snapshot.soft_limit),
        "hardLimit": _limit(snapshot.hard_limit),
        "volumes": [
            {
                "volumeName": volume.volume_name,
                "path": volume.path,
                "capacity": volume.capacity,
                "consumed": volume.consumed,
                "softLimit": _limit(volume.soft_limit),
                "hardLimit": _limit(volume.hard_limit),
            }
            for volume in snapshot.volumes
        ],
    }


def _as_carried(row: Row) -> dict[str, object]:
    carried: dict[str, object] = row.asDict(recursive=True)
    del carried["id"], carried["rejection"]
    return carried


def test_schema_decoder_and_spark_ingest_give_every_value_the_same_verdict(
    spark: SparkSession,
) -> None:
    corpus = _corpus()
    messages = spark.createDataFrame(
        [(index, None, value) for index, (_, _, value, _) in enumerate(corpus)],
        "id int, key binary, value binary",
    )
    classified = classify_messages(messages, check_key=False).select(
        "id",
        "rejection",
        F.col("snapshot.brokerId").alias("brokerId"),
        F.unix_micros(F.col("snapshot.snapshotAt")).alias("micros"),
        F.col("snapshot.softLimit").alias("softLimit"),
        F.col("snapshot.hardLimit").alias("hardLimit"),
        F.col("snapshot.volumes").alias("volumes"),
    )
    spark_rows = {row["id"]: row for row in classified.collect()}  # the one Spark job
    assert len(spark_rows) == len(corpus)
    verdicts: dict[str, set[str]] = {}
    for index, (kind, name, value, expected) in enumerate(corpus):
        schema = schema_verdict(value)
        decoded = decode_snapshot(value)
        row = spark_rows[index]
        assert (_decoder_verdict(decoded), row["rejection"] or ACCEPT) == (schema, schema), name
        if expected is not None:
            assert schema == expected, name
        if isinstance(decoded, VolumeSnapshot):
            assert _as_carried(row) == _as_decoded(decoded), name
        else:
            assert row["volumes"] is None, name
        verdicts.setdefault(kind, set()).add(schema)
    # Not vacuous: the table holds every verdict, drawn valid values are valid, and the
    # generators reach past the text into the fields.
    assert verdicts["hand"] == {
        ACCEPT,
        "malformed_json",
        "unsupported_version",
        "invalid_field",
        "too_large",
    }
    assert verdicts["valid"] == {ACCEPT}
    assert "invalid_field" in verdicts["one broken field"]
    assert len(corpus) == len(HAND_TABLE) + len(STRATEGIES) * DRAWN_PER_STRATEGY


def test_a_jsonl_line_is_judged_by_its_bytes(spark: SparkSession, tmp_path: Path) -> None:
    """Spark's text source gives strings holding the file's raw bytes, invalid UTF-8 included:
    the ingest must judge those bytes, not a decoded and re-encoded copy."""
    lines = [
        (name, value)
        for name, value, _ in HAND_TABLE
        if b"\n" not in value and b"\r" not in value and value
    ]
    (tmp_path / "snapshots.jsonl").write_bytes(b"".join(value + b"\n" for _, value in lines))
    text = spark.read.text(str(tmp_path / "snapshots.jsonl")).select(
        F.lit(None).cast("binary").alias("key"), "value"
    )
    got = [row["rejection"] or ACCEPT for row in classify_messages(text, check_key=False).collect()]
    assert got == [schema_verdict(value) for _, value in lines]
    assert {"Latin-1 byte in a name", "encoded surrogate bytes"} <= {name for name, _ in lines}
