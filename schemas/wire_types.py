"""Building blocks shared by every wire format: the model base and the timestamp type."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    WithJsonSchema,
)

RFC3339_PATTERN = (
    r"^(?:19[7-9][0-9]|2[0-9]{3})-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])(?!\n)$"
)
"""The one timestamp syntax accepted on the wire: RFC 3339 ``date-time`` with an offset.

Stricter than RFC 3339 where readers disagree: upper-case ``T`` and ``Z`` only, 1-9 fraction
digits (what Java's ``Instant`` holds), no leap second, years 1970-2999 as written. The instant
itself, in UTC, must fall in those years too (``INSTANT_RANGE``: a pattern cannot say it), so
that what is read can be written back in UTC and read again, and no offset can push it outside
what Python's ``datetime`` holds.
ASCII digits are spelt ``[0-9]`` because Python's ``\\d`` also matches other scripts' digits, and
``(?!\\n)$`` because Python's ``$`` (used by JSON Schema validators written in Python) also
matches before a final newline; the pattern means the same in ECMA-262 and in Python."""

_RFC3339 = re.compile(RFC3339_PATTERN)

INSTANT_RANGE = (datetime(1970, 1, 1, tzinfo=UTC), datetime(3000, 1, 1, tzinfo=UTC))
"""[start, end) of the instants accepted on the wire."""


def instant_in_range(moment: datetime) -> bool:
    try:
        return INSTANT_RANGE[0] <= moment < INSTANT_RANGE[1]
    except OverflowError:  # an offset at the edge of datetime's own range (Python callers only)
        return False


def is_rfc3339_text(value: object) -> bool:
    """Whether ``value`` is a string in the wire timestamp syntax (the calendar is unchecked)."""
    return isinstance(value, str) and _RFC3339.match(value) is not None


def _wire_instant(value: object) -> object:
    # A datetime comes from Python code (the publisher); anything else came off the wire.
    if isinstance(value, datetime) or is_rfc3339_text(value):
        return value
    raise ValueError(
        "must be an RFC 3339 date-time string with an offset, e.g. 2026-11-22T12:00:00Z "
        "(epoch numbers and other date styles are refused)"
    )


def _instant_range(moment: datetime) -> datetime:
    if not instant_in_range(moment):
        raise ValueError("must be an instant from 1970-01-01T00:00:00Z to the end of 2999 (UTC)")
    return moment


def format_instant(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a ``Z``: the one timestamp style we write."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


Instant = Annotated[
    AwareDatetime,
    BeforeValidator(_wire_instant),
    AfterValidator(_instant_range),
    PlainSerializer(format_instant, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time", "pattern": RFC3339_PATTERN}),
]
"""An RFC 3339 timestamp that must carry an offset (a naive time is ambiguous across hosts)."""


class WireModel(BaseModel):
    """Immutable, forward compatible (unknown fields ignored), no NaN or Infinity accepted."""

    model_config = ConfigDict(
        extra="ignore",
        frozen=True,
        allow_inf_nan=False,
        populate_by_name=True,
    )
