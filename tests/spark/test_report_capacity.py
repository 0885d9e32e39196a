"""The report's fleet and broker totals with their 70/80/90 % crossings, and its backtest panel.

The fleet: two brokers of one 1 TB volume each, sampled every 10 minutes 5 minutes off the hour
for 96 h before AT. Broker 0 climbs 0.1 point an hour and is at 50 % at AT; broker 1 stays at
30 %. The newest sample of hour ``k`` (the bucket ending ``k`` hours after AT) is 5 minutes
before its end, so broker 0 stands at 50 - 0.1/12 % at bucket 0 and the fleet at
(50 - 0.1/12 + 30) / 2 = 40 - 0.1/24 %, climbing 0.05 point an hour: 70 % is 30 + 0.1/24
points away, (30 + 0.1/24) / 0.05 = 600 h 5 min after AT (2026-12-17T12:05Z); 80 % 800 h 5 min
(2026-12-25T20:05Z); 90 % 1000 h 5 min (2027-01-03T04:05Z). Broker 0 alone: 70 % in
(20 + 0.1/12) / 0.1 = 200 h 5 min (2026-11-30T20:05Z), 80 % in 300 h 5 min, 90 % in 400 h 5 min.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_history import report_capacity
from spark_history.forecast.backtest.rolling_origin import SummaryRow
from spark_history.forecast.trend import ForecastParams
from spark_history.report import write_report
from spark_history.report_capacity import backtest_panel, backtest_sentence
from spark_history.thresholds import TuningParams

from .conftest import RowsFactory
from .history_frames import AT, volume_frame

pytestmark = pytest.mark.spark

CAPACITY = 10**12
HOURS = -96.0 + np.arange(96 * 6) / 6.0 + 1.0 / 12.0


def _fleet() -> pd.DataFrame:
    return pd.concat(
        [
            volume_frame([0], "/dev/a", HOURS, (50.0 + 0.1 * HOURS) * CAPACITY / 100.0, CAPACITY),
            volume_frame([1], "/dev/a", HOURS, np.full(HOURS.size, 0.3 * CAPACITY), CAPACITY),
        ],
        ignore_index=True,
    )


def test_the_report_gives_the_fleet_and_each_broker_their_crossing_dates(
    spark: SparkSession, make_rows: RowsFactory, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    write_report(
        make_rows(_fleet()),
        AT,
        out.as_uri(),
        forecast_params=ForecastParams(),
        tuning=TuningParams(soft_grid=(10.0,), hard_grid=(5.0,), lookback_hours=100.0),
    )
    totals = pd.read_csv(out / "capacity_totals.csv")
    assert totals["group"].tolist() == ["fleet", "broker 0", "broker 1"]
    fleet, broker0, broker1 = (row for _, row in totals.iterrows())
    assert fleet["usedPercent"] == pytest.approx(40.0 - 0.1 / 24, abs=1e-6)
    assert fleet["growthPercentPerDay"] == pytest.approx(1.2, abs=1e-6)
    assert [fleet["at70"], fleet["at80"], fleet["at90"]] == [
        "2026-12-17T12:05Z",
        "2026-12-25T20:05Z",
        "2027-01-03T04:05Z",
    ]
    assert [broker0["state70"], broker0["at70"]] == ["forecast", "2026-11-30T20:05Z"]
    assert broker0["hoursTo80"] == pytest.approx(300.0 + 1.0 / 12.0, abs=1e-6)
    assert [broker1[f"state{level}"] for level in (70, 80, 90)] == ["none"] * 3

    summary = json.loads((out / "summary.json").read_text())
    assert summary["capacityTotals"]["sentence"] == (
        "The fleet is 40 % full and crosses 80 % around 2026-12-25 at the last 72 h's rate."
    )
    assert "rack" in summary["capacityTotals"]["note"]
    assert summary["capacityTotals"]["fleet"]["at80"] == "2026-12-25T20:05Z"
    assert summary["capacityTotals"]["fleet"]["brokerId"] is None
    assert summary["capacityTotals"]["brokers"] == 2

    # 100 h of replay window: 76 buckets after the 24 h warm-up score 6, 24 and 72 h.
    backtest = pd.read_csv(out / "backtest.csv")
    assert set(backtest["forecaster"]) == {"forecast", "linear-6h", "linear-72h"}
    assert sorted(set(backtest["horizonHours"])) == [6.0, 24.0, 72.0]
    assert (backtest["crossings"] == 0).all()
    assert (backtest["misses"] == 0).all()
    assert summary["backtest"]["volumes"] == 2
    assert {row["origins"] for row in summary["backtest"]["rows"]} == set(backtest["origins"])
    assert all(isinstance(row["misses"], int) for row in summary["backtest"]["rows"])
    assert summary["backtest"]["sentence"].endswith(
        "predict_linear 6 h 0, predict_linear 72 h 0, the forecast 0."
    )

    page = (out / "report.html").read_text()
    assert '<h2 id="capacity-totals">Fleet and broker totals</h2>' in page
    assert '<h2 id="backtest">Backtest: the forecast against predict_linear</h2>' in page
    assert "<img alt='fleet used percent'" in page


def test_the_backtest_panel_scores_a_filling_volume_and_names_the_better_forecaster(
    spark: SparkSession, make_rows: RowsFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 20 days: one volume climbs 1 point a day with a daily swing of 6 points (a 6 h line
    # extrapolates the afternoon's climb), the other climbs 0.5 point an hour to its limit.
    hours = -480.0 + np.arange(480 * 2) / 2.0 + 0.25
    swinging = 60.0 + hours / 24.0 + 3.0 * np.sin(2 * np.pi * hours / 24.0)
    filling = np.minimum(50.0 + 0.5 * (hours + 480.0), 100.0)
    rows = make_rows(
        pd.concat(
            [
                volume_frame([0], "/dev/a", hours, swinging * CAPACITY / 100.0, CAPACITY),
                volume_frame([1], "/dev/a", hours, filling * CAPACITY / 100.0, CAPACITY),
            ],
            ignore_index=True,
        )
    )
    panel = backtest_panel(rows, AT, 20 * 24.0, 3600.0)
    table = panel.table
    assert panel.volumes == 2
    assert sorted(set(table["horizonHours"])) == [6.0, 24.0, 72.0, 168.0]
    assert table["crossings"].sum() > 0  # volume 1 reaches its hard limit (95 %) in the window
    wrong = (table["misses"] + table["falseFills"]).groupby(table["forecaster"]).sum()
    assert wrong["linear-6h"] > wrong["forecast"]
    # The forecast is the 72 h least-squares line: it scores as predict_linear 72 h does.
    assert wrong["forecast"] == wrong["linear-72h"]
    assert panel.sentence.startswith(
        "On this history, predict_linear 72 h and the forecast do equally well"
    )
    assert table["origins"].max() <= 2 * 8  # two volumes, a few origins each

    # Past the cap, a fixed sample of the volumes is scored: the same one every run.
    monkeypatch.setattr(report_capacity, "BACKTEST_MAX_VOLUMES", 1)
    first, again = (backtest_panel(rows, AT, 20 * 24.0, 3600.0) for _ in range(2))
    assert (first.volumes, first.volumes_in_window) == (1, 2)
    assert first.table.equals(again.table)
    assert first.table["origins"].max() <= 8


def _row(name: str, misses: int, false_fills: int, error: float) -> SummaryRow:
    return SummaryRow(
        forecaster=name,
        horizon_hours=24.0,
        origins=10,
        errors=10,
        crossings=3,
        misses=misses,
        false_fills=false_fills,
        unscored=0,
        error_p50_bytes=None,
        error_p90_bytes=None,
        error_p50_percent=error,
        error_p90_percent=None,
        banded=0,
        covered=0,
        open_bands=0,
    )


def test_the_backtest_sentence_counts_wrong_calls_then_errors() -> None:
    rows = [
        _row("linear-6h", 1, 4, 0.5),
        _row("linear-72h", 2, 0, 2.0),
        _row("forecast", 1, 0, 3.0),
    ]
    sentence = backtest_sentence(rows)
    assert sentence.startswith("On this history, the forecast does better (the fewest wrong calls)")
    assert "predict_linear 6 h 5, predict_linear 72 h 2, the forecast 1." in sentence
    tied = [_row("linear-72h", 1, 0, 2.0), _row("forecast", 0, 1, 3.0)]
    assert backtest_sentence(tied).startswith(
        "On this history, predict_linear 72 h does better (as few wrong calls, a smaller median"
    )
    same = [_row("linear-72h", 1, 0, 2.0), _row("forecast", 0, 1, 2.0)]
    assert backtest_sentence(same).startswith(
        "On this history, predict_linear 72 h and the forecast do equally well"
    )
