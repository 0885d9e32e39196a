"""The Kubernetes parts inside the Kafka resource: the volumes and mounts that Strimzi copies
into every broker pod (spec.kafka.template), checked against the Kubernetes schemas of a Volume
and a VolumeMount, which Strimzi's model (deploy/strimzi/validation) only types loosely.

The image volume of route 2 is a Kubernetes 1.31 feature: the 1.37 schemas accept it, the
1.28 schemas (the chart's minimum) do not know it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.chart.chart_tools import KUBERNETES_VERSIONS, kubernetes_schemas
from tests.strimzi.recipe import KAFKA, KAFKA_IMAGE_VOLUME, kafka_spec

NEWEST = KUBERNETES_VERSIONS[-1]
OLDEST = KUBERNETES_VERSIONS[0]


def schema_errors(definition: str, value: dict[str, Any], kube_version: str) -> list[str]:
    schemas = kubernetes_schemas(kube_version)
    schema = {
        "$ref": f"https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.api.core.v1.{definition}"
    }
    validator = jsonschema.Draft202012Validator(schema, registry=schemas.registry)
    return [f"{error.json_path}: {error.message[:200]}" for error in validator.iter_errors(value)]


def template(path: Path) -> dict[str, Any]:
    spec: dict[str, Any] = kafka_spec(path)["template"]
    return spec


@pytest.mark.parametrize("path", [KAFKA, KAFKA_IMAGE_VOLUME], ids=lambda path: path.name)
def test_the_broker_pod_volumes_and_mounts_are_valid_kubernetes(path: Path) -> None:
    for volume in template(path)["pod"]["volumes"]:
        assert schema_errors("Volume", volume, NEWEST) == [], volume["name"]
    for mount in template(path)["kafkaContainer"]["volumeMounts"]:
        assert schema_errors("VolumeMount", mount, NEWEST) == [], mount["name"]
    for variable in template(path)["kafkaContainer"].get("env", []):
        assert schema_errors("EnvVar", variable, NEWEST) == [], variable["name"]


def test_the_custom_image_route_needs_nothing_newer_than_the_oldest_schemas() -> None:
    for volume in template(KAFKA)["pod"]["volumes"]:
        assert schema_errors("Volume", volume, OLDEST) == [], volume["name"]


def test_the_image_volume_is_unknown_to_kubernetes_before_1_31() -> None:
    volumes = template(KAFKA_IMAGE_VOLUME)["pod"]["volumes"]
    (plugin,) = [volume for volume in volumes if "image" in volume]
    assert plugin["image"]["reference"]
    assert any("image" in error for error in schema_errors("Volume", plugin, OLDEST))


def test_a_misspelt_secret_field_in_a_broker_volume_is_caught() -> None:
    volume = dict(template(KAFKA)["pod"]["volumes"][0])
    volume["secret"] = {"secretNmae": volume["secret"]["secretName"]}
    assert any("secretNmae" in error for error in schema_errors("Volume", volume, NEWEST))
