"""The JSON text layer of the wire contract: what counts as a well-formed message value.

RFC 8259 leaves room that parsers fill differently, and a message that two readers read
differently is an attack on whichever reads it second. A value is refused as malformed unless it
is strict JSON (I-JSON, RFC 7493, less its number rule, since byte counts need 64 bits):

- UTF-8 without a byte order mark; no invalid byte sequence, no lone surrogate (escaped or not);
- the RFC 8259 grammar only: no ``NaN`` or ``Infinity``, no comments, no trailing comma, nothing
  but whitespace (space, tab, CR, LF) after the value, no raw control character in a string;
- no object with two members of the same name (readers disagree on which one wins);
- no integer literal longer than 4,300 characters, its sign included (pydantic's parser counts
  the sign, jiter's Python binding and Python's own int() do not: the shortest limit wins);
- at most ``MAX_NESTING_DEPTH`` levels of arrays and objects (the top-level object is level 1).

Parsing is ``jiter``'s (the Python binding of the Rust parser that pydantic is built on) with
its strict options; the two limits it does not check are ``text_limit_problem``'s.
"""

from __future__ import annotations

from typing import Any

import jiter

MAX_NESTING_DEPTH = 32
"""A snapshot is 4 levels deep; the rest is headroom for fields a newer publisher adds."""

MAX_INTEGER_CHARACTERS = 4300
_LONGEST_NEGATIVE = -(10 ** (MAX_INTEGER_CHARACTERS - 1)) + 1
"""The smallest integer whose literal, minus sign included, fits MAX_INTEGER_CHARACTERS."""


class MalformedJsonError(ValueError):
    """The value is not strict JSON; the message says where, without echoing the input."""


def parse_json_text(value: bytes) -> Any:
    """The document in ``value``, or ``MalformedJsonError``; see also ``text_limit_problem``."""
    try:
        return jiter.from_json(
            value, allow_inf_nan=False, catch_duplicate_keys=True, cache_mode="keys"
        )
    except (ValueError, RecursionError) as error:
        raise MalformedJsonError(str(error)[:200]) from None


def text_limit_problem(value: object, depth: int = 1) -> str | None:
    """What in ``value`` (found at nesting level ``depth``) breaks a limit that the parse does not
    check itself: nesting beyond ``MAX_NESTING_DEPTH``, or a negative integer one character too
    long. Iterative, so that it costs no Python stack however deep the document."""
    pending: list[tuple[object, int]] = [(value, depth)]
    while pending:
        current, level = pending.pop()
        children: Any
        if isinstance(current, dict):
            children = current.values()
        elif isinstance(current, list):
            children = current
        else:
            if type(current) is int and current < _LONGEST_NEGATIVE:
                return f"an integer literal is longer than {MAX_INTEGER_CHARACTERS} characters"
            continue
        if level > MAX_NESTING_DEPTH:
            return f"nested deeper than {MAX_NESTING_DEPTH} levels"
        pending.extend((child, level + 1) for child in children)
    return None


def parse_strict_document(value: bytes) -> Any:
    """``parse_json_text`` and ``text_limit_problem``: the reference reading of a value's text."""
    document = parse_json_text(value)
    problem = text_limit_problem(document)
    if problem is not None:
        raise MalformedJsonError(problem)
    return document
