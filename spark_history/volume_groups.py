"""Per-volume pandas functions run a broker at a time (pure: pandas only, no Spark).

Spark's ``groupBy(...).applyInPandas`` makes one Python call per group, with an Arrow round
trip and a pandas frame built for each. A group per volume costs that per volume: at 16,000
volumes, more than the per-volume work of a forecast or a replay. Grouped by broker instead,
Spark makes one call per broker, and these wrappers run the per-volume function on each of the
broker's volumes in pandas and stack the results, so the per-volume functions stay as they are.

Each volume's frame is handed over with a fresh index (``0..n-1``, rows in their order within
the broker's frame), as Spark hands over a group.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

VOLUME = "volumeName"

PerVolume = Callable[[pd.DataFrame], pd.DataFrame]
PerVolumePair = Callable[[tuple[int, str], pd.DataFrame, pd.DataFrame], pd.DataFrame]


def each_volume(per_volume: PerVolume) -> PerVolume:
    """A function of one broker's rows (``applyInPandas`` on ``groupBy("brokerId")``) that runs
    ``per_volume`` on the rows of each of its volumes, in the order of their names, and stacks
    what it returns."""

    def per_broker(frame: pd.DataFrame) -> pd.DataFrame:
        volumes = frame.groupby(VOLUME, sort=True, dropna=False)
        return pd.concat(
            [per_volume(volume.reset_index(drop=True)) for _, volume in volumes],
            ignore_index=True,
        )

    return per_broker


def each_volume_pair(
    per_volume: PerVolumePair,
) -> Callable[[tuple[int], pd.DataFrame, pd.DataFrame], pd.DataFrame]:
    """A function of one broker's rows of two frames (``applyInPandas`` on a ``cogroup`` by
    ``brokerId``) that runs ``per_volume((brokerId, volumeName), left, right)`` on the rows of
    each volume either frame names, as a cogroup by volume would (a volume that one frame does
    not name gets that frame's columns and no rows), and stacks what it returns."""

    def per_broker(key: tuple[int], left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
        broker = int(key[0])
        lefts, rights = _by_volume(left), _by_volume(right)
        names = sorted(lefts.keys() | rights.keys())
        return pd.concat(
            [
                per_volume(
                    (broker, name),
                    lefts.get(name, left.iloc[0:0]),
                    rights.get(name, right.iloc[0:0]),
                )
                for name in names
            ],
            ignore_index=True,
        )

    return per_broker


def _by_volume(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    if frame.empty:
        return {}
    return {
        str(name): volume.reset_index(drop=True)
        for name, volume in frame.groupby(VOLUME, sort=False, dropna=False)
    }
