"""The Kafka side: server.properties, the quota callback on the classpath, the decision file the
two containers share, the quorum, the services and the ACL Job."""

from __future__ import annotations

import pytest
import yaml

from tests.chart.chart_tools import (
    PRODUCTION_VALUES,
    RELEASE,
    Manifest,
    container,
    env_values,
    find,
    mounts,
    pod_spec,
    render,
    server_properties,
)

CALLBACK = "io.volumequota.broker.VolumeQuotaCallback"
FULLNAME = f"{RELEASE}-volume-quota"
POD_DOMAIN = f"{FULLNAME}-headless.kafka.svc.cluster.local"


def test_the_broker_loads_the_volume_quota_callback(default_manifests: list[Manifest]) -> None:
    properties = server_properties(default_manifests)
    assert properties["client.quota.callback.class"] == CALLBACK
    assert properties["volume.quota.decision.path"] == "/var/run/volume-quota/decision.json"
    assert properties["volume.quota.produce.base.bytes.per.second"] == "10485760"
    assert properties["volume.quota.pause.bytes.per.second"] == "262144"
    assert properties["volume.quota.pause.principal.max.bytes.per.second"] == "2097152"
    assert properties["volume.quota.pause.broker.max.bytes.per.second"] == "8388608"
    assert properties["volume.quota.max.step.down.ratio"] == "2"
    assert properties["volume.quota.reload.interval.ms"] == "250"
    assert properties["volume.quota.on.missing"] == "PAUSE"


def test_the_sidecar_principal_and_the_operators_are_never_throttled(
    production_manifests: list[Manifest],
) -> None:
    excluded = server_properties(production_manifests)["volume.quota.excluded.principals"]
    assert excluded.split(";") == [
        "User:volume-quota-sidecar",
        "User:kafka-admin",
        "User:cruise-control",
    ]


def test_the_excluded_principals_follow_the_sidecar_principal() -> None:
    manifests = render(
        settings={"sidecar.principal": "vq-sidecar", "quota.excludedPrincipals": "{User:ops}"}
    )
    excluded = server_properties(manifests)["volume.quota.excluded.principals"]
    assert excluded == "User:vq-sidecar;User:ops"


def test_the_broker_reads_the_file_the_sidecar_writes(default_manifests: list[Manifest]) -> None:
    spec = pod_spec(default_manifests)
    kafka, sidecar = container(spec, "kafka"), container(spec, "volume-quota")
    decision_file = server_properties(default_manifests)["volume.quota.decision.path"]
    assert env_values(sidecar)["VOLUME_QUOTA_DECISION_FILE"] == decision_file
    directory = decision_file.rsplit("/", 1)[0]
    kafka_mount, sidecar_mount = mounts(kafka)[directory], mounts(sidecar)[directory]
    assert kafka_mount["name"] == sidecar_mount["name"] == "decision"
    assert kafka_mount["readOnly"] is True
    assert "readOnly" not in sidecar_mount
    volume = next(v for v in spec["volumes"] if v["name"] == "decision")
    assert "emptyDir" in volume


def test_the_plugin_jar_is_copied_onto_the_brokers_classpath(
    default_manifests: list[Manifest],
) -> None:
    spec = pod_spec(default_manifests)
    init = container(spec, "install-broker-plugin", init=True)
    kafka = container(spec, "kafka")
    source, target = init["command"][1:]
    assert init["command"][0] == "cp"
    assert source == "/opt/volume-quota/volume-quota-broker-plugin.jar"
    assert init["image"] == container(spec, "volume-quota")["image"]
    classpath = env_values(kafka)["CLASSPATH"]
    assert classpath == target
    plugin_dir = target.rsplit("/", 1)[0]
    assert mounts(init)[plugin_dir]["name"] == mounts(kafka)[plugin_dir]["name"]
    assert mounts(kafka)[plugin_dir]["readOnly"] is True


def test_without_the_quota_nothing_of_the_callback_is_left() -> None:
    manifests = render(settings={"quota.enabled": "false"})
    properties = server_properties(manifests)
    assert not any(key.startswith(("volume.quota.", "client.quota.")) for key in properties)
    spec = pod_spec(manifests)
    assert "initContainers" not in spec
    assert "CLASSPATH" not in env_values(container(spec, "kafka"))
    # The sidecar still publishes (the first step of a rollout onto a running cluster).
    assert [entry["name"] for entry in spec["containers"]] == ["kafka", "volume-quota"]


def test_every_listener_requires_a_client_certificate(default_manifests: list[Manifest]) -> None:
    properties = server_properties(default_manifests)
    assert properties["listener.security.protocol.map"] == (
        "CLIENT:SSL,INTERNAL:SSL,CONTROLLER:SSL"
    )
    assert properties["ssl.client.auth"] == "required"
    assert properties["ssl.principal.mapping.rules"] == "RULE:^CN=([^,]+)(,.*)?$/$1/,DEFAULT"
    assert properties["authorizer.class.name"] == (
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    )
    assert properties["allow.everyone.if.no.acl.found"] == "false"
    assert properties["super.users"] == "User:kafka-broker;User:kafka-admin"
    assert properties["ssl.truststore.location"] == "/etc/kafka/tls/ca.crt"


