"""When to publish a new snapshot: on change, otherwise on the heartbeat.

Given the snapshot last handed to Kafka (and when, on a monotonic clock), a freshly measured one
and the current time, decide whether to publish and say why. Checked in this order:

1. ``FIRST``: nothing published since the publisher started.
2. ``VOLUMES_CHANGED``: a volume appeared or vanished, its capacity changed, or limits changed.
3. ``STATE_CHANGED``: a volume's verdict (OPEN / THROTTLE / PAUSE, judged by the consumer's own
   rule ``consumer.limits.judge_volume``) differs from the published one.
4. ``FREE_SPACE_MOVED``: a volume's free space moved by more than ``change_threshold_percent`` of
   its capacity since the published snapshot.
5. ``HEARTBEAT``: ``heartbeat_interval_seconds`` or more have passed since the last publication.

Pure: the time is passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from consumer.limits import judge_volume
from schemas.decision import QuotaState
from schemas.snapshot import VolumeSnapshot, VolumeUsage


class PublicationReason(StrEnum):
    FIRST = "first"
    VOLUMES_CHANGED = "volumes_changed"
    STATE_CHANGED = "state_changed"
    FREE_SPACE_MOVED = "free_space_moved"
    HEARTBEAT = "heartbeat"
    RETRY = "retry"
    """The previous publication failed; set by the delivery pacing, never by this policy."""


@dataclass(frozen=True, slots=True)
class PublicationPolicy:
    heartbeat_interval_seconds: float = 10.0
    change_threshold_percent: float = 1.0
    """Publish when free space moved by more than this share of capacity (0 = any move)."""

    def __post_init__(self) -> None:
        if not (
            math.isfinite(self.heartbeat_interval_seconds) and self.heartbeat_interval_seconds > 0
        ):
            raise ValueError("the heartbeat interval must be a positive number of seconds")
        if not (
            math.isfinite(self.change_threshold_percent)
            and 0 <= self.change_threshold_percent <= 100
        ):
            raise ValueError("the change threshold must be a percentage between 0 and 100")


@dataclass(frozen=True, slots=True)
class Publication:
    """A snapshot handed to Kafka at ``at`` (monotonic seconds)."""

    snapshot: VolumeSnapshot
    at: float


@dataclass(frozen=True, slots=True)
class PublicationDecision:
    reason: PublicationReason | None
    """Why to publish now; None means do not publish."""
    detail: str

    @property
    def publish(self) -> bool:
        return self.reason is not None


def decide_publication(
    previous: Publication | None,
    candidate: VolumeSnapshot,
    now: float,
    policy: PublicationPolicy,
) -> PublicationDecision:
    if previous is None:
        return PublicationDecision(PublicationReason.FIRST, "first snapshot since start")
    published = previous.snapshot
    layout_change = _layout_change(published, candidate)
    if layout_change is not None:
        return PublicationDecision(PublicationReason.VOLUMES_CHANGED, layout_change)
    published_volumes = {volume.volume_name: volume for volume in published.volumes}
    moved: list[str] = []
    for volume in candidate.volumes:
        before = published_volumes[volume.volume_name]
        state_before = _state(before, published)
        state_now = _state(volume, candidate)
        if state_before is not state_now:
            return PublicationDecision(
                PublicationReason.STATE_CHANGED,
                f"{volume.volume_name}: {state_before.value} -> {state_now.value}",
            )
        if free_space_moved(before, volume, policy.change_threshold_percent):
            moved.append(volume.volume_name)
    if moved:
        return PublicationDecision(
            PublicationReason.FREE_SPACE_MOVED,
            f"free space moved by more than {policy.change_threshold_percent:g}% of capacity on "
            + ", ".join(moved),
        )
    elapsed = now - previous.at
    if elapsed >= policy.heartbeat_interval_seconds:
        return PublicationDecision(
            PublicationReason.HEARTBEAT, f"{elapsed:.1f}s since the last publication"
        )
    return PublicationDecision(None, "no change and heartbeat not due")


def free_space_moved(before: VolumeUsage, after: VolumeUsage, threshold_percent: float) -> bool:
    """True when free space moved by strictly more than ``threshold_percent`` of capacity."""
    return abs(after.free - before.free) * 100 > threshold_percent * after.capacity


def _state(volume: VolumeUsage, snapshot: VolumeSnapshot) -> QuotaState:
    return judge_volume(volume, snapshot.soft_limit, snapshot.hard_limit).state


def _layout_change(published: VolumeSnapshot, candidate: VolumeSnapshot) -> str | None:
    if (published.soft_limit, published.hard_limit) != (candidate.soft_limit, candidate.hard_limit):
        return "broker-wide limits changed"
    before = {volume.volume_name: volume for volume in published.volumes}
    after = {volume.volume_name: volume for volume in candidate.volumes}
    if before.keys() != after.keys():
        added = sorted(after.keys() - before.keys())
        removed = sorted(before.keys() - after.keys())
        return f"volumes added {added}, removed {removed}"
    for name, volume in after.items():
        previous = before[name]
        if volume.capacity != previous.capacity:
            return f"{name}: capacity {previous.capacity} -> {volume.capacity} bytes"
        if (volume.soft_limit, volume.hard_limit) != (previous.soft_limit, previous.hard_limit):
            return f"{name}: volume limits changed"
        if volume.path != previous.path:
            return f"{name}: mount point {previous.path} -> {volume.path}"
    return None
