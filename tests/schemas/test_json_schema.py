"""The committed JSON Schema files must be exactly what the models generate, and must agree."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import jsonschema
import pytest

from schemas.decision import DecisionReason, QuotaDecision, QuotaState, ReasonKind
from schemas.json_schema import SCHEMA_DIRECTORY, SCHEMA_FILES, render
from tests.snapshot_factory import make_snapshot, snapshot_document, volume


@pytest.mark.parametrize("file_name", sorted(SCHEMA_FILES))
def test_committed_schema_matches_the_model(file_name: str) -> None:
    committed = (SCHEMA_DIRECTORY / file_name).read_text()
    assert committed == render(SCHEMA_FILES[file_name], file_name), (
        f"{file_name} drifted from its model: run `python -m schemas` and commit the result"
    )


def _validator(file_name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMA_DIRECTORY / file_name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_published_snapshot_validates_against_the_schema_file() -> None:
    snapshot = make_snapshot(
        volumes=[
            volume("/dev/a", 100, 50, path="/data", hardLimit={"type": "MinFreeBytes", "level": 3})
        ]
    )
    _validator("volume-snapshot.schema.json").validate(json.loads(snapshot.to_json_bytes()))


def test_schema_file_refuses_what_the_model_refuses() -> None:
    document = snapshot_document()
    document["softLimit"] = {"type": "Bogus", "level": 1}
    errors = list(_validator("volume-snapshot.schema.json").iter_errors(document))
    assert errors


def test_decision_validates_against_the_schema_file() -> None:
    moment = datetime(2026, 11, 22, 12, tzinfo=UTC)
    decision = QuotaDecision(
        decided_at=moment,
        valid_until=moment,
        state=QuotaState.THROTTLE,
        throttle_factor=0.5,
        caused_by_missing_data=False,
        reasons=[
            DecisionReason(
                kind=ReasonKind.LIMIT,
                broker_id=1,
                state=QuotaState.THROTTLE,
                throttle_factor=0.5,
                volume_name="/dev/a",
                detail="x",
            )
        ],
    )
    _validator("quota-decision.schema.json").validate(json.loads(decision.to_json_bytes()))