@pytest.mark.parametrize("replicas", [1, 3, 5])
def test_replicas_set_the_statefulset_the_quorum_and_the_replication(replicas: int) -> None:
    manifests = render(settings={"replicas": str(replicas)})
    assert find(manifests, "StatefulSet")["spec"]["replicas"] == replicas
    properties = server_properties(manifests)
    assert properties["controller.quorum.voters"].split(",") == [
        f"{ordinal}@{FULLNAME}-{ordinal}.{POD_DOMAIN}:9093" for ordinal in range(replicas)
    ]
    assert properties["default.replication.factor"] == str(min(3, replicas))
    assert properties["min.insync.replicas"] == str(min(2, replicas))
    sidecar = container(pod_spec(manifests), "volume-quota")
    assert len(env_values(sidecar)["VOLUME_QUOTA_BOOTSTRAP_SERVERS"].split(",")) == replicas


def test_a_pod_template_change_follows_a_config_change(default_manifests: list[Manifest]) -> None:
    changed = render(settings={"quota.produceBaseBytesPerSecond": "20971520"})
    annotation = "checksum/config"

    def checksum(manifests: list[Manifest]) -> str:
        template = find(manifests, "StatefulSet")["spec"]["template"]
        return str(template["metadata"]["annotations"][annotation])

    assert checksum(changed) != checksum(default_manifests)


def test_storage_volumes_and_log_dirs(production_manifests: list[Manifest]) -> None:
    statefulset = find(production_manifests, "StatefulSet")
    claims = {
        claim["metadata"]["name"]: claim["spec"]
        for claim in statefulset["spec"]["volumeClaimTemplates"]
    }
    assert claims["data-0"]["resources"]["requests"]["storage"] == "500Gi"
    assert claims["data-1"]["storageClassName"] == "fast-ssd"
    assert claims["metadata"]["resources"]["requests"]["storage"] == "5Gi"
    properties = server_properties(production_manifests)
    assert properties["log.dirs"] == "/var/lib/kafka/data-0/logs,/var/lib/kafka/data-1/logs"
    assert properties["metadata.log.dir"] == "/var/lib/kafka/metadata/logs"
    # kafka.config comes last, so it overrides the chart's defaults.
    assert properties["log.retention.hours"] == "72"


def test_the_services_and_the_disruption_budget(default_manifests: list[Manifest]) -> None:
    headless = find(default_manifests, "Service", f"{FULLNAME}-headless")
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    statefulset = find(default_manifests, "StatefulSet")
    assert statefulset["spec"]["serviceName"] == headless["metadata"]["name"]
    assert statefulset["spec"]["podManagementPolicy"] == "Parallel"
    pod_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    for service in (headless, find(default_manifests, "Service", FULLNAME)):
        assert service["spec"]["selector"].items() <= pod_labels.items()
    budget = find(default_manifests, "PodDisruptionBudget")
    assert budget["spec"]["maxUnavailable"] == 1
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_the_acl_job_grants_the_sidecar_principal_on_the_topic(
    production_manifests: list[Manifest],
) -> None:
    job = find(production_manifests, "Job")
    assert job["metadata"]["name"] == f"{FULLNAME}-acls-1"
    assert "helm.sh/hook" not in job["metadata"].get("annotations", {})
    spec = job["spec"]["template"]["spec"]
    env = env_values(container(spec, "grant-acls"))
    assert env["SIDECAR_PRINCIPAL"] == "volume-quota-sidecar"
    assert env["TOPIC"] == "__volume_quota_snapshots"
    sidecar = container(pod_spec(production_manifests), "volume-quota")
    assert env["BOOTSTRAP_SERVERS"] == env_values(sidecar)["VOLUME_QUOTA_BOOTSTRAP_SERVERS"]
    secret = next(v for v in spec["volumes"] if v["name"] == "admin-tls")["secret"]
    assert secret["secretName"] == "kafka-admin-tls"
    script = find(production_manifests, "ConfigMap", f"{FULLNAME}-acls")["data"]["grant-acls.sh"]
    for operation in ("Create", "Write", "Read", "Describe", "DescribeConfigs"):
        assert f"--operation {operation} " in script or f"--operation {operation}\n" in script
    assert '--allow-principal "User:$SIDECAR_PRINCIPAL"' in script
    # The configs of every topic, for the tiered topics' upload backlogs.
    assert "--operation DescribeConfigs --topic '*' --resource-pattern-type literal" in script


def test_the_kafka_image_is_pinned(default_manifests: list[Manifest]) -> None:
    values = yaml.safe_load((PRODUCTION_VALUES.parent / "volume-quota" / "values.yaml").read_text())
    image = container(pod_spec(default_manifests), "kafka")["image"]
    assert image == f"apache/kafka:{values['kafka']['image']['tag']}"
    assert values["kafka"]["image"]["tag"].startswith("4.")
