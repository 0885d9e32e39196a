"""Fuzzing the usage decoder: whatever bytes arrive, it returns a document or a rejection,
never raises, and what it accepts the JSON Schema file accepts too."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.decode import Rejection, decode_usage
from schemas.json_schema import SCHEMA_DIRECTORY
from schemas.usage import TopicUsageDocument
from tests.schemas.test_usage import encode, topic, usage_document, usage_volume

VALIDATOR = jsonschema.Draft202012Validator(
    json.loads((SCHEMA_DIRECTORY / "topic-usage.schema.json").read_text())
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats()
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
paths = st.lists(
    st.sampled_from(
        ["volumes", 0, "topics", "other", "bytes", "topic", "totalBytes", "brokerId", 1]
    ),
    min_size=1,
    max_size=4,
)


def _mutate(document: Any, path: list[Any], value: Any) -> Any:
    """``document`` with the member at ``path`` (as far as it exists) replaced by ``value``."""
    target = document
    for step in path[:-1]:
        if _holds(target, step):
            target = target[step]
    if _holds(target, path[-1]) or (isinstance(target, dict) and isinstance(path[-1], str)):
        target[path[-1]] = value
    return document


def _holds(container: Any, step: Any) -> bool:
    if isinstance(container, dict):
        return isinstance(step, str) and step in container
    return isinstance(container, list) and isinstance(step, int) and step < len(container)


def _check(value: bytes, key: bytes | None) -> None:
    decoded = decode_usage(value, key)
    assert isinstance(decoded, TopicUsageDocument | Rejection)
    if isinstance(decoded, TopicUsageDocument):
        assert not list(VALIDATOR.iter_errors(json.loads(value))), value[:200]
        assert decode_usage(decoded.to_json_bytes(), key) == decoded


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.one_of(st.none(), st.binary(max_size=12)))
def test_random_bytes_never_raise(value: bytes, key: bytes | None) -> None:
    _check(value, key)


@settings(max_examples=800, deadline=None)
@given(paths, json_values, st.sampled_from([b"3", b"03", b"4", None]))
def test_mutated_documents_are_decoded_or_rejected(
    path: list[Any], value: Any, key: bytes | None
) -> None:
    document = usage_document(3, usage_volume("/dev/a", topic(), topic("logs", 50)))
    try:
        text = json.dumps(_mutate(document, path, value)).encode()
    except ValueError:
        return
    _check(text, key)
    _check(text[: len(text) // 2], key)


def test_the_unmutated_document_is_accepted() -> None:
    assert isinstance(decode_usage(encode(usage_document()), b"3"), TopicUsageDocument)
