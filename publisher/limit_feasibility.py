"""Limits that can never be met or never trigger on a volume of a given size (pure).

A limit is a free-space threshold on a volume. If the hard threshold is at or above the
volume's capacity, the volume is paused from the first snapshot and stays paused whatever is
deleted: every producer in the cluster would stop for good (a soft threshold there throttles
for good). That is a configuration mistake, refused at start. A ConsumedSpace level above the
capacity can never be reached: the limit protects nothing, which deserves a warning.
"""

from __future__ import annotations

from collections.abc import Sequence

from consumer.limits import free_bytes_threshold
from publisher.volumes import VolumeMeasurement
from schemas.snapshot import ConsumedSpaceLimit, Limit


def limit_problems(
    measurements: Sequence[VolumeMeasurement], soft: Limit, hard: Limit
) -> tuple[list[str], list[str]]:
    """(mistakes that must stop the publisher, warnings), one line each, naming the volume."""
    errors: list[str] = []
    warnings: list[str] = []
    for measurement in measurements:
        volume, capacity = measurement.volume, measurement.capacity_bytes
        for kind, limit in (
            ("hard", volume.hard_limit or hard),
            ("soft", volume.soft_limit or soft),
        ):
            threshold = free_bytes_threshold(limit, capacity)
            if threshold >= capacity:
                errors.append(
                    f"volume {volume.name} ({capacity} bytes): the {kind} limit "
                    f"{limit.type.value}:{_level(limit)} keeps {threshold:.0f} bytes free, at or "
                    "above its capacity, so it can never be met (producers would "
                    f"{'pause' if kind == 'hard' else 'throttle'} for good)"
                )
            elif isinstance(limit, ConsumedSpaceLimit) and limit.level > capacity:
                warnings.append(
                    f"volume {volume.name} ({capacity} bytes): the {kind} limit "
                    f"ConsumedSpace:{limit.level} is above its capacity and can never trigger"
                )
    return errors, warnings


def _level(limit: Limit) -> str:
    level = limit.level
    return str(int(level)) if float(level).is_integer() else f"{level:g}"
