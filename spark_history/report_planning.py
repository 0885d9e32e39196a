"""The report's planner panels: which topics grew the fleet this week, which volumes their
topics' retention will fill (the mechanism forecast), and the room left after losing the
largest broker (``spark_history.fleet_planning``). The first two need the usage dataset
(``history report --usage-dataset``); without it they say so."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from pyspark.sql import DataFrame

from spark_history.fleet_planning import Headroom, headroom_after_losing_largest, topic_growth
from spark_history.forecast.mechanism.usage_frame import MECHANISM_COLUMNS
from spark_history.forecast.spark_mechanism import mechanism_volumes, newest_snapshots, topic_series
from spark_history.forecast.trend import ForecastParams

TOP_TOPICS = 10
WEEK_DAYS = 7.0


@dataclass(frozen=True, slots=True)
class Planning:
    headroom: Headroom
    topics: pd.DataFrame | None
    """``fleet_planning.TOPIC_GROWTH_COLUMNS``; None without the usage dataset."""
    mechanism: pd.DataFrame | None
    """``mechanism.usage_frame.MECHANISM_COLUMNS``, soonest fill first; None without the dataset."""


def planning(
    rows: DataFrame,
    usage: DataFrame | None,
    at: datetime,
    params: ForecastParams,
    rollup: DataFrame | None = None,
) -> Planning:
    """The planner panels' data (Spark for the windows, pandas for the rest); ``rollup``: the
    hourly rollup of ``rows``, which the mechanism's calibration reads where it can."""
    lookback_hours = params.lookback_hours * params.bucket_seconds / 3600.0
    volumes = newest_snapshots(rows, at, lookback_hours, rollup).toPandas()
    brokers = volumes.groupby("brokerId", as_index=False)[["capacity", "consumed"]].sum()
    headroom = headroom_after_losing_largest(brokers)
    if usage is None:
        return Planning(headroom, None, None)
    topics = topic_growth(topic_series(usage, at, WEEK_DAYS), TOP_TOPICS)
    mechanism = mechanism_volumes(usage, rows, at, params, rollup).toPandas()
    mechanism = mechanism.sort_values(
        ["hoursToHardLimit", "brokerId", "volumeName"], na_position="last"
    )[list(MECHANISM_COLUMNS)]
    return Planning(headroom, topics, mechanism)


def planning_summary(data: Planning) -> dict[str, object]:
    headroom = data.headroom
    return {
        "headroom": {
            "usedPercent": headroom.used_percent,
            "largestBroker": headroom.lost_broker,
            "usedPercentAfterLosingIt": headroom.used_percent_after,
        },
        "topicsGrowingMost": None
        if data.topics is None
        else data.topics.head(5).to_dict("records"),
    }


def headroom_text(headroom: Headroom) -> str:
    now = f"The fleet is {headroom.used_percent:.1f}% used."
    if headroom.lost_broker is None or headroom.used_percent_after is None:
        return f"{now} With one broker there is no other to take its replicas."
    after = headroom.used_percent_after
    verdict = (
        "its replicas would not fit on the others"
        if math.isinf(after) or after >= 100.0
        else f"the others would be {after:.1f}% used"
    )
    return (
        f"{now} If broker {headroom.lost_broker} (the largest) were lost and its replicas "
        f"re-created on the other brokers, {verdict}."
    )
