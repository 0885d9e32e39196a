"""The Strimzi recipe's files (deploy/strimzi/), parsed, for the tests of this folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import yaml

from tests.chart.chart_tools import REPO, Manifest

RECIPE = REPO / "deploy" / "strimzi"
AGENT = RECIPE / "agent-deployment.yaml"
KAFKA = RECIPE / "kafka.yaml"
KAFKA_IMAGE_VOLUME = RECIPE / "kafka-image-volume.yaml"
USERS = RECIPE / "user.yaml"
TOPICS = RECIPE / "topics.yaml"
IMAGE_DOCKERFILE = REPO / "deploy" / "container" / "Dockerfile"


def documents(path: Path) -> list[Manifest]:
    loaded = yaml.safe_load_all(path.read_text())
    return [cast(Manifest, document) for document in loaded if document]


def one(manifests: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    matches = [
        manifest
        for manifest in manifests
        if manifest["kind"] == kind and (name is None or manifest["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def agent_container() -> Manifest:
    deployment = one(documents(AGENT), "Deployment")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return cast(Manifest, containers[0])


def agent_env() -> dict[str, str]:
    return {entry["name"]: entry["value"] for entry in agent_container()["env"]}


def kafka_spec(path: Path = KAFKA) -> dict[str, Any]:
    return cast(dict[str, Any], one(documents(path), "Kafka")["spec"]["kafka"])
