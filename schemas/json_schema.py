"""Generating the JSON Schema files from the models, so the files can never be hand-edited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from schemas.decision import QuotaDecision
from schemas.override import QuotaOverride
from schemas.snapshot import VolumeSnapshot
from schemas.usage import TopicUsageDocument

SCHEMA_DIRECTORY = Path(__file__).resolve().parent

SCHEMA_FILES: dict[str, type[BaseModel]] = {
    "volume-snapshot.schema.json": VolumeSnapshot,
    "quota-decision.schema.json": QuotaDecision,
    "quota-override.schema.json": QuotaOverride,
    "topic-usage.schema.json": TopicUsageDocument,
}


def json_schema_for(model: type[BaseModel], file_name: str) -> dict[str, Any]:
    """The 2020-12 JSON Schema of ``model`` as it appears on the wire (by alias, as validated)."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": file_name,
        **schema,
    }


def render(model: type[BaseModel], file_name: str) -> str:
    return json.dumps(json_schema_for(model, file_name), indent=2, sort_keys=True) + "\n"


def write_all(directory: Path = SCHEMA_DIRECTORY) -> list[Path]:
    written = []
    for file_name, model in SCHEMA_FILES.items():
        path = directory / file_name
        path.write_text(render(model, file_name))
        written.append(path)
    return written
