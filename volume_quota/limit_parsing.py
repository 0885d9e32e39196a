"""Reading limits from configuration text: ``MinFreePercentage:15``, ``MinFreeBytes:5GiB``.

The limit models themselves live in ``schemas.snapshot`` (the wire format); this module only
turns configuration text into them. Per-volume overrides name a volume (a log dir, a mount point
or a device) and one or both limits:
``/mnt/data0:soft=MinFreePercentage:20,hard=MinFreeBytes:1GiB``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import ValidationError

from publisher.volumes import VolumeLimitOverride
from schemas.snapshot import (
    ConsumedSpaceLimit,
    Limit,
    LimitType,
    MinFreeBytesLimit,
    MinFreePercentageLimit,
)
from volume_quota.byte_sizes import format_byte_size, parse_byte_size

LIMIT_EXAMPLES = "MinFreePercentage:15, MinFreeBytes:5GiB or ConsumedSpace:900GiB"

_TYPES_BY_LOWER_NAME = {limit_type.value.lower(): limit_type for limit_type in LimitType}


def parse_limit(text: str) -> Limit:
    """``TYPE:LEVEL`` -> a limit; the type name is matched without regard to case."""
    type_name, separator, level_text = text.strip().partition(":")
    if not separator or not level_text.strip():
        raise ValueError(f"{text!r} is not a limit (expected TYPE:LEVEL, e.g. {LIMIT_EXAMPLES})")
    limit_type = _TYPES_BY_LOWER_NAME.get(type_name.strip().lower())
    if limit_type is None:
        known = ", ".join(limit_type.value for limit_type in LimitType)
        raise ValueError(f"unknown limit type {type_name.strip()!r} (known types: {known})")
    level_text = level_text.strip()
    if limit_type is LimitType.MIN_FREE_PERCENTAGE:
        return _percentage_limit(level_text.removesuffix("%").strip(), text)
    level = parse_byte_size(level_text)
    try:
        if limit_type is LimitType.MIN_FREE_BYTES:
            return MinFreeBytesLimit(type=LimitType.MIN_FREE_BYTES, level=level)
        return ConsumedSpaceLimit(type=LimitType.CONSUMED_SPACE, level=level)
    except ValidationError:
        raise ValueError(f"{text!r}: level {level} bytes is out of range") from None


def _percentage_limit(level_text: str, text: str) -> MinFreePercentageLimit:
    try:
        level = float(level_text)
    except ValueError:
        raise ValueError(f"{text!r}: {level_text!r} is not a percentage") from None
    if not math.isfinite(level) or not 0 <= level <= 100:
        raise ValueError(f"{text!r}: a percentage must be between 0 and 100")
    return MinFreePercentageLimit(type=LimitType.MIN_FREE_PERCENTAGE, level=level)


def limit_from_config(value: Any) -> Any:
    """A limit given as ``TYPE:LEVEL`` text becomes a limit; anything else is left to pydantic.

    A TOML file may also spell a limit as a table, ``{type = "MinFreeBytes", level = 5368709120}``,
    which the limit model validates itself.
    """
    if isinstance(value, str):
        return parse_limit(value)
    return value


def format_limit(limit: Limit) -> str:
    """The configuration spelling of ``limit``, for logs: ``MinFreeBytes:5GiB``."""
    if isinstance(limit, MinFreePercentageLimit):
        level = limit.level
        return f"{limit.type.value}:{int(level) if level.is_integer() else level}"
    return f"{limit.type.value}:{format_byte_size(limit.level)}"


_OVERRIDE_PATTERN = re.compile(r"^(?P<volume>.+?):(?P<assignments>(?:soft|hard)\s*=.*)$", re.I)


def parse_volume_limit_override(text: str) -> VolumeLimitOverride:
    """``VOLUME:soft=TYPE:LEVEL[,hard=TYPE:LEVEL]`` -> an override."""
    match = _OVERRIDE_PATTERN.match(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a volume limit (expected VOLUME:soft=TYPE:LEVEL[,hard=TYPE:LEVEL], "
            "e.g. /mnt/data0:soft=MinFreePercentage:20)"
        )
    limits: dict[str, Limit] = {}
    for assignment in match["assignments"].split(","):
        which, _, limit_text = assignment.partition("=")
        which = which.strip().lower()
        if which not in ("soft", "hard"):
            raise ValueError(f"{text!r}: {which!r} is neither soft nor hard")
        if which in limits:
            raise ValueError(f"{text!r} sets the {which} limit twice")
        limits[which] = parse_limit(limit_text)
    return VolumeLimitOverride(
        volume=match["volume"].strip(),
        soft_limit=limits.get("soft"),
        hard_limit=limits.get("hard"),
    )


def volume_limit_overrides_from_config(value: Any) -> list[VolumeLimitOverride]:
    """Overrides from an environment string (``;``-separated), a list, or a TOML table.

    A TOML table maps a volume to its limits: ``[volume_limits."/mnt/data0"] soft = "..."``.
    """
    if isinstance(value, str):
        return [parse_volume_limit_override(part) for part in value.split(";") if part.strip()]
    if isinstance(value, dict):
        return [_override_from_table(str(volume), limits) for volume, limits in value.items()]
    if isinstance(value, list | tuple):
        overrides = []
        for item in value:
            if isinstance(item, VolumeLimitOverride):
                overrides.append(item)
            elif isinstance(item, str):
                overrides.append(parse_volume_limit_override(item))
            else:
                raise ValueError(f"{item!r} is not a volume limit")
        return overrides
    raise ValueError(f"{value!r} is not a list of volume limits")


def _override_from_table(volume: str, limits: Any) -> VolumeLimitOverride:
    if not isinstance(limits, dict) or not limits or set(limits) - {"soft", "hard"}:
        raise ValueError(f"volume {volume!r}: expected a table with soft and/or hard limits")
    parsed: dict[str, Limit] = {}
    for which, limit_text in limits.items():
        if not isinstance(limit_text, str):
            raise ValueError(f"volume {volume!r}: the {which} limit must be text like TYPE:LEVEL")
        parsed[which] = parse_limit(limit_text)
    return VolumeLimitOverride(
        volume=volume, soft_limit=parsed.get("soft"), hard_limit=parsed.get("hard")
    )
