"""``history backtest``'s forecasters per volume: the mechanism's band is cross-fitted on the
mechanism's own errors (no Spark: the command's pure part)."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from spark_history.backtest_command import UsageHistory, volume_forecasters
from spark_history.forecast.backtest.rolling_origin import BacktestConfig
from spark_history.usage_documents import usage_rows, usage_verdict
from tests.spark_history_pure.usage_factory import GB, encoded, growing_buckets, growing_cluster

START = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)
HOUR = 3600
CONFIG = BacktestConfig(horizons_hours=(6.0, 24.0, 72.0))


def usage_of(broker: int, hours: int) -> pd.DataFrame:
    usage, _ = growing_cluster(START, hours=hours, broker=broker)
    rows = []
    for document in usage:
        verdict = usage_verdict(str(broker).encode(), encoded(document), check_key=True)
        assert verdict.document is not None
        rows += usage_rows(verdict.document)
    return pd.DataFrame(rows)


def test_the_mechanism_is_scored_with_a_band_from_the_other_volumes_errors() -> None:
    hours = 160
    volumes = [(broker, "/dev/a", growing_buckets(START, hours)) for broker in (0, 1)]
    usage = usage_of(0, hours)
    configs = usage[usage["kind"] == "config"]
    by_volume = {(broker, "/dev/a"): usage_of(broker, hours) for broker in (0, 1)}
    history = UsageHistory(by_volume, configs, float(HOUR))
    every = volume_forecasters(volumes, CONFIG, history)
    assert [f.name for f in every[0]] == ["linear-6h", "linear-72h", "forecast", "mechanism"]
    # At START + 150 h: 840 GB, 60 GB below the limit at 3.6 GB/h: 16.7 h.
    series = volumes[0][2]
    prediction = every[0][-1].predict(series.history_at(int(series.index[149]), 168.0))
    assert prediction.crossing is not None
    assert abs(prediction.crossing - 60 * GB / 3.6e9) < 0.5
    assert prediction.band is not None
    early, late = prediction.band
    assert late is not None
    # Sides are read on a 0.25 h grid (``path_crossing_band``): the first point at or past.
    assert early - 0.25 <= prediction.crossing <= late
    assert late - early < 2.0  # the other volume's errors are a survey's rounding


def test_without_usage_the_three_forecasters_are_scored() -> None:
    volumes = [(0, "/dev/a", growing_buckets(START, 100))]
    every = volume_forecasters(volumes, CONFIG, None)
    assert [f.name for f in every[0]] == ["linear-6h", "linear-72h", "forecast"]
