"""The calibration-sample benchmark: its sample's band scored on the volumes outside it."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from benchmarks.calibration_sample import compare, held_out_coverage, measure

KEY = ["brokerId", "volumeName"]


def _errors(rows: list[tuple[int, str, str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=[*KEY, "trend", "horizonHours", "error"])


def test_coverage_is_the_share_between_the_bounds_and_none_for_an_open_side() -> None:
    errors = _errors(
        [(0, "a", "growing", 6.0, e) for e in (-0.2, 0.0, 0.05, 0.3)]
        + [(0, "a", "flat", 6.0, 0.0), (0, "a", "flat", 24.0, 0.0)]
    )
    bounds = {("growing", 6.0): (-0.1, 0.1), ("flat", 6.0): (-math.inf, 0.1)}
    shares = held_out_coverage(errors, bounds)
    assert shares[("growing", 6.0)] == pytest.approx(0.5)
    assert shares[("flat", 6.0)] == 0.0  # open below: covers nothing
    assert math.isnan(shares[("flat", 24.0)])  # no band at all


def test_the_pooled_band_is_scored_on_each_trend_apart() -> None:
    # Flat volumes err by 0, growing ones by 0 to 0.38: pooled, the band spans both, and it
    # holds every flat error outside the sample, while the flat band alone is [0, 0].
    full = _errors(
        [(volume, "v", "flat", 6.0, 0.0) for volume in range(40)]
        + [(volume, "w", "growing", 6.0, volume / 100.0) for volume in range(40)]
    )
    part = full[full["brokerId"] % 2 == 0]
    rows = {row["trend"]: row for row in compare(full, part)["bands"]}
    assert rows["flat"]["boundsSample"] == [0.0, 0.0]
    low, high = rows["flat"]["boundsPooled"]
    assert low == 0.0
    assert high > 0.3
    assert rows["flat"]["coveragePooledOutside"] == 1.0
    assert rows["growing"]["coveragePooledOutside"] < 1.0


def test_the_sample_is_checked_against_the_fleets_errors_and_scored_outside_it() -> None:
    full = _errors([(volume, "v", "growing", 6.0, volume / 100.0) for volume in range(40)])
    part = full[full["brokerId"] < 20]
    result = compare(full, part)
    assert (result["volumesWithErrors"], result["volumesSampled"]) == (40, 20)
    (row,) = result["bands"]
    assert (row["errorsEvery"], row["errorsSample"], row["errorsOutside"]) == (40, 20, 20)
    # The sample's errors run 0 to 0.19 and the volumes outside it 0.20 to 0.39: no error
    # outside falls between the sample's bounds. One trend: pooled, the same band.
    assert row["coverageOutside"] == 0.0
    assert row["boundsPooled"] == row["boundsSample"]
    tampered = part.assign(error=part["error"] + 1.0)
    with pytest.raises(SystemExit, match="not the fleet run's errors"):
        compare(full, tampered)


@pytest.mark.spark
def test_a_small_fleet_is_measured_end_to_end(spark: SparkSession, tmp_path: Path) -> None:
    result = measure(spark, tmp_path, brokers=1, days=4.0, sample=2, volumes_per_broker=4)
    assert result["volumesSampled"] == 2
    assert result["volumesWithErrors"] == 4
    assert result["bands"]
    for row in result["bands"]:
        assert row["errorsEvery"] == row["errorsSample"] + row["errorsOutside"] > 0
    assert set(result["seconds"]) == {
        "mechanismEvery",
        "mechanismSample",
        "trendEvery",
        "trendSample",
    }
