"""Durations as people write them: ``500ms``, ``1s``, ``10``, ``5m``, ``24h``, ``7d``.

A bare number is seconds. The result is always seconds as a float.
"""

from __future__ import annotations

import math
import re

_UNIT_SECONDS: dict[str, float] = {
    "": 1.0,
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}

_DURATION_PATTERN = re.compile(
    r"^\s*(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(?P<unit>[a-z]*)\s*$"
)


def parse_duration(text: str) -> float:
    """Seconds named by ``text``; ``ValueError`` with examples when it names no duration."""
    match = _DURATION_PATTERN.match(text.lower())
    if match is None:
        raise ValueError(f"{text!r} is not a duration (examples: 500ms, 1s, 10, 5m, 24h, 7d)")
    unit_seconds = _UNIT_SECONDS.get(match["unit"])
    if unit_seconds is None:
        raise ValueError(f"{text!r} has an unknown unit {match['unit']!r} (use ms, s, m, h or d)")
    seconds = float(match["number"]) * unit_seconds
    if not math.isfinite(seconds):
        raise ValueError(f"{text!r} is too large")
    return seconds
