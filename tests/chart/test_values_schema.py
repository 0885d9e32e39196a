"""values.schema.json and the chart's own checks refuse bad values, with helm's clear error."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml

from tests.chart.chart_tools import CHART, PRODUCTION_VALUES, HelmError, render_text


def _refusal(settings: dict[str, str]) -> str:
    with pytest.raises(HelmError) as refused:
        render_text(settings=settings)
    return str(refused.value)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"quota.onMissing": "MAYBE"},
            "at '/quota/onMissing': value must be one of 'PAUSE', 'OPEN'",
        ),
        ({"sidecar.onMissing": "MAYBE"}, "at '/sidecar/onMissing': value must be one of"),
        ({"replicas": "-1"}, "at '/replicas': minimum: got -1, want 1"),
        ({"replicas": "0"}, "at '/replicas': minimum: got 0, want 1"),
        ({"sidecar.softLimit": "MinFreePercentage:150"}, "at '/sidecar/softLimit'"),
        ({"sidecar.hardLimit": "FreeSpace:5GiB"}, "at '/sidecar/hardLimit'"),
        ({"sidecar.staleAfter": "soon"}, "at '/sidecar/staleAfter'"),
        ({"sidecar.metricsPort": "70000"}, "at '/sidecar/metricsPort'"),
        ({"sidecar.logLevel": "verbose"}, "at '/sidecar/logLevel'"),
        ({"sidecar.brokerIdSource": "random"}, "at '/sidecar/brokerIdSource'"),
        ({"sidecar.principal": "User:sidecar"}, "at '/sidecar/principal'"),
        ({"quota.excludedPrincipals": "{ops}"}, "at '/quota/excludedPrincipals/0'"),
        ({"quota.produceBaseBytesPerSecond": "0"}, "at '/quota/produceBaseBytesPerSecond'"),
        ({"quota.maxStepDownRatio": "1"}, "at '/quota/maxStepDownRatio'"),
        ({"kafka.clusterId": "not-a-cluster-id"}, "at '/kafka/clusterId'"),
        ({"kafka.config.num\\.partitions": "6"}, "at '/kafka/config/num.partitions'"),
        ({"kafka.storage.data": "null"}, "at '/kafka/storage': missing property 'data'"),
        ({"kafka.storage.data[0].size": "lots"}, "at '/kafka/storage/data/0/size'"),
        ({"kafka.replicas": "3"}, "at '/kafka': additional properties 'replicas' not allowed"),
        ({"serviceMonitor.enable": "true"}, "additional properties 'enable' not allowed"),
    ],
)
def test_the_schema_refuses_bad_values(settings: dict[str, str], expected: str) -> None:
    message = _refusal(settings)
    assert "values don't meet the specifications of the schema(s)" in message
    assert expected in message


def test_a_quota_without_a_sidecar_is_refused() -> None:
    message = _refusal({"sidecar.enabled": "false"})
    assert "quota.enabled=true needs sidecar.enabled=true" in message


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"aclJob.principal": "admin"},
            "the ACL Job runs as User:admin (aclJob.principal), which is not a super user",
        ),
        (
            {"aclJob.tls.secretName": "ops-tls"},
            "aclJob.tls.secretName is set: set aclJob.principal to the CN",
        ),
        (
            {"sidecar.brokerIdOffset": "100"},
            "sidecar.brokerIdOffset must be 0 with kafka.enabled=true",
        ),
        (
            {"sidecar.brokerIdSource": "metaProperties"},
            "sidecar.brokerIdSource=metaProperties is for attach mode",
        ),
        (
            {"kafka.enabled": "false"},
            "attach mode) needs attach.volumes",
        ),
        (
            {
                "kafka.enabled": "false",
                "attach.volumes[0].name": "data",
                "attach.volumes[0].mountPath": "/data",
                "aclJob.enabled": "false",
            },
            "attach mode) needs sidecar.bootstrapServers",
        ),
        (
            {
                "kafka.enabled": "false",
                "attach.volumes[0].name": "data",
                "attach.volumes[0].mountPath": "/data",
                "sidecar.bootstrapServers": "kafka:9092",
            },
            "with aclJob.enabled needs aclJob.tls.secretName and aclJob.principal",
        ),
        (
            {
                "kafka.enabled": "false",
                "attach.volumes[0].name": "data",
                "attach.volumes[0].mountPath": "/data",
                "sidecar.bootstrapServers": "kafka:9092",
                "aclJob.enabled": "false",
            },
            "attach mode) needs attach.podSelector",
        ),
    ],
)
def test_the_chart_refuses_values_that_cannot_work(settings: dict[str, str], expected: str) -> None:
    assert expected in _refusal(settings)


def test_the_production_acl_principal_is_a_super_user() -> None:
    production = yaml.safe_load(PRODUCTION_VALUES.read_text())
    assert f"User:{production['aclJob']['principal']}" in production["kafka"]["superUsers"]


def test_a_pause_floor_above_the_base_is_refused() -> None:
    message = _refusal({"quota.pauseBytesPerSecond": "20971520"})
    assert "quota.pauseBytesPerSecond (20971520) must not exceed" in message


@pytest.mark.parametrize(
    "ceiling", ["pausePrincipalMaxBytesPerSecond", "pauseBrokerMaxBytesPerSecond"]
)
def test_a_pause_ceiling_below_the_floor_is_refused(ceiling: str) -> None:
    message = _refusal({f"quota.{ceiling}": "131072"})
    assert f"quota.{ceiling} (131072) must not be below quota.pauseBytesPerSecond" in message


def test_the_schema_is_valid_and_accepts_the_shipped_values() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    validator.validate(defaults)
    production = yaml.safe_load(PRODUCTION_VALUES.read_text())
    validator.validate(_merged(defaults, production))


def _merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of a values file over the defaults: maps merge, the rest replaces."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merged[key] = _merged(base[key], value)
        else:
            merged[key] = value
    return merged


def test_every_default_value_is_described_by_the_schema() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())

    def walk(values: dict[str, object], node: dict[str, object], path: str) -> None:
        properties = node.get("properties")
        assert isinstance(properties, dict), f"{path or '/'} has no properties in the schema"
        for key, value in values.items():
            assert key in properties, f"{path}/{key} is not in values.schema.json"
            child = properties[key]
            if isinstance(value, dict) and isinstance(child, dict) and "properties" in child:
                walk(value, child, f"{path}/{key}")

    walk(defaults, schema, "")
