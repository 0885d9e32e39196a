"""Parsing command-line values into domain values, with messages that name the mistake."""

from __future__ import annotations

import argparse
import math
from datetime import datetime

from schemas.snapshot import MAX_BROKER_ID


def broker_id_list(text: str) -> frozenset[int]:
    """'0,1,2' -> {0, 1, 2}; an empty string means no live broker."""
    ids: set[int] = set()
    for part in text.split(","):
        item = part.strip()
        if not item:
            continue
        if not item.isdigit() or int(item) > MAX_BROKER_ID:
            raise argparse.ArgumentTypeError(
                f"{item!r} is not a broker id (expected comma-separated integers like 0,1,2)"
            )
        ids.add(int(item))
    return frozenset(ids)


def iso_instant(text: str) -> datetime:
    """An ISO 8601 time that carries an offset (Z or +hh:mm)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time (example: 2026-11-22T12:00:00Z)"
        ) from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no offset: add Z or +hh:mm (example: 2026-11-22T12:00:00Z)"
        )
    return moment


def positive_number(text: str, unit: str = "") -> float:
    """A finite number above zero; ``unit`` (e.g. 'seconds') only words the messages."""
    suffix = f" of {unit}" if unit else ""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number{suffix}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number{suffix}")
    return value


def positive_seconds(text: str) -> float:
    return positive_number(text, "seconds")


def positive_integer(text: str) -> int:
    """A whole number of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)
