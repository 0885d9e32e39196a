"""The cluster agent's Deployment, Service and PodDisruptionBudget (deploy/strimzi/).

Validated against the strict Kubernetes JSON schemas (unknown fields are errors) with the chart
tests' helper, for the oldest and newest Kubernetes the chart tests use; then checked against
what `volume-quota cluster-agent` reads (its settings model), the image (uid 10001) and the
Strimzi resources it depends on (KafkaUser, cluster CA Secret, the tls listener).
"""

from __future__ import annotations

import copy
import os
import re

import pytest

from tests.chart.chart_tools import KUBERNETES_VERSIONS, kubernetes_schemas, validation_errors
from tests.strimzi.recipe import (
    AGENT,
    IMAGE_DOCKERFILE,
    USERS,
    agent_container,
    agent_env,
    documents,
    kafka_spec,
    one,
)
from volume_quota.config.commands import AGENT_ONLY_LOCAL, ClusterAgentSettings

ENV_PREFIX = "VOLUME_QUOTA_"


@pytest.mark.parametrize("kube_version", KUBERNETES_VERSIONS)
def test_every_manifest_is_a_valid_kubernetes_object(kube_version: str) -> None:
    manifests = documents(AGENT)
    assert sorted(m["kind"] for m in manifests) == ["Deployment", "PodDisruptionBudget", "Service"]
    assert validation_errors(manifests, kube_version) == {}


def test_the_schemas_reject_a_misspelt_field_in_the_agent_deployment() -> None:
    schemas = kubernetes_schemas(KUBERNETES_VERSIONS[-1])
    deployment = one(documents(AGENT), "Deployment")
    misspelt = copy.deepcopy(deployment)
    misspelt["spec"]["template"]["spec"]["containers"][0]["securityContext"][
        "readOnlyRootFilesytem"
    ] = True
    assert any("readOnlyRootFilesytem" in error for error in schemas.errors(misspelt))


def test_every_variable_is_a_cluster_agent_setting() -> None:
    fields = set(ClusterAgentSettings.model_fields) - AGENT_ONLY_LOCAL
    names = {name.removeprefix(ENV_PREFIX).lower() for name in agent_env()}
    assert all(name.startswith(ENV_PREFIX) for name in agent_env())
    assert names - fields == set()


def test_the_settings_model_accepts_the_values(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    for name, value in agent_env().items():
        monkeypatch.setenv(name, value)
    settings = ClusterAgentSettings(source="admin")
    assert settings.survey_interval == 5.0
    assert settings.stale_after == 30.0
    assert settings.on_missing == "PAUSE"
    assert settings.metrics_port == 9464
    assert settings.topic == "__volume_quota_snapshots"
    assert settings.decisions_topic == "__volume_quota_decisions"
    assert settings.override_topic == "__volume_quota_overrides"
    assert settings.consumer_group == "volume-quota-consumer"
    assert settings.tls_verify_hostname is True
    assert str(settings.soft_limit.type.value) == "MinFreePercentage"
    assert settings.soft_limit.level == 15
    assert settings.hard_limit.level == 25 * 1024**3
    # No per-volume limit: those name a node id, which Strimzi chooses.
    assert settings.volume_limits == []


def test_it_runs_the_cluster_agent_as_the_images_user_on_a_read_only_root() -> None:
    deployment = one(documents(AGENT), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = agent_container()
    assert container["command"] == ["volume-quota", "cluster-agent"]
    uid = re.search(r"useradd --uid (\d+)", IMAGE_DOCKERFILE.read_text())
    assert uid is not None
    assert pod["securityContext"]["runAsUser"] == int(uid[1]) == 10001
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    # Two agents measure and decide alike; one keeps decisions flowing while the other restarts.
    assert deployment["spec"]["replicas"] == 2
    budget = one(documents(AGENT), "PodDisruptionBudget")
    assert budget["spec"]["maxUnavailable"] == 1


def test_the_probes_and_the_service_use_the_metrics_port() -> None:
    container = agent_container()
    assert container["ports"] == [{"name": "metrics", "containerPort": 9464, "protocol": "TCP"}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    deployment = one(documents(AGENT), "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    for kind in ("Service", "PodDisruptionBudget"):
        selecting = one(documents(AGENT), kind)
        selector = selecting["spec"]["selector"]
        selector = selector.get("matchLabels", selector)
        assert selector.items() <= pod_labels.items()
    assert deployment["spec"]["selector"]["matchLabels"] == pod_labels
    service = one(documents(AGENT), "Service")
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"


def test_the_certificate_files_come_from_the_kafkauser_and_the_cluster_ca_secrets() -> None:
    pod = one(documents(AGENT), "Deployment")["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]
    files: dict[str, tuple[str, str]] = {}
    for mount in agent_container()["volumeMounts"]:
        assert mount["readOnly"] is True
        secret = volumes[mount["name"]].get("secret")
        if secret is None:
            continue
        # YAML's 0440: read for the owner (root) and the pod's fsGroup, the agent's group.
        assert secret["defaultMode"] == 0o440
        for item in secret["items"]:
            files[f"{mount['mountPath']}/{item['path']}"] = (secret["secretName"], item["key"])
    env = agent_env()
    agent_user = one(documents(USERS), "KafkaUser", "volume-quota-agent")
    assert files[env["VOLUME_QUOTA_TLS_CERT_FILE"]] == (agent_user["metadata"]["name"], "user.crt")
    assert files[env["VOLUME_QUOTA_TLS_KEY_FILE"]] == (agent_user["metadata"]["name"], "user.key")
    # The brokers' CA (every certificate of the cluster CA Secret, bundled by ca-bundle), not
    # the clients CA that the user Secret's ca.crt holds: test_agent_trust_and_limits.py.
    cluster_ca = volumes["cluster-ca"]["secret"]
    assert cluster_ca["secretName"] == "my-cluster-cluster-ca-cert"
    assert cluster_ca["defaultMode"] == 0o440


def test_the_agent_connects_to_the_tls_listener_with_client_certificates() -> None:
    host, _, port = agent_env()["VOLUME_QUOTA_BOOTSTRAP_SERVERS"].rpartition(":")
    assert host.startswith("my-cluster-kafka-bootstrap")
    listeners = {listener["port"]: listener for listener in kafka_spec()["listeners"]}
    listener = listeners[int(port)]
    assert listener["tls"] is True
    assert listener["authentication"] == {"type": "tls"}
    # Its principal is excluded from the quota: it must publish while producers are paused.
    excluded = kafka_spec()["config"]["volume.quota.excluded.principals"].split(";")
    assert "User:CN=volume-quota-agent" in excluded
