"""Hypothesis strategies for the differential test: valid snapshots, and ways to break them."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hypothesis import strategies as st

MAX_BYTES = 2**63 - 1
KNOWN_TOP = ("schemaVersion", "brokerId", "snapshotAt", "softLimit", "hardLimit", "volumes")
KNOWN_VOLUME = ("volumeName", "path", "capacity", "consumed", "softLimit", "hardLimit")

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63 - 3, max_value=2**64 + 3)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["15", "1000", "1e3", "2026-11-22T12:00:00Z", "MinFreeBytes", ""])
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=8,
)


@st.composite
def instants(draw: st.DrawFn) -> str:
    """RFC 3339 strings in the wire syntax: any fraction length, any offset, years 1970-2999."""
    moment = draw(
        # A day from either end: any offset keeps the instant within 1970-2999 (the hand-written
        # table has the edges).
        st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2999, 12, 30, 23, 59, 59))
    )
    digits = draw(st.integers(min_value=0, max_value=9))
    fraction = (
        "."
        + "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=digits, max_size=digits)))
        if digits
        else ""
    )
    minutes = draw(st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59))
    if minutes == 0 and draw(st.booleans()):
        offset = "Z"
    else:
        sign = "-" if minutes < 0 else "+"
        offset = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + offset


limits = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("MinFreePercentage"),
            "level": st.floats(min_value=0, max_value=100)
            | st.integers(min_value=0, max_value=100),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["MinFreeBytes", "ConsumedSpace"]),
            "level": st.integers(min_value=0, max_value=MAX_BYTES),
        }
    ),
)
unknown_members = st.dictionaries(
    st.text(max_size=8).filter(
        lambda name: name not in KNOWN_TOP + KNOWN_VOLUME + ("type", "level")
    ),
    json_values,
    max_size=2,
)


@st.composite
def volumes(draw: st.DrawFn) -> dict[str, Any]:
    capacity = draw(st.integers(min_value=0, max_value=MAX_BYTES) | st.sampled_from([0, MAX_BYTES]))
    document: dict[str, Any] = {
        "volumeName": draw(st.text(min_size=1, max_size=16)),
        "capacity": capacity,
        "consumed": draw(st.integers(min_value=0, max_value=capacity)),
    }
    optional = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "path": st.none() | st.text(max_size=16),
                "softLimit": st.none() | limits,
                "hardLimit": st.none() | limits,
            },
        )
    )
    return {**document, **optional, **draw(unknown_members)}


@st.composite
def valid_documents(draw: st.DrawFn) -> dict[str, Any]:
    document = {
        "schemaVersion": 1,
        "brokerId": draw(st.integers(min_value=0, max_value=2**31 - 1)),
        "snapshotAt": draw(instants()),
        "softLimit": draw(limits),
        "hardLimit": draw(limits),
        "volumes": draw(st.lists(volumes(), max_size=6, unique_by=lambda v: v["volumeName"])),
    }
    return {**draw(unknown_members), **document}


def encode(document: Any, draw: st.DrawFn) -> bytes:
    """JSON text as a publisher might write it: ASCII-escaped or raw UTF-8, compact or spaced."""
    ascii_only = draw(st.booleans())
    separators = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    return json.dumps(document, ensure_ascii=ascii_only, separators=separators).encode()


@st.composite
def mutated_documents(draw: st.DrawFn) -> bytes:
    """A valid document with one field removed or replaced by any JSON value."""
    document = draw(valid_documents())
    target: dict[str, Any] = document
    keys: tuple[str, ...] = KNOWN_TOP
    where = draw(st.sampled_from(["top", "volume", "limit"]))
    if where == "volume" and document["volumes"]:
        target = draw(st.sampled_from(document["volumes"]))
        keys = KNOWN_VOLUME
    elif where == "limit":
        target = document[draw(st.sampled_from(["softLimit", "hardLimit"]))]
        keys = ("type", "level")
    key = draw(st.sampled_from(keys))
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        target.pop(key, None)
    else:
        target[key] = draw(json_values | instants() | limits)
    return encode(document, draw)


@st.composite
def mutated_bytes(draw: st.DrawFn) -> bytes:
    """A valid document's text with a few bytes replaced, inserted or deleted."""
    value = bytearray(encode(draw(valid_documents()), draw))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        position = draw(st.integers(min_value=0, max_value=len(value)))
        action = draw(st.sampled_from(["replace", "insert", "delete"]))
        byte = draw(st.sampled_from(b'{}[]",:0-9.eE \\tnul\x00\xff\xc3') | st.integers(0, 255))
        if action == "insert":
            value.insert(position, byte)
        elif position < len(value):
            if action == "replace":
                value[position] = byte
            else:
                del value[position]
    return bytes(value)
