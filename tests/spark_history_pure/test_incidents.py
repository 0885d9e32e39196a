"""The incidents read off the cluster replay name their cause, an operator's override among
them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from spark_history.cluster_replay import ClusterTimeline
from spark_history.decision_replay import OPEN, PAUSE, THROTTLE
from spark_history.incidents import incidents
from spark_history.override_history import NO_OVERRIDE

HOUR = 3600.0


def _timeline(states: list[int], driver: list[int], forced: list[int]) -> ClusterTimeline:
    size = len(states)
    return ClusterTimeline(
        times=HOUR * np.arange(1, size + 1, dtype=np.float64),
        states=np.array(states, dtype=np.int8),
        factors=np.where(np.array(states) == PAUSE, 0.0, 1.0),
        missing_data=np.zeros(size, dtype=bool),
        driver=np.array(driver, dtype=np.int64),
        forced=np.array(forced, dtype=np.int8),
    )


def test_an_override_pause_in_a_calm_spell_is_the_operators_not_the_limits() -> None:
    none = NO_OVERRIDE
    timeline = _timeline(
        states=[OPEN, PAUSE, PAUSE, OPEN, THROTTLE, PAUSE, OPEN],
        driver=[-1, -1, -1, -1, 3, 3, -1],
        forced=[none, PAUSE, PAUSE, none, none, PAUSE, none],
    )
    found = incidents(timeline, pd.DataFrame(), HOUR)
    # Newest first: the breach of broker 3 the operator then paused, the calm spell paused.
    assert found["cause"].tolist() == ["limits and operator override", "operator override"]
    assert found["hours"].tolist() == [2.0, 2.0]
    assert pd.isna(found["drivingBroker"].iloc[1])
