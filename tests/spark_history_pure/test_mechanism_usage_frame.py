"""One volume's joined usage rows to its mechanism forecast row, as Spark's applyInPandas
feeds them (pandas only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from spark_history.forecast.conformal_bands import Calibration
from spark_history.forecast.mechanism.usage_frame import MECHANISM_COLUMNS, mechanism_group
from spark_history.forecast.vocabulary import Trend
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


def test_a_topic_is_projected_with_its_newest_surveys_config() -> None:
    frame = _joined_frame().sort_values("surveyedAt", kind="stable")
    logs = frame.index[frame["topic"] == "logs"]
    # Every survey of logs but the newest read a one-hour retention, which would cap it.
    frame.loc[logs[:-1], "retentionMs"] = 3_600_000
    result = mechanism_group(frame, pd.Timestamp(AT), 60 * 24.0, 3600).iloc[0]
    assert "on logs (now -1)" in result["prevention"]
    assert abs(result["hoursToHardLimit"] - 556.8e9 / 1e6 / 3600) < 0.5


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


def _calibration(horizons: tuple[float, ...], error: float) -> Calibration:
    """Level bounds of +-``error`` (fraction of capacity) at ``horizons``, of growing volumes."""
    return Calibration(0.9, {(Trend.GROWING.value, h): (-error, error) for h in horizons})


def _banded(calibration: Calibration, trend: Trend | None = Trend.GROWING) -> pd.Series:
    """The forecast row of the frame's volume, whose trend is ``trend``."""
    return mechanism_group(
        _joined_frame(), pd.Timestamp(AT), 60 * 24.0, 3600, calibration=calibration, trend=trend
    ).iloc[0]


def test_its_band_is_the_calibrated_level_band_along_its_path() -> None:
    calibration = _calibration((6.0, 24.0, 72.0, 240.0), 0.01)
    result = _banded(calibration)
    # The path: 343.2 GB + 3.6 GB/h. +-10 GB of 1000 GB: full when 656.8 GB -+ 10 GB are written.
    assert abs(result["hoursToCapacityLow"] - (656.8e9 - 10 * GB) / 3.6e9) < 0.5
    assert abs(result["hoursToCapacityHigh"] - (656.8e9 + 10 * GB) / 3.6e9) < 0.5
    assert result["hoursToCapacityLow"] < result["hoursToCapacity"]
    assert result["hoursToCapacity"] < result["hoursToCapacityHigh"]
    assert result["band"] == (
        "split-conformal 90% band, growing trend, calibrated to 240 h by the mechanism's fleet "
        "backtests"
    )
    assert pd.isna(result["reason"])


def test_past_its_calibrated_horizons_the_late_side_is_open_and_says_so() -> None:
    calibration = _calibration((6.0, 24.0, 72.0), 0.01)
    result = _banded(calibration)
    # Past 72 h the upper bound grows with time (0.01 x h / 72 of capacity); no lower bound.
    early = 656.8e9 / (3.6e9 + 0.01 * 1000 * GB / 72)
    assert abs(result["hoursToCapacityLow"] - early) < 0.5
    assert pd.isna(result["hoursToCapacityHigh"])
    assert result["band"].endswith("open on its late side")


def test_the_band_is_calibrated_on_the_volumes_of_its_trend() -> None:
    growing_only = _calibration((6.0, 24.0, 72.0, 240.0), 0.01)
    for trend in (Trend.FLAT, None):  # another class's errors, or no class: no band
        result = _banded(growing_only, trend)
        assert not pd.isna(result["hoursToCapacity"])
        assert pd.isna(result["hoursToCapacityLow"])
        assert result["band"] is None


def test_without_a_calibration_there_is_no_band() -> None:
    result = mechanism_group(_joined_frame(), pd.Timestamp(AT), 60 * 24.0, 3600).iloc[0]
    assert pd.isna(result["hoursToCapacityLow"])
    assert pd.isna(result["hoursToCapacityHigh"])
    assert result["band"] is None
