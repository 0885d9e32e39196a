"""Clock skew in the data-quality panel: how far each broker's ``snapshotAt`` is from the
Kafka record timestamp of the message that carried it (``receivedAt``, kept at Kafka ingest).

Skew = ``snapshotAt - receivedAt`` in seconds, per message: positive when the snapshot is
dated after Kafka stamped it (the broker's clock runs ahead), negative when before (its clock
runs behind, or the message waited in the publisher's queue). The consumer judges freshness
with its own clock against ``snapshotAt`` (and distrusts snapshots dated more than
``max-clock-skew`` into the future), so a broker whose clock is off by a minute reads as
stale, or as fresh for too long.

A broker is flagged when the *median* skew of its messages is beyond the limit: a wrong clock
shifts every message, while a publication delayed by an outage shifts a few; the worst skew
(largest in magnitude, with its sign) is shown beside it.

What the record timestamp is depends on the topic's ``message.timestamp.type``: with
``LogAppendTime`` the partition leader's clock at append (the skew is then the broker's clock
against the leader's, plus the publication delay); with ``CreateTime`` (Kafka's default) the
producer's clock when it sent the message, which on the broker's own host measures the
publication delay only.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.broker_samples import window_rows

RECEIVED_AT = "receivedAt"
"""The dataset column holding each message's Kafka record timestamp (absent or null: none)."""

DEFAULT_MAX_SKEW_SECONDS = 60.0

SKEW_COLUMNS: tuple[str, ...] = (
    "brokerId",
    "skewMessages",
    "medianSkewSeconds",
    "worstSkewSeconds",
)


def skew_per_broker(
    receipts: DataFrame | None, at: datetime, lookback_hours: float | None
) -> pd.DataFrame:
    """Spark: per broker, the messages with a record timestamp in the window, and the median
    and worst skew of those messages (each message once, however many volumes it carried)."""
    if receipts is None:
        return pd.DataFrame(
            {
                "brokerId": pd.Series(dtype=np.int64),
                "skewMessages": pd.Series(dtype=np.int64),
                "medianSkewSeconds": pd.Series(dtype=np.float64),
                "worstSkewSeconds": pd.Series(dtype=np.float64),
            }
        )
    messages = (
        window_rows(receipts, at, lookback_hours)
        .where(F.col(RECEIVED_AT).isNotNull())
        .select("brokerId", "snapshotAt", RECEIVED_AT)
        .dropDuplicates()
    )
    skew = (F.unix_micros(F.col("snapshotAt")) - F.unix_micros(F.col(RECEIVED_AT))) / 1e6
    frame = (
        messages.withColumn("skew", skew)
        .groupBy("brokerId")
        .agg(
            F.count(F.lit(1)).alias("skewMessages"),
            F.median("skew").alias("medianSkewSeconds"),
            F.max_by("skew", F.abs(F.col("skew"))).alias("worstSkewSeconds"),
        )
        .toPandas()
    )
    return frame[list(SKEW_COLUMNS)].sort_values("brokerId").reset_index(drop=True)


def with_clock_skew(
    quality: pd.DataFrame, skews: pd.DataFrame, max_skew_seconds: float
) -> pd.DataFrame:
    """Pure: the quality table with each broker's skew and ``clockSkewed`` (its median skew
    beyond ``max_skew_seconds`` either way; empty when the broker has no record timestamps)."""
    merged = quality.merge(skews, on="brokerId", how="left")
    merged["skewMessages"] = merged["skewMessages"].fillna(0).astype(np.int64)
    measured = merged["skewMessages"] > 0
    flagged = merged["medianSkewSeconds"].abs() > max_skew_seconds
    merged["clockSkewed"] = flagged.astype("boolean").mask(~measured)
    return merged


def skew_sentence(quality: pd.DataFrame, max_skew_seconds: float) -> str:
    """Pure: one sentence on clock skew for the panel's paragraph."""
    measured = quality[quality["skewMessages"] > 0] if "skewMessages" in quality else quality[:0]
    if measured.empty:
        return (
            "Clock skew not measured: the history holds no Kafka record timestamps (JSONL "
            "input, or a dataset ingested without receivedAt)."
        )
    skewed = measured[measured["clockSkewed"].fillna(False).astype(bool)]
    text = (
        f"Clock skew (snapshotAt minus the Kafka record timestamp, median per broker): "
        f"{len(skewed)} of {len(measured)} brokers beyond {max_skew_seconds:g} s"
    )
    if skewed.empty:
        return text + "."
    worst = skewed.loc[skewed["medianSkewSeconds"].abs().sort_values(ascending=False).index]
    named = ", ".join(
        f"broker {int(broker)} {float(median):+.0f} s"
        for broker, median in zip(
            worst["brokerId"].head(5).tolist(),
            worst["medianSkewSeconds"].head(5).tolist(),
            strict=True,
        )
    )
    return f"{text}: {named}."
