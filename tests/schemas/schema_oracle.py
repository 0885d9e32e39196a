"""The JSON Schema side of the differential test, written without the decoder's code.

A verdict on a message value from the contract's other statement: the JSON text rules read with
the standard library's parser (not jiter), then ``schemas/volume-snapshot.schema.json`` with
``jsonschema``, then the three rules the schema's ``$comment`` states because JSON Schema cannot.
Two adjustments make the validator read the schema as the contract means it, and both are
stated in the schema file: ``integer`` is a JSON integer literal (JSON Schema 2020-12 counts
``1000.0`` as an integer), and ``date-time`` is checked (a format is only an annotation unless
a checker is given; this one is independent of optional packages).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator, FormatChecker

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "volume-snapshot.schema.json"
MAX_MESSAGE_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_INTEGER_CHARACTERS = 4300

ACCEPT = "accept"

_format_checker = FormatChecker(formats=())


@_format_checker.checks("date-time", raises=ValueError)
def _is_calendar_date_time(instance: object) -> bool:
    if isinstance(instance, str):
        datetime.strptime(instance[:19], "%Y-%m-%dT%H:%M:%S")
    return True


_StrictIntegers = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, instance: type(instance) is int
    ),
)
_validator = _StrictIntegers(json.loads(SCHEMA_FILE.read_text()), format_checker=_format_checker)


class _MalformedError(ValueError):
    pass


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise _MalformedError("duplicate member name")
    return dict(pairs)


def _integer(literal: str) -> int:
    if len(literal) > MAX_INTEGER_CHARACTERS:  # the sign counts (the contract's rule)
        raise _MalformedError("integer literal too long")
    return int(literal)


def _no_constant(name: str) -> None:
    raise _MalformedError(f"{name} is not JSON")


def _check_tree(document: Any) -> None:
    """Every string encodes to UTF-8 (no lone surrogate) and nesting stays within MAX_DEPTH."""
    pending: list[tuple[Any, int]] = [(document, 0)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            value.encode("utf-8")
        elif isinstance(value, dict | list):
            if depth + 1 > MAX_DEPTH:
                raise _MalformedError("too deep")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for name, child in items:
                pending.append((name, depth + 1))
                pending.append((child, depth + 1))


def strict_document(value: bytes) -> Any:
    """The document; a ``ValueError`` when the text breaks the JSON text rules."""
    text = value.decode("utf-8")  # strict: no invalid sequence, no encoded surrogate
    document = json.loads(
        text, parse_constant=_no_constant, parse_int=_integer, object_pairs_hook=_unique_members
    )
    _check_tree(document)
    return document


def _breaks_unstated_rules(document: dict[str, Any]) -> bool:
    """The three rules of the schema's ``$comment``."""
    volumes = document["volumes"]
    names = [volume["volumeName"] for volume in volumes]
    over = any(volume["consumed"] > volume["capacity"] for volume in volumes)
    year = datetime.fromisoformat(document["snapshotAt"]).astimezone(UTC).year
    return over or len(set(names)) != len(names) or not 1970 <= year <= 2999


def schema_verdict(value: bytes) -> str:
    """``accept`` or the rejection reason's value the contract gives ``value``."""
    if len(value) > MAX_MESSAGE_BYTES:
        return "too_large"
    try:
        document = strict_document(value)
    except (ValueError, RecursionError):  # UnicodeError and JSONDecodeError are ValueErrors
        return "malformed_json"
    if not _validator.is_valid(document):
        version = document.get("schemaVersion") if isinstance(document, dict) else None
        if type(version) is int and version > 1:
            return "unsupported_version"
        return "invalid_field"
    if _breaks_unstated_rules(document):
        return "invalid_field"
    return ACCEPT
