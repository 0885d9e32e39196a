"""One volume's joined usage rows to its mechanism forecast row, as Spark's applyInPandas
feeds them (pandas only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from spark_history.mechanism_frame import MECHANISM_COLUMNS, mechanism_group
from spark_history.usage_documents import CONFIG_VALUE_COLUMNS, usage_rows, usage_verdict
from tests.spark_history_pure.usage_factory import GB, encoded, growing_cluster

START = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)
AT = START + timedelta(hours=12)


def _joined_frame() -> pd.DataFrame:
    usage, _ = growing_cluster(START, hours=12)
    rows, configs = [], {}
    for document in usage:
        verdict = usage_verdict(b"0", encoded(document), check_key=True)
        assert verdict.document is not None
        for row in usage_rows(verdict.document):
            if row["kind"] == "config":
                configs[row["topic"]] = row
            else:
                rows.append(row)
    frame = pd.DataFrame(rows).drop(columns=["configReadAt", *CONFIG_VALUE_COLUMNS])
    config_frame = pd.DataFrame(list(configs.values()))[
        ["topic", "configReadAt", *CONFIG_VALUE_COLUMNS]
    ]
    frame = frame.merge(config_frame, on="topic", how="left")
    frame["surveyedAt"] = pd.to_datetime(frame["surveyedAt"], utc=True).dt.tz_localize(None)
    last_written = 12 * 3600 * 1e6
    frame["capacity"] = 1000 * GB
    frame["consumed"] = 300 * GB + last_written
    frame["hardThresholdBytes"] = 100 * GB
    return frame


def test_the_unbounded_topic_drives_the_fill_and_its_retention_would_prevent_it() -> None:
    frame = _joined_frame()
    row = mechanism_group(frame, pd.Timestamp(AT), horizon_hours=60 * 24.0, bucket_seconds=3600)
    assert list(row.columns) == list(MECHANISM_COLUMNS)
    result = row.iloc[0]
    # 900 GB limit - (300 GB + 43.2 GB) at 1 MB/s: 556.8e9 s / 1e6 = 154.67 h.
    assert abs(result["hoursToHardLimit"] - 556.8e9 / 1e6 / 3600) < 0.5
    # Full (1000 GB) 100 GB later: 656.8e9 s / 1e6 = 182.44 h.
    assert abs(result["hoursToCapacity"] - 656.8e9 / 1e6 / 3600) < 0.5
    assert result["drivers"].startswith("logs +")
    assert "capped" not in result["drivers"]
    assert "retention.ms=" in result["prevention"]
    assert "on logs (now -1)" in result["prevention"]
    assert result["topics"] == 2
    assert result["unknownConfigs"] == ""
    assert result["surveys"] == 73
    assert pd.isna(result["reason"])


def test_hours_count_buckets_of_the_history_bucket() -> None:
    frame = _joined_frame()
    hours = mechanism_group(frame, pd.Timestamp(AT), 60 * 24.0, 3600).iloc[0]
    minutes = mechanism_group(frame, pd.Timestamp(AT), 60 * 24 * 60.0, 60).iloc[0]
    for column in ("hoursToHardLimit", "hoursToCapacity"):
        assert abs(minutes[column] - 60 * hours[column]) < 1e-6 * minutes[column]


def test_a_volume_without_a_snapshot_says_so() -> None:
    frame = _joined_frame()
    frame["capacity"] = float("nan")
    result = mechanism_group(frame, pd.Timestamp(AT), 60 * 24.0, 3600).iloc[0]
    assert result["reason"] == "no snapshot of the volume in the lookback window"
    assert pd.isna(result["hoursToHardLimit"])
