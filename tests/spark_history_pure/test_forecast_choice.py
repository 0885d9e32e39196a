"""One forecast per volume: the mechanism where usage answers, the trend elsewhere."""

from __future__ import annotations

import math

import pandas as pd

from spark_history.forecast.choice import one_forecast
from spark_history.forecast.envelope import FORECAST_COLUMNS
from spark_history.forecast.mechanism.usage_frame import MECHANISM_COLUMNS


def trend_row(broker: int, trend: str, hours: float | None, **extra: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(FORECAST_COLUMNS)
    row.update(
        brokerId=broker,
        volumeName="/data",
        capacity=1000,
        consumed=500,
        method="trend",
        trend=trend,
        reason="split-conformal 90% band",
        hoursToFull=math.nan if hours is None else hours,
        hoursToFullLow=math.nan if hours is None else hours / 2,
        hoursToFullHigh=math.nan if hours is None else hours * 2,
        daysToFull=math.nan if hours is None else hours / 24,
    )
    row.update(extra)
    return row


def mechanism_row(broker: int, to_capacity: float | None, **extra: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(MECHANISM_COLUMNS)
    row.update(
        brokerId=broker,
        volumeName="/data",
        capacity=1000,
        consumed=500,
        hoursToHardLimit=math.nan if to_capacity is None else to_capacity - 5,
        hoursToCapacity=math.nan if to_capacity is None else to_capacity,
        drivers="logs +0.4 GB, unbounded",
        prevention="retention.ms=3600000 on logs (now -1) keeps the volume under the limit",
        topics=3,
        unknownConfigs="",
        reason=None,
    )
    row.update(extra)
    return row


def test_a_volume_with_usage_gets_the_mechanisms_fill_time_drivers_and_prevention() -> None:
    trend = pd.DataFrame([trend_row(0, "growing", 400.0), trend_row(1, "growing", 90.0)])
    mechanism = pd.DataFrame([mechanism_row(0, 48.0)])
    table = one_forecast(trend, mechanism)
    assert list(table.columns) == list(FORECAST_COLUMNS)
    ours, other = table.iloc[0], table.iloc[1]
    assert ours["method"] == "mechanism"
    assert ours["hoursToFull"] == 48.0
    assert ours["daysToFull"] == 2.0
    assert math.isnan(ours["hoursToFullLow"])
    assert math.isnan(ours["hoursToFullHigh"])
    assert ours["drivers"] == "logs +0.4 GB, unbounded"
    assert ours["prevention"].startswith("retention.ms=3600000 on logs")
    assert "3 topics" in ours["reason"]
    assert "no calibrated band" in ours["reason"]
    assert ours["trend"] == "growing"  # the volume's trend class stays for reading
    assert other["method"] == "trend"
    assert other["hoursToFull"] == 90.0
    assert other["hoursToFullLow"] == 45.0


def test_a_bounded_volume_the_line_fills_does_not_fill() -> None:
    trend = pd.DataFrame([trend_row(0, "growing", 30.0)])
    table = one_forecast(trend, pd.DataFrame([mechanism_row(0, None)]))
    assert table.iloc[0]["method"] == "mechanism"
    assert math.isnan(table.iloc[0]["hoursToFull"])
    assert math.isnan(table.iloc[0]["daysToFull"])


def test_full_retired_and_error_volumes_keep_the_trends_answer() -> None:
    trend = pd.DataFrame(
        [trend_row(0, "full", 0.0), trend_row(1, "retired", None), trend_row(2, "error", None)]
    )
    mechanism = pd.DataFrame([mechanism_row(broker, 10.0) for broker in (0, 1, 2)])
    table = one_forecast(trend, mechanism)
    assert list(table["method"]) == ["trend", "trend", "trend"]
    assert table.iloc[0]["hoursToFull"] == 0.0
    assert table["drivers"].isna().all()


def test_a_mechanism_row_that_failed_leaves_the_trend() -> None:
    trend = pd.DataFrame([trend_row(0, "growing", 400.0)])
    failed = mechanism_row(0, 10.0, reason="no snapshot of the volume in the lookback window")
    table = one_forecast(trend, pd.DataFrame([failed]))
    assert table.iloc[0]["method"] == "trend"
    assert table.iloc[0]["hoursToFull"] == 400.0


def test_topics_without_a_config_are_named_in_the_reason() -> None:
    trend = pd.DataFrame([trend_row(0, "insufficient-data", None)])
    mechanism = pd.DataFrame([mechanism_row(0, 20.0, unknownConfigs="new-topic")])
    row = one_forecast(trend, mechanism).iloc[0]
    assert row["method"] == "mechanism"  # its own data, however short the trend's
    assert "no config read for new-topic" in row["reason"]


def test_without_usage_the_trend_is_the_forecast() -> None:
    trend = pd.DataFrame([trend_row(0, "growing", 400.0)], index=[7])
    for mechanism in (None, pd.DataFrame(columns=list(MECHANISM_COLUMNS))):
        table = one_forecast(trend, mechanism)
        assert list(table["method"]) == ["trend"]
        assert table.iloc[0]["hoursToFull"] == 400.0


def test_the_mechanisms_band_replaces_the_trends() -> None:
    trend = pd.DataFrame([trend_row(0, "growing", 400.0), trend_row(1, "growing", 90.0)])
    band = (
        "split-conformal 90% band, growing trend, calibrated to 72 h by the mechanism's "
        "fleet backtests"
    )
    mechanism = pd.DataFrame(
        [
            mechanism_row(0, 48.0, hoursToCapacityLow=40.0, hoursToCapacityHigh=60.0, band=band),
            mechanism_row(1, 80.0, hoursToCapacityLow=70.0, hoursToCapacityHigh=math.nan),
        ]
    )
    table = one_forecast(trend, mechanism)
    closed, open_late = table.iloc[0], table.iloc[1]
    sides = ["hoursToFullLow", "hoursToFull", "hoursToFullHigh"]
    assert closed[sides].tolist() == [40.0, 48.0, 60.0]
    assert str(closed["reason"]).endswith(band)
    assert open_late["hoursToFullLow"] == 70.0
    assert pd.isna(open_late["hoursToFullHigh"])  # open, not the trend's 180 h
