"""What every scenario generator hands the accuracy benchmark
(``benchmarks/history_accuracy_compare.py``): snapshot rows, tombstones and, per volume, the
truth to score against. Each generator was written apart from the others and from the
forecast; this is the one thing they share.
"""

from __future__ import annotations

from dataclasses import dataclass

ROW_COLUMNS = ["brokerId", "volumeName", "path", "snapshotAt", "capacity", "consumed", "free"]
"""The snapshot rows' columns, in order."""
TOMBSTONE_COLUMNS = ["brokerId", "snapshotAt"]
"""A retired broker's tombstones: which broker, and when."""


@dataclass(frozen=True)
class Truth:
    """One volume as its generator made it."""

    broker_id: int
    volume_name: str
    kind: str
    """The generator's own name for the volume's scenario."""
    fill_hours: float | None
    """Hours after the generator's ``AT`` until consumed reaches the capacity in force (0: full
    already); None: not within the generator's horizon (always None on a retired broker)."""
    retired: bool
