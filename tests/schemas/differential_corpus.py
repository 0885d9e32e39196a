"""The differential corpus: hand-written boundary and hostile values, and generators.

Every expected verdict here comes from the contract (``docs/decision-rule.md``, "The strict
wire contract"), not from running a decoder.
"""

from __future__ import annotations

import json
from typing import Any

from tests.snapshot_factory import snapshot_document, volume

MAX_BYTES = 2**63 - 1
ACCEPT = "accept"
MALFORMED = "malformed_json"
INVALID = "invalid_field"
UNSUPPORTED = "unsupported_version"
TOO_LARGE = "too_large"


def text(document: Any) -> bytes:
    return json.dumps(document).encode()


def with_top(**fields: Any) -> dict[str, Any]:
    document = snapshot_document(broker_id=3)
    document.update(fields)
    return document


def with_volume(**fields: Any) -> dict[str, Any]:
    # With a path: the hot path's common shape (name, path, capacity, consumed).
    document = snapshot_document(broker_id=3, volumes=[volume("/dev/a", 1000, 100, path="/d")])
    document["volumes"][0].update(fields)
    return document


def without(field: str) -> dict[str, Any]:
    document = snapshot_document(broker_id=3)
    del document[field]
    return document


def raw(field: str, literal: str, volume_field: bool = False) -> bytes:
    """The document with ``field`` spelt as the raw JSON ``literal`` (not via json.dumps)."""
    document = with_volume(**{field: "@@"}) if volume_field else with_top(**{field: "@@"})
    return text(document).replace(b'"@@"', literal.encode())


def at(instant: str) -> bytes:
    return text(with_top(snapshotAt=instant))


def nested(depth: int) -> str:
    """Arrays nested ``depth`` deep, as a member of the top-level object (itself level 1)."""
    return "[" * depth + "]" * depth


def percent(level: Any) -> dict[str, Any]:
    return {"type": "MinFreePercentage", "level": level}


def byte_limit(level: Any, kind: str = "MinFreeBytes") -> dict[str, Any]:
    return {"type": kind, "level": level}


VALID = text(with_top())

_ACCEPTED: dict[str, bytes] = {
    "minimal": VALID,
    "no volumes": text(with_top(volumes=[])),
    "every optional field": text(
        with_volume(path="/data", softLimit=percent(30), hardLimit=byte_limit(5, "ConsumedSpace"))
    ),
    "null optional fields": text(with_volume(path=None, softLimit=None, hardLimit=None)),
    "unknown fields": text(with_top(future={"a": [1, {"b": None}]}, x=1.5))
    .replace(b'"capacity"', b'"iops": [1, 2], "capacity"')
    .replace(b'"level": 20', b'"level": 20, "unit": "pct"'),
    "1024 volumes": text(with_top(volumes=[volume(f"v{i}") for i in range(1024)])),
    "broker 0": text(with_top(brokerId=0)),
    "broker 2^31-1": text(with_top(brokerId=2**31 - 1)),
    "capacity 2^63-1, all consumed": text(with_volume(capacity=MAX_BYTES, consumed=MAX_BYTES)),
    "percent 0, 100": text(with_top(softLimit=percent(0), hardLimit=percent(100))),
    "percent as integer and fraction": text(
        with_top(softLimit=percent(15), hardLimit=percent(0.5))
    ),
    "percent minus zero": text(with_top(softLimit=percent(-0.0))),
    "bytes level 0 and 2^63-1": text(
        with_top(softLimit=byte_limit(0), hardLimit=byte_limit(MAX_BYTES))
    ),
    "9 fraction digits": at("2026-11-22T12:00:00.123456789Z"),
    "offset +23:59": at("2026-11-22T12:00:00+23:59"),
    "offset -00:00": at("2026-11-22T12:00:00-00:00"),
    "first instant": at("1970-01-01T00:00:00Z"),
    "first instant, with an offset": at("1970-01-01T05:00:00+05:00"),
    "last instant": at("2999-12-31T23:59:59.999999999Z"),
    "last day of 2999 with a positive offset": at("2999-12-31T23:59:59+23:59"),
    "leap day": at("2028-02-29T12:00:00Z"),
    "name of 4096 characters": text(with_volume(volumeName="n" * 4096)),
    "name with an escaped surrogate pair": raw("volumeName", '"\\ud83d\\ude00"', True),
    "name with NUL": text(with_volume(volumeName="a\u0000b")),
    "unknown member 31 levels deep (level 32)": raw("x", nested(31)),
    "integer of 4300 digits in an unknown member": raw("x", "9" * 4300),
    "negative integer of 4299 digits in an unknown member": raw("x", "-" + "9" * 4299),
    "1e400 in an unknown member": raw("x", "1e400"),
    "surrounding whitespace": b" \t\r\n" + VALID + b"\n ",
}

