"""What the mechanism forecast costs per volume on raw surveys and on the hourly roll-up.

``python -m benchmarks.mechanism_usage_grain`` (about a minute). One volume of ``--topics``
topics surveyed every 60 s (the sidecar's default ``usage_interval``) for ``--days`` days, each
topic written at its own rate with noise, a third of them bounded by ``retention.ms``: the
joined frame ``history forecast`` hands to ``mechanism_group`` per volume. It is projected
twice, from every survey and from the newest survey of each topic per hour (the frame
``spark_buckets.usage_buckets`` makes, run here in Spark local mode), and the process CPU
seconds of ``mechanism_group`` (best of 3) and both answers are printed. The roll-up itself
runs in Spark and is not timed.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from benchmarks.machine import describe_machine
from spark_history.forecast.mechanism.usage_frame import mechanism_group
from spark_history.usage_documents import CONFIG_VALUE_COLUMNS, OTHER, TOPIC

AT = datetime(2026, 11, 27, tzinfo=UTC)
GB = 10**9
SURVEY_SECONDS = 60


def volume_frame(topics: int, days: float, seed: int = 7) -> pd.DataFrame:
    """The joined usage rows of one volume: ``topics`` topic rows and one ``other`` row per
    survey, configs and the newest snapshot's columns on every row."""
    rng = np.random.default_rng(seed)
    surveys = int(days * 86400 / SURVEY_SECONDS)
    times = pd.date_range(end=AT, periods=surveys, freq=f"{SURVEY_SECONDS}s", tz="UTC")
    elapsed = np.arange(surveys) * float(SURVEY_SECONDS)
    frames = []
    for number in range(topics):
        rate = rng.uniform(0.05, 2.0) * 1e6
        written = 5 * GB + rate * elapsed + rng.normal(0.0, 20e6, surveys).cumsum()
        bounded = number % 3 == 0
        frame = pd.DataFrame(
            {
                "kind": TOPIC,
                "topic": f"topic-{number}",
                "surveyedAt": times,
                "bytes": np.minimum(written, 10 * GB) if bounded else written,
                "partitions": 6,
                "activeSegmentBytes": 100_000_000,
                "transientBytes": 0.0,
                "unattributedBytes": 0.0,
                "retentionMs": 86_400_000.0 if bounded else -1.0,
            }
        )
        frames.append(frame)
    rest = pd.DataFrame(
        {"kind": OTHER, "topic": None, "surveyedAt": times, "bytes": 0.0, "unattributedBytes": 0.0}
    )
    joined = pd.concat([*frames, rest], ignore_index=True)
    for column in CONFIG_VALUE_COLUMNS:
        if column not in joined:
            joined[column] = np.nan
    joined["configReadAt"] = pd.Timestamp(AT - timedelta(days=days))
    topic_bytes = joined.loc[joined["kind"] == TOPIC].groupby("surveyedAt")["bytes"].sum()
    return joined.assign(
        brokerId=0,
        volumeName="/data",
        capacity=float(10**13),
        consumed=float(topic_bytes.iloc[-1]),
        hardThresholdBytes=float(10**12),
    )


def hourly(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` through ``usage_buckets`` (Spark local mode), joined back to its configs and
    snapshot columns as ``mechanism_volumes`` joins them."""
    from pyspark.sql import SparkSession  # noqa: PLC0415 - only this path needs Spark

    from spark_history.forecast.backtest.spark_buckets import (  # noqa: PLC0415
        USAGE_VALUE_COLUMNS,
        usage_buckets,
    )

    session = SparkSession.builder.master("local[1]").getOrCreate()
    keys = ["brokerId", "volumeName", "kind", "topic"]
    columns = [*keys, *USAGE_VALUE_COLUMNS, "configReadAt", *CONFIG_VALUE_COLUMNS]
    survey = frame.loc[:, columns].assign(
        surveyedAt=frame["surveyedAt"].dt.tz_convert("UTC").dt.tz_localize(None),
        configReadAt=frame["configReadAt"].dt.tz_convert("UTC").dt.tz_localize(None),
    )
    rolled, _ = usage_buckets(session.createDataFrame(survey), 3600.0, AT)
    rows = rolled.toPandas()
    session.stop()
    rows["surveyedAt"] = pd.to_datetime(rows["surveyedAt"]).dt.tz_localize("UTC")
    extra = frame.drop(columns=[*USAGE_VALUE_COLUMNS, "brokerId", "volumeName", "kind"])
    per_topic = extra.drop_duplicates("topic")
    return rows.merge(per_topic, on="topic", how="left")


def cpu_seconds(frame: pd.DataFrame, repeats: int = 3) -> tuple[float, pd.Series]:
    """Best process CPU seconds of ``mechanism_group`` on ``frame``, and its row."""
    best, row = float("inf"), pd.Series(dtype=object)
    for _ in range(repeats):
        started = time.process_time()
        row = mechanism_group(frame, pd.Timestamp(AT), 60 * 24.0, 3600.0, 72.0).iloc[0]
        best = min(best, time.process_time() - started)
    return best, row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=12, help="topics on the volume (12)")
    parser.add_argument("--days", type=float, default=7.0, help="days of surveys (7)")
    arguments = parser.parse_args()
    print(describe_machine())
    raw = volume_frame(arguments.topics, arguments.days)
    rolled = hourly(raw)
    results = [("every survey", raw), ("newest survey per hour", rolled)]
    seconds = []
    for name, frame in results:
        spent, row = cpu_seconds(frame)
        seconds.append(spent)
        print(
            f"{name}: {len(frame)} rows, {spent:.3f} CPU s per volume; hours to the hard "
            f"limit {row['hoursToHardLimit']:.2f}, to capacity {row['hoursToCapacity']:.2f}"
        )
    print(f"ratio: every survey costs {seconds[0] / seconds[1]:.0f} x the hourly roll-up")


if __name__ == "__main__":
    main()
