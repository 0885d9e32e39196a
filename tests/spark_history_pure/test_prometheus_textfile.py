"""The history job's Prometheus textfile: every broker's series, per-volume series for the
volumes that fill soonest only, so a large fleet stays a few series per broker."""

from __future__ import annotations

import math

import pandas as pd
from prometheus_client.parser import text_string_to_metric_families

from spark_history.prometheus import textfile


def forecast_row(
    broker: int, volume: str, hours: float, used: float, trend: str = "growing"
) -> dict[str, object]:
    return {
        "brokerId": broker,
        "volumeName": volume,
        "trend": trend,
        "usedPercent": used,
        "hoursToFull": hours,
        "hoursToFullLow": hours * 0.8,
        "hoursToFullHigh": hours * 1.2,
    }


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the file, parsed as Prometheus parses it."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def volumes_named(parsed: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> set[str]:
    return {
        dict(labels)["volume"]
        for name, labels in parsed
        if name == "volume_quota_history_forecast_info"
    }


FLEET = pd.DataFrame(
    [
        forecast_row(0, "/a", 30.0, 90.0),
        forecast_row(0, "/b", math.nan, 95.0, trend="flat"),
        forecast_row(1, "/a", 10.0, 50.0),
        forecast_row(1, "/b", math.nan, 99.0, trend="retired"),
        forecast_row(2, "/a", math.nan, 20.0, trend="flat"),
        forecast_row(2, "/b", 500.0, 40.0),
    ]
)


def test_every_broker_gets_its_soonest_fill_and_its_fullest_live_volume() -> None:
    parsed = samples(textfile(FLEET, 1.0, top_volumes=0))
    hours = "volume_quota_history_broker_hours_to_full"
    used = "volume_quota_history_broker_used_ratio"
    assert parsed[(hours, (("broker", "0"),))] == 30.0
    assert parsed[(hours, (("broker", "1"),))] == 10.0
    assert parsed[(hours, (("broker", "2"),))] == 500.0
    assert parsed[(used, (("broker", "0"),))] == 0.95
    assert parsed[(used, (("broker", "1"),))] == 0.5  # its 99 % volume retired
    assert volumes_named(parsed) == set()
    assert parsed[("volume_quota_history_volumes_omitted", ())] == 6


def test_only_the_soonest_filling_volumes_get_per_volume_series() -> None:
    parsed = samples(textfile(FLEET, 1.0, top_volumes=3))
    shown = {
        (dict(labels)["broker"], dict(labels)["volume"])
        for name, labels in parsed
        if name == "volume_quota_history_forecast_info"
    }
    # 10 h, 30 h, 500 h; the volumes without a fill come after, fullest first.
    assert shown == {("1", "/a"), ("0", "/a"), ("2", "/b")}
    assert parsed[("volume_quota_history_volumes_omitted", ())] == 3
    hours = "volume_quota_history_hours_to_full"
    assert parsed[(hours, (("broker", "1"), ("volume", "/a")))] == 10.0
    fourth = samples(textfile(FLEET, 1.0, top_volumes=4))
    assert ("1", "/b") in {
        (dict(labels)["broker"], dict(labels)["volume"])
        for name, labels in fourth
        if name == "volume_quota_history_forecast_info"
    }  # 99 % used: the fullest of those without a fill


def test_a_broker_with_no_fill_within_the_horizon_is_infinite() -> None:
    fleet = pd.DataFrame([forecast_row(7, "/a", math.nan, 10.0, trend="flat")])
    parsed = samples(textfile(fleet, 1.0))
    assert parsed[("volume_quota_history_broker_hours_to_full", (("broker", "7"),))] == math.inf


def test_the_series_stay_a_few_per_broker_for_a_large_fleet() -> None:
    brokers, volumes = 1000, 16
    fleet = pd.DataFrame(
        [
            forecast_row(broker, f"/data-{volume}", 100.0 + broker + volume, 50.0)
            for broker in range(brokers)
            for volume in range(volumes)
        ]
    )
    parsed = samples(textfile(fleet, 1.0, top_volumes=100))
    assert len(parsed) <= 2 * brokers + 5 * 100 + 3
    assert len(volumes_named(parsed)) <= volumes
    assert parsed[("volume_quota_history_volumes_omitted", ())] == brokers * volumes - 100