_MALFORMED: dict[str, bytes] = {
    "garbage": b"garbage",
    "empty": b"",
    "byte order mark": b"\xef\xbb\xbf" + VALID,
    "UTF-16": VALID.decode().encode("utf-16"),
    "Latin-1 byte in a name": text(with_volume(volumeName="@@")).replace(b"@@", b"\xe9"),
    "encoded surrogate bytes": text(with_volume(volumeName="@@")).replace(b"@@", b"\xed\xa0\x80"),
    "escaped lone surrogate in a name": raw("volumeName", '"\\ud800"', True),
    "escaped lone surrogate in an unknown member": raw("x", '"\\udc00x"'),
    "escaped lone surrogate in a member name": VALID.replace(b"{", b'{"\\ud800": 1, ', 1),
    "NaN as a level": text(with_top(softLimit=percent(1))).replace(
        b'"level": 1}', b'"level": NaN}'
    ),
    "Infinity in an unknown member": raw("x", "Infinity"),
    "-Infinity in an unknown member": raw("x", "-Infinity"),
    "duplicate brokerId": VALID.replace(b'"brokerId": 3', b'"brokerId": 3, "brokerId": 4'),
    "duplicate key in a volume": VALID.replace(
        b'"capacity": 1000', b'"capacity": 1000, "capacity": 1'
    ),
    "duplicate key in a limit": VALID.replace(b'"level": 20', b'"level": 20, "level": 20'),
    "duplicate key in an unknown member": raw("x", '{"a": 1, "a": 1}'),
    "trailing comma": VALID[:-1] + b",}",
    "comment": b"// a snapshot\n" + VALID,
    "trailing data": VALID + b" {}",
    "single quotes": VALID.replace(b'"brokerId"', b"'brokerId'"),
    "raw control character": text(with_volume(volumeName="@@")).replace(b"@@", b"a\x01"),
    "form feed as whitespace": b"\x0c" + VALID,
    "50,000 nested arrays": b"[" * 50_000,
    "unknown member 32 levels deep (level 33)": raw("x", nested(32)),
    "volumes nested 40 deep": raw("volumes", nested(40)),
    "unsupported version nested too deep": text(with_top(schemaVersion=2)).replace(
        b"{", b'{"x": ' + nested(40).encode() + b", ", 1
    ),
    "brokerId of 4301 digits": raw("brokerId", "1" * 4301),
    "negative integer of 4300 digits in an unknown member": raw("x", "-" + "9" * 4300),
    "negative brokerId of 4300 digits": raw("brokerId", "-" + "9" * 4300),
    "unsupported version with a long negative integer": raw("schemaVersion", "2").replace(
        b"{", b'{"x": -' + b"9" * 4300 + b", ", 1
    ),
}

_UNSUPPORTED: dict[str, bytes] = {
    "schemaVersion 2": text(with_top(schemaVersion=2)),
    "schemaVersion 10^30, nothing else": text({"schemaVersion": 10**30}),
    "schemaVersion 2 with other fields changed": text({"schemaVersion": 2, "disks": {"a": 1}}),
}

