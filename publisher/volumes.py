"""The publisher's picture of a volume: a filesystem holding log dirs, and one measurement of it."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.snapshot import Limit


@dataclass(frozen=True, slots=True)
class Volume:
    """One filesystem holding one or more of the broker's log dirs, counted once."""

    name: str
    """Unique on this broker: the device (``/dev/nvme1n1``), or the mount point for filesystems
    without a device of their own (tmpfs, overlay)."""
    mount_point: str
    log_dirs: tuple[str, ...]
    soft_limit: Limit | None = None
    """Overrides the broker-wide soft limit on this volume."""
    hard_limit: Limit | None = None
    """Overrides the broker-wide hard limit on this volume."""


@dataclass(frozen=True, slots=True)
class VolumeMeasurement:
    """Sizes of ``volume`` at one instant, in bytes; ``free`` is what an unprivileged writer can
    still use (``f_bavail``), so blocks reserved for root count as consumed."""

    volume: Volume
    capacity_bytes: int
    free_bytes: int

    @property
    def consumed_bytes(self) -> int:
        return min(self.capacity_bytes, max(0, self.capacity_bytes - self.free_bytes))


@dataclass(frozen=True, slots=True)
class VolumeLimitOverride:
    """Limits for one volume that replace the broker-wide ones; ``volume`` names it as
    configured (a log dir, a mount point or a device)."""

    volume: str
    soft_limit: Limit | None = None
    hard_limit: Limit | None = None
