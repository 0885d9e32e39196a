"""What a capacity planner asks of the fleet (pure, pandas): which topics grew it this week, and
how full it would be after losing its largest broker.

**Who grew the fleet.** From the usage history, per (broker, volume, topic): the topic's bytes
at its first and at its last survey within the week; its growth is the difference (net of what
retention deleted: what the disks saw). Summed per topic over every broker and volume, largest
growth first. A topic that entered a volume's named topics mid-week counts from then; one that
left them counts until then (the usage document names the largest ``usage_top_topics`` topics of
each volume, the rest summed as ``other``).

**Headroom after losing the largest broker.** When a broker is lost for good, its replicas are
re-created on the others: the cluster keeps its used bytes and loses the broker's capacity. The
fleet's used share after losing broker ``b`` is ``used / (capacity - capacity_b)``; the worst
case is the broker with the most capacity. Assumed: every partition has its other replicas
elsewhere and is re-replicated in full; the volumes' free space is usable for it (no rack or
log-dir constraint is modelled).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

TOPIC_GROWTH_COLUMNS: tuple[str, ...] = (
    "topic",
    "growthBytes",
    "bytes",
    "volumes",
    "brokers",
)


def topic_growth(series: pd.DataFrame, top: int = 10) -> pd.DataFrame:
    """Per topic, over ``series`` (one row per broker, volume and topic with ``firstBytes`` and
    ``lastBytes``): the summed growth, the bytes now, on how many volumes and brokers; the
    ``top`` largest growths first (ties by name)."""
    if series.empty:
        return pd.DataFrame(columns=list(TOPIC_GROWTH_COLUMNS))
    frame = series.assign(growthBytes=series["lastBytes"] - series["firstBytes"])
    totals = frame.groupby("topic", as_index=False).agg(
        growthBytes=("growthBytes", "sum"),
        bytes=("lastBytes", "sum"),
        volumes=("volumeName", "size"),
        brokers=("brokerId", "nunique"),
    )
    ordered = totals.sort_values(["growthBytes", "topic"], ascending=[False, True], kind="stable")
    return ordered.head(top).reset_index(drop=True)[list(TOPIC_GROWTH_COLUMNS)]


@dataclass(frozen=True, slots=True)
class Headroom:
    used_percent: float
    """The fleet's used share now."""
    lost_broker: int | None
    """The broker whose loss leaves the least room (the most capacity); None with one broker."""
    used_percent_after: float | None
    """The fleet's used share once that broker's replicas are re-created on the others; above
    100 they do not fit."""


def headroom_after_losing_largest(brokers: pd.DataFrame) -> Headroom:
    """``brokers``: one row per broker with ``brokerId``, ``capacity`` and ``consumed`` (bytes,
    its volumes summed)."""
    capacity = float(brokers["capacity"].sum())
    used = float(brokers["consumed"].sum())
    now = 100.0 * used / capacity if capacity > 0 else float("nan")
    if len(brokers) < 2:
        return Headroom(now, None, None)
    largest = brokers.sort_values(["capacity", "brokerId"], ascending=[False, True]).iloc[0]
    remaining = capacity - float(largest["capacity"])
    after = 100.0 * used / remaining if remaining > 0 else float("inf")
    return Headroom(now, int(largest["brokerId"]), after)