_INVALID_TOP: dict[str, Any] = {
    "null": None,
    "array": [],
    "string": "snapshot",
    "number": 1,
    "schemaVersion 0": with_top(schemaVersion=0),
    "schemaVersion -1": with_top(schemaVersion=-1),
    "schemaVersion as a string": with_top(schemaVersion="1"),
    "schemaVersion 1.0": with_top(schemaVersion=1.0),
    "schemaVersion 2.0": with_top(schemaVersion=2.0),
    "schemaVersion true": with_top(schemaVersion=True),
    "schemaVersion null": with_top(schemaVersion=None),
    "brokerId as a string": with_top(brokerId="3"),
    "brokerId 3.0": with_top(brokerId=3.0),
    "brokerId true": with_top(brokerId=True),
    "brokerId -1": with_top(brokerId=-1),
    "brokerId 2^31": with_top(brokerId=2**31),
    "brokerId 10^40": with_top(brokerId=10**40),
    "epoch seconds": with_top(snapshotAt=1763812800),
    "epoch milliseconds as a float": with_top(snapshotAt=1763812800000.0),
    "epoch seconds as a string": with_top(snapshotAt="1763812800"),
    "no offset": with_top(snapshotAt="2026-11-22T12:00:00"),
    "space instead of T": with_top(snapshotAt="2026-11-22 12:00:00Z"),
    "lower-case t and z": with_top(snapshotAt="2026-11-22t12:00:00z"),
    "no seconds": with_top(snapshotAt="2026-11-22T12:00Z"),
    "10 fraction digits": with_top(snapshotAt="2026-11-22T12:00:00.1234567891Z"),
    "empty fraction": with_top(snapshotAt="2026-11-22T12:00:00.Z"),
    "leap second": with_top(snapshotAt="2026-12-31T23:59:60Z"),
    "30 February": with_top(snapshotAt="2026-02-30T12:00:00Z"),
    "29 February of a common year": with_top(snapshotAt="2026-02-29T12:00:00Z"),
    "31 April": with_top(snapshotAt="2026-04-31T12:00:00Z"),
    "hour 24": with_top(snapshotAt="2026-11-22T24:00:00Z"),
    "offset +24:00": with_top(snapshotAt="2026-11-22T12:00:00+24:00"),
    "offset without colon": with_top(snapshotAt="2026-11-22T12:00:00+0100"),
    "offset in hours only": with_top(snapshotAt="2026-11-22T12:00:00+01"),
    "year 1969": with_top(snapshotAt="1969-12-31T23:59:59Z"),
    "year 3000": with_top(snapshotAt="3000-01-01T00:00:00Z"),
    "year 1 with an offset": with_top(snapshotAt="0001-01-01T00:00:00+01:00"),
    "1970 as written, 1969 in UTC": with_top(snapshotAt="1970-01-01T00:30:00+01:00"),
    "2999 as written, 3000 in UTC": with_top(snapshotAt="2999-12-31T23:59:59.5-23:59"),
    "trailing newline": with_top(snapshotAt="2026-11-22T12:00:00Z\n"),
    "Arabic-Indic digits": with_top(snapshotAt="\u0662\u0660\u0662\u0666-11-22T12:00:00Z"),
    "date only": with_top(snapshotAt="2026-11-22"),
    "snapshotAt null": with_top(snapshotAt=None),
    "limit type unknown": with_top(softLimit={"type": "Bogus", "level": 1}),
    "limit type in lower case": with_top(softLimit={"type": "minfreepercentage", "level": 1}),
    "limit type a number": with_top(softLimit={"type": 5, "level": 1}),
    "limit without level": with_top(softLimit={"type": "MinFreeBytes"}),
    "limit without type": with_top(softLimit={"level": 1}),
    "limit a string": with_top(softLimit="MinFreePercentage:15"),
    "percent as a string": with_top(softLimit=percent("15")),
    "percent true": with_top(softLimit=percent(True)),
    "percent 100.5": with_top(softLimit=percent(100.5)),
    "percent -1": with_top(softLimit=percent(-1)),
    "percent 10^400": with_top(softLimit=percent(10**400)),
    "bytes level 1000.0": with_top(hardLimit=byte_limit(1000.0)),
    "bytes level -1": with_top(hardLimit=byte_limit(-1, "ConsumedSpace")),
    "bytes level 2^63": with_top(hardLimit=byte_limit(2**63)),
    "bytes level as a string": with_top(hardLimit=byte_limit("1000")),
    "top-level limit null": with_top(hardLimit=None),
    "volumes a string": with_top(volumes="many"),
    "volumes an object": with_top(volumes={}),
    "volumes null": with_top(volumes=None),
    "1025 volumes": with_top(volumes=[volume(f"v{i}") for i in range(1025)]),
    "volume not an object": with_top(volumes=[1]),
    "empty name": with_volume(volumeName=""),
    "name of 4097 characters": with_volume(volumeName="n" * 4097),
    "name a number": with_volume(volumeName=5),
    "name null": with_volume(volumeName=None),
    "path a number": with_volume(path=5),
    "path true": with_volume(path=True),
    "path of 4097 characters": with_volume(path="p" * 4097),
    "capacity 1000.0": with_volume(capacity=1000.0),
    "capacity as a string": with_volume(capacity="1000"),
    "capacity true": with_volume(capacity=True),
    "capacity -1": with_volume(capacity=-1),
    "capacity 2^63": with_volume(capacity=2**63),
    "capacity null": with_volume(capacity=None),
    "consumed above capacity": with_volume(consumed=1001),
    "duplicate volume names": with_top(volumes=[volume("/dev/a"), volume("/dev/a")]),
    "volume limit unknown": with_volume(softLimit={"type": "Bogus", "level": 1}),
    "volume limit bytes 1.5": with_volume(hardLimit=byte_limit(1.5)),
}
for _field in ("schemaVersion", "brokerId", "snapshotAt", "softLimit", "hardLimit", "volumes"):
    _INVALID_TOP[f"no {_field}"] = without(_field)
