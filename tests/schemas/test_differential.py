"""One contract, three readings: the JSON Schema file, the pydantic model, the hot path.

Every value of the corpus (hand-written boundary and hostile values, and generated ones) must get
the same verdict from (a) ``jsonschema`` with the schema file (``schema_oracle``), (b) the
pydantic model (``decode_snapshot_reference``) and (c) the hot path (``decode_snapshot``); (b) and
(c) must also agree on the rejection reason, the claimed broker and, for an accepted value, the
very model they build. (d) The Spark ingest reads every message with (c) itself
(``spark_history.snapshot_rows``); ``tests/spark/test_differential_spark.py`` runs this corpus
(the hand-written table and values drawn from these strategies) through (a), (c) and the ingest
in one Spark job and requires the same verdict from all three (see docs/decision-rule.md).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from schemas.decode import Rejection, decode_snapshot, decode_snapshot_reference
from schemas.snapshot import VolumeSnapshot
from tests.schemas.differential_corpus import ACCEPT, HAND_TABLE
from tests.schemas.differential_strategies import (
    json_values,
    mutated_bytes,
    mutated_documents,
    valid_documents,
)
from tests.schemas.schema_oracle import schema_verdict

_settings = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _fields_sets(model: BaseModel) -> list[object]:
    """Every model's field set, depth first: what ``exclude_unset`` serialisation would see."""
    found: list[object] = [sorted(model.model_fields_set)]
    for name in type(model).model_fields:
        value = getattr(model, name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, BaseModel):
                found.extend(_fields_sets(item))
    return found


def _same_result(value: bytes, key: bytes | None = None) -> str:
    """The verdict of (b) and (c), after checking that they agree in every detail."""
    fast = decode_snapshot(value, key)
    reference = decode_snapshot_reference(value, key)
    if isinstance(reference, Rejection):
        assert isinstance(fast, Rejection), f"hot path accepted what the model refuses: {reference}"
        assert (fast.reason, fast.broker_id) == (reference.reason, reference.broker_id), (
            f"hot path: {fast}; model: {reference}"
        )
        return reference.reason.value
    assert isinstance(fast, VolumeSnapshot), f"hot path refused what the model accepts: {fast}"
    assert fast == reference
    assert _fields_sets(fast) == _fields_sets(reference)
    assert fast.to_json_bytes() == reference.to_json_bytes()
    assert fast.model_dump() == reference.model_dump()
    return ACCEPT


def _all_agree(value: bytes) -> str:
    verdict = _same_result(value)
    assert schema_verdict(value) == verdict, "the JSON Schema file disagrees with the decoders"
    return verdict


@pytest.mark.parametrize(
    ("value", "expected"),
    [pytest.param(value, expected, id=name) for name, value, expected in HAND_TABLE],
)
def test_hand_written_corpus_gets_the_contracts_verdict_from_all_three(
    value: bytes, expected: str
) -> None:
    assert _all_agree(value) == expected


@_settings
@given(document=valid_documents(), data=st.data())
def test_generated_valid_snapshots_are_accepted_alike(
    document: dict[str, object], data: st.DataObject
) -> None:
    value = json.dumps(document, ensure_ascii=data.draw(st.booleans())).encode()
    assert _all_agree(value) == ACCEPT
    decoded = decode_snapshot(value)
    assert isinstance(decoded, VolumeSnapshot)
    # What a consumer re-publishes (UTC, milliseconds) decodes to itself.
    again = decode_snapshot(decoded.to_json_bytes())
    assert isinstance(again, VolumeSnapshot)
    assert again.to_json_bytes() == decoded.to_json_bytes()


@_settings
@given(value=mutated_documents())
def test_one_broken_field_gets_the_same_verdict_from_all_three(value: bytes) -> None:
    _all_agree(value)


@_settings
@given(value=mutated_bytes())
def test_broken_text_gets_the_same_verdict_from_all_three(value: bytes) -> None:
    _all_agree(value)


@_settings
@given(
    document=st.fixed_dictionaries(
        {},
        optional=dict.fromkeys(
            ("schemaVersion", "brokerId", "snapshotAt", "softLimit", "hardLimit"), json_values
        )
        | {"volumes": st.lists(json_values, max_size=3)},
    )
)
def test_arbitrary_json_fields_get_the_same_verdict_from_all_three(
    document: dict[str, object],
) -> None:
    _all_agree(json.dumps(document).encode())


@_settings
@given(value=st.binary(max_size=256))
def test_arbitrary_bytes_get_the_same_verdict_from_all_three(value: bytes) -> None:
    _all_agree(value)


@_settings
@given(
    document=valid_documents(),
    key=st.none() | st.binary(max_size=12) | st.integers(0, 2**31).map(lambda n: str(n).encode()),
    broken=st.booleans(),
)
def test_hot_path_and_model_agree_on_keys(
    document: dict[str, object], key: bytes | None, broken: bool
) -> None:
    if broken:
        document["volumes"] = "broken"
    _same_result(json.dumps(document).encode(), key)
