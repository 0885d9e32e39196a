"""The sidecar container: its environment (the contract with `volume-quota sidecar`), volumes,
probes, resources and security context."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.chart.chart_tools import (
    PRODUCTION_VALUES,
    RELEASE,
    Manifest,
    container,
    env_of,
    env_values,
    mounts,
    pod_spec,
    render,
)

CONTRACT = {
    "VOLUME_QUOTA_BROKER_ID",
    "VOLUME_QUOTA_LOG_DIRS",
    "VOLUME_QUOTA_BOOTSTRAP_SERVERS",
    "VOLUME_QUOTA_TLS_CA_FILE",
    "VOLUME_QUOTA_TLS_CERT_FILE",
    "VOLUME_QUOTA_TLS_KEY_FILE",
    "VOLUME_QUOTA_TOPIC",
    "VOLUME_QUOTA_CONSUMER_GROUP",
    "VOLUME_QUOTA_SOFT_LIMIT",
    "VOLUME_QUOTA_HARD_LIMIT",
    "VOLUME_QUOTA_DECISION_FILE",
    "VOLUME_QUOTA_STALE_AFTER",
    "VOLUME_QUOTA_ON_MISSING",
    "VOLUME_QUOTA_METRICS_PORT",
    "VOLUME_QUOTA_LOG_LEVEL",
}
POD_DOMAIN = f"{RELEASE}-volume-quota-headless.kafka.svc.cluster.local"


def _sidecar(manifests: list[Manifest]) -> Manifest:
    return container(pod_spec(manifests), "volume-quota")


def test_the_sidecar_runs_the_sidecar_command_with_every_contract_variable(
    default_manifests: list[Manifest],
) -> None:
    sidecar = _sidecar(default_manifests)
    assert sidecar["command"] == ["volume-quota", "sidecar"]
    assert sidecar["image"] == "volume-quota:0.1.0"
    assert set(env_of(sidecar)) >= CONTRACT


def test_the_default_values_reach_the_sidecar(default_manifests: list[Manifest]) -> None:
    env = env_values(_sidecar(default_manifests))
    assert env["VOLUME_QUOTA_TOPIC"] == "__volume_quota_snapshots"
    assert env["VOLUME_QUOTA_SOFT_LIMIT"] == "MinFreePercentage:15"
    assert env["VOLUME_QUOTA_HARD_LIMIT"] == "MinFreePercentage:5"
    assert env["VOLUME_QUOTA_STALE_AFTER"] == "30s"
    assert env["VOLUME_QUOTA_ON_MISSING"] == "PAUSE"
    assert env["VOLUME_QUOTA_METRICS_PORT"] == "9464"
    assert env["VOLUME_QUOTA_LOG_LEVEL"] == "info"
    assert env["VOLUME_QUOTA_DECISION_FILE"] == "/var/run/volume-quota/decision.json"
    assert env["VOLUME_QUOTA_LOG_DIRS"] == "/var/lib/kafka/data-0,/var/lib/kafka/metadata"
    assert env["VOLUME_QUOTA_BOOTSTRAP_SERVERS"] == ",".join(
        f"{RELEASE}-volume-quota-{ordinal}.{POD_DOMAIN}:9092" for ordinal in range(3)
    )
    assert env["VOLUME_QUOTA_TLS_CA_FILE"] == "/etc/volume-quota/tls/ca.crt"
    assert env["VOLUME_QUOTA_TLS_CERT_FILE"] == "/etc/volume-quota/tls/tls.crt"
    assert env["VOLUME_QUOTA_TLS_KEY_FILE"] == "/etc/volume-quota/tls/tls.key"


def test_the_production_values_reach_the_sidecar(production_manifests: list[Manifest]) -> None:
    values = yaml.safe_load(PRODUCTION_VALUES.read_text())["sidecar"]
    sidecar = _sidecar(production_manifests)
    env = env_values(sidecar)
    assert env["VOLUME_QUOTA_SOFT_LIMIT"] == values["softLimit"] == "MinFreePercentage:20"
    assert env["VOLUME_QUOTA_HARD_LIMIT"] == values["hardLimit"] == "MinFreeBytes:50GiB"
    assert env["VOLUME_QUOTA_STALE_AFTER"] == values["staleAfter"] == "60s"
    assert env["VOLUME_QUOTA_HEARTBEAT_INTERVAL"] == "10s"  # extraEnv
    assert env["VOLUME_QUOTA_LOG_DIRS"] == (
        "/var/lib/kafka/data-0,/var/lib/kafka/data-1,/var/lib/kafka/metadata"
    )
    assert len(env["VOLUME_QUOTA_BOOTSTRAP_SERVERS"].split(",")) == 5
    assert sidecar["image"] == "registry.example.com/platform/volume-quota:0.1.0"
    tls_volume = next(
        v for v in pod_spec(production_manifests)["volumes"] if v["name"] == "sidecar-tls"
    )
    # One certificate per broker from csi-driver, signed by docs/kubernetes.md's Issuer, and
    # each broker's snapshots count only when signed by its own.
    attributes = tls_volume["csi"]["volumeAttributes"]
    assert attributes["csi.cert-manager.io/issuer-name"] == "kafka-ca"
    assert attributes["csi.cert-manager.io/common-name"] == values["principal"]
    assert env["VOLUME_QUOTA_SNAPSHOT_SIGNATURES"] == values["snapshotSignatures"] == "require"


def test_every_value_can_be_set() -> None:
    settings = {
        "sidecar.topic": "vq.snapshots",
        "sidecar.softLimit": "MinFreeBytes:100GiB",
        "sidecar.hardLimit": "MinFreeBytes:10GiB",
        "sidecar.staleAfter": "45s",
        "sidecar.onMissing": "OPEN",
        "sidecar.metricsPort": "9999",
        "sidecar.logLevel": "debug",
        "sidecar.bootstrapServers": "kafka-bootstrap:9093",
        "sidecar.tls.certKey": "user.crt",
        "sidecar.tls.keyKey": "user.key",
    }
    sidecar = _sidecar(render(settings=settings))
    env = env_values(sidecar)
    assert env["VOLUME_QUOTA_TOPIC"] == "vq.snapshots"
    assert env["VOLUME_QUOTA_SOFT_LIMIT"] == "MinFreeBytes:100GiB"
    assert env["VOLUME_QUOTA_HARD_LIMIT"] == "MinFreeBytes:10GiB"
    assert env["VOLUME_QUOTA_STALE_AFTER"] == "45s"
    assert env["VOLUME_QUOTA_ON_MISSING"] == "OPEN"
    assert env["VOLUME_QUOTA_METRICS_PORT"] == "9999"
    assert env["VOLUME_QUOTA_LOG_LEVEL"] == "debug"
    assert env["VOLUME_QUOTA_BOOTSTRAP_SERVERS"] == "kafka-bootstrap:9093"
    assert env["VOLUME_QUOTA_TLS_CERT_FILE"] == "/etc/volume-quota/tls/user.crt"
    assert env["VOLUME_QUOTA_TLS_KEY_FILE"] == "/etc/volume-quota/tls/user.key"
    assert sidecar["ports"] == [{"name": "metrics", "containerPort": 9999}]


def test_the_broker_id_is_the_pod_index_label_like_the_brokers_node_id(
    default_manifests: list[Manifest],
) -> None:
    spec = pod_spec(default_manifests)
    pod_index = {"fieldRef": {"fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}}
    assert env_of(_sidecar(default_manifests))["VOLUME_QUOTA_BROKER_ID"]["valueFrom"] == pod_index
    assert env_of(container(spec, "kafka"))["KAFKA_NODE_ID"]["valueFrom"] == pod_index


def test_the_hostname_broker_id_source_uses_a_shell_wrapper() -> None:
    sidecar = _sidecar(render(settings={"sidecar.brokerIdSource": "hostname"}))
    assert "VOLUME_QUOTA_BROKER_ID" not in env_of(sidecar)
    assert sidecar["command"] == [
        "/bin/sh",
        "-c",
        'VOLUME_QUOTA_BROKER_ID="${HOSTNAME##*-}" exec volume-quota sidecar',
    ]


def test_the_sidecar_sees_every_broker_volume_read_only(
    production_manifests: list[Manifest],
) -> None:
    spec = pod_spec(production_manifests)
    sidecar, kafka = _sidecar(production_manifests), container(spec, "kafka")
    log_dirs = env_values(sidecar)["VOLUME_QUOTA_LOG_DIRS"].split(",")
    sidecar_mounts, kafka_mounts = mounts(sidecar), mounts(kafka)
    for log_dir in log_dirs:
        assert sidecar_mounts[log_dir]["readOnly"] is True
        assert sidecar_mounts[log_dir]["name"] == kafka_mounts[log_dir]["name"]
        assert "readOnly" not in kafka_mounts[log_dir]
    claims = {
        claim["metadata"]["name"]
        for claim in next(m for m in production_manifests if m["kind"] == "StatefulSet")["spec"][
            "volumeClaimTemplates"
        ]
    }
    assert {sidecar_mounts[log_dir]["name"] for log_dir in log_dirs} == claims


def test_the_certificate_files_come_from_a_whole_secret_mount_so_they_rotate_in_place(
    default_manifests: list[Manifest],
) -> None:
    sidecar = _sidecar(default_manifests)
    env = env_values(sidecar)
    tls_dir = "/etc/volume-quota/tls"
    mount = mounts(sidecar)[tls_dir]
    assert "subPath" not in mount  # a subPath mount is never updated when the Secret changes
    for variable in (
        "VOLUME_QUOTA_TLS_CA_FILE",
        "VOLUME_QUOTA_TLS_CERT_FILE",
        "VOLUME_QUOTA_TLS_KEY_FILE",
    ):
        assert Path(env[variable]).parent == Path(tls_dir)
    volume = next(v for v in pod_spec(default_manifests)["volumes"] if v["name"] == mount["name"])
    # csi-driver renews the pod's certificate in place, under the file names the env gives.
    attributes = volume["csi"]["volumeAttributes"]
    assert {
        attributes["csi.cert-manager.io/ca-file"],
        attributes["csi.cert-manager.io/certificate-file"],
        attributes["csi.cert-manager.io/privatekey-file"],
    } == {
        Path(env[variable]).name
        for variable in (
            "VOLUME_QUOTA_TLS_CA_FILE",
            "VOLUME_QUOTA_TLS_CERT_FILE",
            "VOLUME_QUOTA_TLS_KEY_FILE",
        )
    }
    shared = pod_spec(
        render(
            settings={
                "sidecar.tls.perBroker.enabled": "false",
                "sidecar.snapshotSignatures": "warn",
            }
        )
    )
    volume = next(v for v in shared["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == f"{RELEASE}-volume-quota-sidecar-tls"


def test_the_sidecar_is_probed_for_liveness_only(default_manifests: list[Manifest]) -> None:
    sidecar = _sidecar(default_manifests)
    assert sidecar["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert sidecar["ports"] == [{"name": "metrics", "containerPort": 9464}]
    # Readiness would make a sidecar that cannot reach Kafka hold its broker unready, and the
    # PodDisruptionBudget would then block every node drain.
    assert "readinessProbe" not in sidecar
    assert "startupProbe" not in sidecar


def test_resources_are_small(default_manifests: list[Manifest]) -> None:
    resources = _sidecar(default_manifests)["resources"]
    assert resources["requests"] == {"cpu": "50m", "memory": "64Mi"}
    assert resources["limits"] == {"cpu": "500m", "memory": "256Mi"}


def test_no_sidecar_when_disabled() -> None:
    manifests = render(settings={"sidecar.enabled": "false", "quota.enabled": "false"})
    names = [entry["name"] for entry in pod_spec(manifests)["containers"]]
    assert names == ["kafka"]
    assert not any(m["kind"] == "Job" for m in manifests)
