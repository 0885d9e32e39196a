"""The usage plot draws a forecast line for every trend that can fill (growing, flat)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from spark_history.report_plots import _forecast_line


def forecast_row(trend: str) -> pd.Series:
    return pd.Series(
        {
            "capacity": 1000.0,
            "growthBytesPerHour": 5.0,
            "levelBytes": 500.0,
            "hoursToFull": 100.0,
            "hoursToFullLow": 80.0,
            "hoursToFullHigh": float("nan"),
            "trend": trend,
        }
    )


@pytest.mark.parametrize(
    ("trend", "lines"),
    [
        ("growing", 1),
        ("flat", 1),
        ("shrinking", 0),
        ("retired", 0),
    ],
)
def test_forecast_line_for_trends_that_can_fill_only(trend: str, lines: int) -> None:
    axis = Figure().add_subplot()
    _forecast_line(axis, forecast_row(trend), np.array([-7.0, 0.0]), 168.0)
    drawn = [line for line in axis.get_lines() if line.get_label() == "forecast"]
    assert len(drawn) == lines
    if lines:
        # From 50 % now, 0.5 % an hour: 100 % at 100 h (4.17 days).
        x, y = drawn[0].get_data()
        assert float(np.asarray(y)[-1]) == pytest.approx(100.0)
        assert float(np.asarray(x)[-1]) == pytest.approx(100.0 / 24.0)
