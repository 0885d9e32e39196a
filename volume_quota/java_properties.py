"""Reading a Java ``.properties`` text (Kafka's ``server.properties``) into a dict.

Follows ``java.util.Properties.load``: ``#`` and ``!`` comments, ``=``, ``:`` or whitespace
between key and value, a trailing backslash continues the line, and the usual escapes
(``\\t``, ``\\n``, ``\\uXXXX``, ``\\=``...). A later key replaces an earlier one.
"""

from __future__ import annotations

_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_java_properties(text: str) -> dict[str, str]:
    properties: dict[str, str] = {}
    for logical_line in _logical_lines(text):
        key, value = _split_key_value(logical_line)
        properties[_unescape(key)] = _unescape(value)
    return properties


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        if pending is not None:
            line = pending + line
        if _ends_with_continuation(line):
            pending = line[:-1]
            continue
        pending = None
        lines.append(line)
    if pending is not None:
        lines.append(pending)
    return lines


def _ends_with_continuation(line: str) -> bool:
    trailing_backslashes = len(line) - len(line.rstrip("\\"))
    return trailing_backslashes % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        character = line[index]
        if character == "\\":
            index += 2
            continue
        if character in "=: \t\f":
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    result: list[str] = []
    index = 0
    while index < len(text):
        character = text[index]
        if character != "\\" or index + 1 >= len(text):
            result.append(character)
            index += 1
            continue
        escaped = text[index + 1]
        if escaped == "u" and _is_hex(text[index + 2 : index + 6]):
            result.append(chr(int(text[index + 2 : index + 6], 16)))
            index += 6
            continue
        result.append(_SIMPLE_ESCAPES.get(escaped, escaped))
        index += 2
    return "".join(result)


def _is_hex(text: str) -> bool:
    return len(text) == 4 and all(character in "0123456789abcdefABCDEF" for character in text)
