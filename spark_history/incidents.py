"""The cluster's incidents (THROTTLE and PAUSE episodes) under the limits in force, and the
broker that drove each: read off the hourly cluster replay (``cluster_replay``)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from spark_history.cluster_replay import ClusterTimeline
from spark_history.decision_replay import OPEN, PAUSE

INCIDENT_COLUMNS: tuple[str, ...] = (
    "start",
    "end",
    "hours",
    "worstState",
    "cause",
    "drivingBroker",
    "drivingVolume",
)


def incidents(
    timeline: ClusterTimeline, buckets: pd.DataFrame, step_seconds: float
) -> pd.DataFrame:
    """One row per run of non-OPEN hours, newest first.

    ``start``/``end``: the bucket bounds (UTC); ``cause``: ``limits`` when some volume was past
    a limit, ``missing data`` when unknown brokers paused the cluster, ``operator override``
    when an operator's override forced PAUSE, joined by "and" when several; the driving
    broker is the one with the smallest factor for most of the episode, and its volume the one
    that set its factor in the episode's first hour it drove.
    """
    states = timeline.states
    breached = states != OPEN
    records = []
    index = 0
    while index < states.size:
        if not breached[index]:
            index += 1
            continue
        end = index
        while end + 1 < states.size and breached[end + 1]:
            end += 1
        records.append(_episode(timeline, buckets, index, end, step_seconds))
        index = end + 1
    frame = pd.DataFrame.from_records(records, columns=list(INCIDENT_COLUMNS))
    return frame.iloc[::-1].reset_index(drop=True)


def _episode(
    timeline: ClusterTimeline, buckets: pd.DataFrame, first: int, last: int, step: float
) -> dict[str, object]:
    span = slice(first, last + 1)
    drivers = [int(broker) for broker in timeline.driver[span] if broker >= 0]
    broker = Counter(drivers).most_common(1)[0][0] if drivers else None
    missing = bool(timeline.missing_data[span].any())
    forced = timeline.forced is not None and bool((timeline.forced[span] >= 0).any())
    causes = [("limits", bool(drivers)), ("missing data", missing), ("operator override", forced)]
    cause = " and ".join(name for name, present in causes if present) or "limits"
    return {
        "start": _instant(float(timeline.times[first]) - step),
        "end": _instant(float(timeline.times[last])),
        "hours": (last - first + 1) * step / 3600.0,
        "worstState": "PAUSE" if np.any(timeline.states[span] == PAUSE) else "THROTTLE",
        "cause": cause,
        "drivingBroker": broker,
        "drivingVolume": _volume(timeline, buckets, broker, first, last),
    }


def _volume(
    timeline: ClusterTimeline, buckets: pd.DataFrame, broker: int | None, first: int, last: int
) -> str | None:
    if broker is None or buckets.empty:
        return None
    for position in range(first, last + 1):
        if timeline.driver[position] != broker:
            continue
        rows = buckets[(buckets["brokerId"] == broker) & (buckets["t"] <= timeline.times[position])]
        if not rows.empty:
            return str(rows.iloc[-1]["inForceVolume"])
    return None


def _instant(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")
