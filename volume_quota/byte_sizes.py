"""Byte sizes as people write them: ``5GiB``, ``500MB``, ``16Mi``, ``1073741824``.

Binary units (KiB, MiB, GiB, TiB, PiB, and the Kubernetes spellings Ki, Mi, Gi, Ti, Pi) are
powers of 1024; decimal units (kB, KB, MB, GB, TB, PB, and k, M, G, T, P) are powers of 1000. A
size must come out as a whole number of bytes: ``1.5GiB`` is fine, ``0.1KiB`` is refused.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_UNIT_MULTIPLIERS: dict[str, int] = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "p": 1000**5,
    "pb": 1000**5,
    "ki": 1024,
    "kib": 1024,
    "mi": 1024**2,
    "mib": 1024**2,
    "gi": 1024**3,
    "gib": 1024**3,
    "ti": 1024**4,
    "tib": 1024**4,
    "pi": 1024**5,
    "pib": 1024**5,
}

_SIZE_PATTERN = re.compile(r"^\s*(?P<number>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[A-Za-z]*)\s*$")

BINARY_UNITS = ("PiB", "TiB", "GiB", "MiB", "KiB")


def parse_byte_size(text: str) -> int:
    """The number of bytes ``text`` names; ``ValueError`` with an example when it names none."""
    match = _SIZE_PATTERN.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a byte size (examples: 5GiB, 500MB, 1073741824)")
    unit = match["unit"]
    multiplier = _UNIT_MULTIPLIERS.get(unit.lower())
    if multiplier is None:
        raise ValueError(
            f"{text!r} has an unknown unit {unit!r} (use B, KB, MB, GB, TB, PB for powers of "
            "1000 or KiB, MiB, GiB, TiB, PiB for powers of 1024)"
        )
    try:
        exact = Decimal(match["number"]) * multiplier
    except InvalidOperation:  # pragma: no cover - the pattern only admits valid decimals
        raise ValueError(f"{text!r} is not a byte size") from None
    if exact != exact.to_integral_value():
        raise ValueError(f"{text!r} is not a whole number of bytes ({exact} bytes)")
    return int(exact)


def format_byte_size(size: int) -> str:
    """The shortest exact binary spelling of ``size``: 5368709120 -> '5GiB', 1000 -> '1000B'."""
    if size < 0:
        raise ValueError("a byte size cannot be negative")
    for power, unit in zip(range(5, 0, -1), BINARY_UNITS, strict=True):
        scale = 1024**power
        if size and size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size}B"
