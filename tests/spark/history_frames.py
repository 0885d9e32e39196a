"""Hand-made history rows for the Spark tests (the dataset's columns, pandas)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]

AT = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
"""The evaluation instant every test uses."""


def volume_frame(
    brokers: Sequence[int],
    volume: str,
    hours: Sequence[float] | FloatArray,
    consumed: Sequence[float] | FloatArray,
    capacity: int,
    *,
    soft_percent: float = 10.0,
    hard_percent: float = 5.0,
    at: datetime = AT,
) -> pd.DataFrame:
    """History rows of one volume per broker; ``hours`` are relative to ``at``."""
    frames = []
    for broker in brokers:
        instants = [at + timedelta(hours=float(hour)) for hour in hours]
        used = [round(value) for value in consumed]
        frames.append(
            pd.DataFrame(
                {
                    "brokerId": broker,
                    "volumeName": volume,
                    "path": f"/data/{volume.rsplit('/', 1)[-1]}",
                    "snapshotAt": pd.to_datetime(instants, utc=True),
                    "capacity": capacity,
                    "consumed": used,
                    "free": [capacity - value for value in used],
                    "softLimitType": "MinFreePercentage",
                    "softLimitLevel": soft_percent,
                    "hardLimitType": "MinFreePercentage",
                    "hardLimitLevel": hard_percent,
                    "softThresholdBytes": capacity * soft_percent / 100.0,
                    "hardThresholdBytes": capacity * hard_percent / 100.0,
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["date"] = frame["snapshotAt"].dt.date
    return frame
