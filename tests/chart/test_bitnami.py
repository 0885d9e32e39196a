"""The Bitnami Kafka chart example: deploy/bitnami/kafka-values.yaml puts into the Bitnami
brokers exactly what volume-quota renders in attach mode with
deploy/bitnami/volume-quota-values.yaml.

The Bitnami chart itself cannot be fetched here (its OCI registry is unreachable), so the values
file is checked for the keys of the chart version it names (bitnami/kafka 32.4.3) and against
volume-quota's own rendering, not rendered with the Bitnami chart.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.chart.chart_tools import (
    BITNAMI_KAFKA_VALUES,
    BITNAMI_VOLUME_QUOTA_VALUES,
    Manifest,
    attach_snippets,
    env_of,
    env_values,
    kinds,
    parse_properties,
    render,
)

# The Bitnami values this example sets, and the shape each has in that chart (lists of
# Kubernetes objects, or a properties string appended to server.properties).
BROKER_LIST_KEYS = (
    "sidecars",
    "initContainers",
    "extraVolumes",
    "extraVolumeMounts",
    "extraEnvVars",
)


@pytest.fixture(scope="module")
def bitnami() -> dict[str, Any]:
    values = yaml.safe_load(BITNAMI_KAFKA_VALUES.read_text())
    assert isinstance(values, dict)
    return values


@pytest.fixture(scope="module")
def attached() -> list[Manifest]:
    return render([BITNAMI_VOLUME_QUOTA_VALUES])


def test_the_values_file_names_the_bitnami_chart_version_it_targets() -> None:
    assert "bitnami/kafka 32.4.3" in BITNAMI_KAFKA_VALUES.read_text()
    assert "--version 32.4.3" in BITNAMI_KAFKA_VALUES.read_text()


def test_the_keys_have_the_shapes_the_bitnami_chart_expects(bitnami: dict[str, Any]) -> None:
    broker = bitnami["broker"]
    for key in BROKER_LIST_KEYS:
        assert isinstance(broker[key], list), key
        assert broker[key], key
        assert all(isinstance(item, dict) and "name" in item for item in broker[key]), key
    assert isinstance(broker["extraConfig"], str)
    assert isinstance(bitnami["extraConfig"], str)
    assert broker["minId"] == 100
    assert broker["persistence"]["mountPath"] == "/bitnami/kafka"
    assert bitnami["controller"]["controllerOnly"] is True


def test_the_brokers_get_what_volume_quota_renders(
    bitnami: dict[str, Any], attached: list[Manifest]
) -> None:
    snippets = attach_snippets(attached)
    broker = bitnami["broker"]
    assert broker["sidecars"] == [snippets["sidecar-container.yaml"]]
    assert broker["initContainers"] == [snippets["init-container.yaml"]]
    assert broker["extraVolumes"] == snippets["volumes.yaml"]
    assert broker["extraVolumeMounts"] == snippets["broker-mounts.yaml"]
    assert broker["extraEnvVars"] == [{"name": "CLASSPATH", "value": snippets["broker-classpath"]}]
    assert parse_properties(broker["extraConfig"]) == parse_properties(
        snippets["volume-quota.properties"]
    )


def test_the_sidecar_learns_its_id_from_meta_properties_in_the_bitnami_log_dir(
    bitnami: dict[str, Any],
) -> None:
    [sidecar] = bitnami["broker"]["sidecars"]
    assert "VOLUME_QUOTA_BROKER_ID" not in env_of(sidecar)  # Bitnami ids start at minId
    assert sidecar["command"] == ["volume-quota", "sidecar"]
    log_dirs = env_values(sidecar)["VOLUME_QUOTA_LOG_DIRS"].split(",")
    assert log_dirs == ["/bitnami/kafka/data"]  # where the Bitnami broker keeps meta.properties
    data_mount = next(m for m in sidecar["volumeMounts"] if m["name"] == "data")
    assert data_mount == {"name": "data", "mountPath": "/bitnami/kafka", "readOnly": True}
    assert all(log_dir.startswith(data_mount["mountPath"] + "/") for log_dir in log_dirs)


def test_every_volume_the_pod_mounts_is_declared(bitnami: dict[str, Any]) -> None:
    broker = bitnami["broker"]
    # "data" is the Bitnami chart's own PVC (broker.persistence).
    declared = {volume["name"] for volume in broker["extraVolumes"]} | {"data"}
    used = {
        mount["name"]
        for entry in (*broker["sidecars"], *broker["initContainers"])
        for mount in entry["volumeMounts"]
    } | {mount["name"] for mount in broker["extraVolumeMounts"]}
    assert used <= declared


def test_the_principals_agree_across_the_two_releases(
    bitnami: dict[str, Any], attached: list[Manifest]
) -> None:
    vq_values = yaml.safe_load(BITNAMI_VOLUME_QUOTA_VALUES.read_text())
    super_users = parse_properties(bitnami["extraConfig"])["super.users"].split(";")
    assert f"User:{vq_values['aclJob']['principal']}" in super_users
    excluded = parse_properties(bitnami["broker"]["extraConfig"])[
        "volume.quota.excluded.principals"
    ]
    assert excluded.split(";")[0] == f"User:{vq_values['sidecar']['principal']}"
    # The sidecar reaches the brokers where the Bitnami chart serves its client listener.
    [sidecar] = bitnami["broker"]["sidecars"]
    assert env_values(sidecar)["VOLUME_QUOTA_BOOTSTRAP_SERVERS"].startswith(
        "kafka-broker-headless."
    )
    assert kinds(attached).count("StatefulSet") == 0