for _field in ("volumeName", "capacity", "consumed"):
    _document = with_volume()
    del _document["volumes"][0][_field]
    _INVALID_TOP[f"volume without {_field}"] = _document
    _INVALID_TOP[f"volume without {_field}, with an unknown member"] = with_volume(
        **{_field: None, "iops": 3}
    )
    del _INVALID_TOP[f"volume without {_field}, with an unknown member"]["volumes"][0][_field]
_INVALID_TOP["capacity 1000.0 without path"] = with_top(
    volumes=[{"volumeName": "/dev/a", "capacity": 1000.0, "consumed": 0}]
)

HAND_TABLE: list[tuple[str, bytes, str]] = [
    *((name, value, ACCEPT) for name, value in _ACCEPTED.items()),
    *((name, value, MALFORMED) for name, value in _MALFORMED.items()),
    *((name, value, UNSUPPORTED) for name, value in _UNSUPPORTED.items()),
    *((name, text(document), INVALID) for name, document in _INVALID_TOP.items()),
    *(
        ("raw " + name, raw(field, literal, in_volume), INVALID)
        for name, field, literal, in_volume in (
            ("capacity 1e3", "capacity", "1e3", True),
            ("capacity -0.0", "capacity", "-0.0", True),
            ("brokerId 3e0", "brokerId", "3e0", False),
            ("percent 1e400", "softLimit", '{"type": "MinFreePercentage", "level": 1e400}', False),
        )
    ),
    ("over 1 MiB", b" " * (1024 * 1024 + 1), TOO_LARGE),
    ("over 1 MiB of valid JSON", text(with_top(pad="x" * (1024 * 1024))), TOO_LARGE),
]
"""(name, message value, expected verdict)."""
