"""The shell scripts the chart ships, run here against stand-ins for Kafka's tools, and the
KRaft cluster id the chart derives."""

from __future__ import annotations

import base64
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.chart.chart_tools import RELEASE, Manifest, container, env_values, find, pod_spec, render

FULLNAME = f"{RELEASE}-volume-quota"
POD_DOMAIN = f"{FULLNAME}-headless.kafka.svc.cluster.local"
RECORDING_TOOL = """#!/bin/bash
printf '%s\\n' "$@" > "$(dirname "$0")/$(basename "$0").args"
"""


def _stub_kafka_home(root: Path, tools: tuple[str, ...]) -> Path:
    bin_dir = root / "kafka" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in tools:
        path = bin_dir / tool
        path.write_text(RECORDING_TOOL)
        path.chmod(0o755)
    return root / "kafka"


def _tls_dir(root: Path) -> Path:
    tls = root / "tls"
    tls.mkdir()
    (tls / "tls.key").write_text("-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n")
    (tls / "tls.crt").write_text("-----BEGIN CERTIFICATE-----\ncert\n-----END CERTIFICATE-----\n")
    (tls / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n")
    return tls


def _run_kafka_start(
    manifests: list[Manifest], root: Path, environment: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """kafka-start.sh with its fixed paths moved under ``root``."""
    config_map = find(manifests, "ConfigMap", f"{FULLNAME}-kafka")["data"]
    template_dir, config_dir = root / "template", root / "config"
    template_dir.mkdir()
    config_dir.mkdir()
    (template_dir / "server.properties").write_text(config_map["server.properties"])
    script = (
        config_map["kafka-start.sh"]
        .replace("/opt/volume-quota/kafka-config-template", str(template_dir))
        .replace("/opt/volume-quota/kafka-config", str(config_dir))
        .replace("/etc/kafka/tls", str(_tls_dir(root)))
    )
    kafka_home = _stub_kafka_home(root, ("kafka-storage.sh", "kafka-server-start.sh"))
    kafka = container(pod_spec(manifests), "kafka")
    env = {
        "PATH": os.environ["PATH"],
        **env_values(kafka),
        "KAFKA_HOME": str(kafka_home),
        "POD_NAME": f"{FULLNAME}-2",
        "HOSTNAME": f"{FULLNAME}-2",
        "TLS_RELOAD_INTERVAL_SECONDS": "0",
        **environment,
    }
    return subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=False, timeout=30
    )


def _kafka_start_script(manifests: list[Manifest], root: Path) -> str:
    config_map = find(manifests, "ConfigMap", f"{FULLNAME}-kafka")["data"]
    template_dir, config_dir = root / "template", root / "config"
    template_dir.mkdir()
    config_dir.mkdir()
    (template_dir / "server.properties").write_text(config_map["server.properties"])
    script: str = config_map["kafka-start.sh"]
    return (
        script.replace("/opt/volume-quota/kafka-config-template", str(template_dir))
        .replace("/opt/volume-quota/kafka-config", str(config_dir))
        .replace("/etc/kafka/tls", str(_tls_dir(root)))
    )


def test_kafka_start_writes_this_nodes_config_and_starts_kafka(
    default_manifests: list[Manifest], tmp_path: Path
) -> None:
    completed = _run_kafka_start(default_manifests, tmp_path, {"KAFKA_NODE_ID": "2"})
    assert completed.returncode == 0, completed.stderr
    config = tmp_path / "config" / "server.properties"
    lines = config.read_text().splitlines()
    assert lines[-3:] == [
        "node.id=2",
        f"advertised.listeners=CLIENT://{FULLNAME}-2.{POD_DOMAIN}:9092,"
        f"INTERNAL://{FULLNAME}-2.{POD_DOMAIN}:9091",
        f"ssl.keystore.location={tmp_path}/config/keystore.pem",
    ]
    assert "client.quota.callback.class=io.volumequota.broker.VolumeQuotaCallback" in lines
    keystore = tmp_path / "config" / "keystore.pem"
    tls = tmp_path / "tls"
    assert keystore.read_text() == (tls / "tls.key").read_text() + (tls / "tls.crt").read_text()
    assert stat.S_IMODE(keystore.stat().st_mode) == 0o600
    bin_dir = tmp_path / "kafka" / "bin"
    cluster_id = env_values(container(pod_spec(default_manifests), "kafka"))["KAFKA_CLUSTER_ID"]
    assert (bin_dir / "kafka-storage.sh.args").read_text().splitlines() == [
        "format",
        "--ignore-formatted",
        "--cluster-id",
        cluster_id,
        "--config",
        str(config),
    ]
    assert (bin_dir / "kafka-server-start.sh.args").read_text().splitlines() == [str(config)]


def test_a_renewed_broker_certificate_is_reloaded_without_a_restart(
    default_manifests: list[Manifest], tmp_path: Path
) -> None:
    script = _kafka_start_script(default_manifests, tmp_path)
    kafka_home = _stub_kafka_home(tmp_path, ("kafka-storage.sh",))
    bin_dir = kafka_home / "bin"
    # The broker: stays up while the test renews the certificate.
    (bin_dir / "kafka-server-start.sh").write_text("#!/bin/bash\nsleep 30\n")
    calls = bin_dir / "kafka-configs.calls"
    heaps = bin_dir / "kafka-configs.heap"
    (bin_dir / "kafka-configs.sh").write_text(
        f'#!/bin/bash\necho "$*" >> {calls}\necho "$KAFKA_HEAP_OPTS" >> {heaps}\n'
    )
    for tool in ("kafka-server-start.sh", "kafka-configs.sh"):
        (bin_dir / tool).chmod(0o755)
    kafka = container(pod_spec(default_manifests), "kafka")
    assert env_values(kafka)["TLS_RELOAD_INTERVAL_SECONDS"] == "60"
    env = {
        "PATH": os.environ["PATH"],
        **env_values(kafka),
        "KAFKA_HOME": str(kafka_home),
        "KAFKA_NODE_ID": "2",
        "POD_NAME": f"{FULLNAME}-2",
        "TLS_RELOAD_INTERVAL_SECONDS": "1",
    }
    keystore = tmp_path / "config" / "keystore.pem"
    tls = tmp_path / "tls"
    broker = subprocess.Popen(
        ["bash", "-c", script],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 15
        while not (tmp_path / "config" / "server.properties").exists():
            assert time.monotonic() < deadline, "kafka-start.sh did not start"
            time.sleep(0.1)
        time.sleep(1.5)
        assert not calls.exists()  # nothing changed yet: no reload
        renewed = "-----BEGIN CERTIFICATE-----\nrenewed\n-----END CERTIFICATE-----\n"
        (tls / "tls.crt").write_text(renewed)
        while not calls.exists() or len(calls.read_text().splitlines()) < 3:
            assert time.monotonic() < deadline, "the renewed certificate was not reloaded"
            time.sleep(0.1)
    finally:
        os.killpg(broker.pid, signal.SIGTERM)
        broker.wait(timeout=10)
    assert keystore.read_text() == (tls / "tls.key").read_text() + renewed
    assert stat.S_IMODE(keystore.stat().st_mode) == 0o600
    config_dir = tmp_path / "config"
    expected = [
        f"--bootstrap-server {FULLNAME}-2.{POD_DOMAIN}:9092 "
        f"--command-config {config_dir}/reload-client.properties "
        f"--entity-type brokers --entity-name 2 --alter --add-config "
        f"listener.name.{listener}.ssl.keystore.location={config_dir}/keystore.pem"
        for listener in ("client", "internal", "controller")
    ]
    assert calls.read_text().splitlines() == expected
    # Not the broker's heap (-Xms1g -Xmx1g): this JVM shares the container's memory limit.
    assert env["KAFKA_HEAP_OPTS"] == "-Xms1g -Xmx1g"
    assert heaps.read_text().splitlines() == ["-Xmx128m"] * 3
    client = (config_dir / "reload-client.properties").read_text().splitlines()
    assert f"ssl.keystore.location={config_dir}/keystore.pem" in client
    assert f"ssl.truststore.location={tls}/ca.crt" in client


def test_kafka_start_sets_the_rack_it_is_given(
    default_manifests: list[Manifest], tmp_path: Path
) -> None:
    rack = tmp_path / "rack"
    rack.write_text("eu-west-1b")
    completed = _run_kafka_start(
        default_manifests, tmp_path, {"KAFKA_NODE_ID": "2", "RACK_FILE": str(rack)}
    )
    assert completed.returncode == 0, completed.stderr
    lines = (tmp_path / "config" / "server.properties").read_text().splitlines()
    assert "broker.rack=eu-west-1b" in lines


def test_kafka_start_falls_back_to_the_host_names_ordinal(
    default_manifests: list[Manifest], tmp_path: Path
) -> None:
    completed = _run_kafka_start(default_manifests, tmp_path, {"KAFKA_NODE_ID": ""})
    assert completed.returncode == 0, completed.stderr
    assert "node.id=2" in (tmp_path / "config" / "server.properties").read_text().splitlines()


def test_kafka_start_refuses_a_pod_without_an_ordinal(
    default_manifests: list[Manifest], tmp_path: Path
) -> None:
    completed = _run_kafka_start(
        default_manifests, tmp_path, {"KAFKA_NODE_ID": "", "HOSTNAME": "kafka"}
    )
    assert completed.returncode == 1
    assert "cannot tell this pod's ordinal (got 'kafka')" in completed.stderr
    assert not (tmp_path / "kafka" / "bin" / "kafka-server-start.sh.args").exists()


# A kafka-acls.sh stand-in: appends its arguments (one call per line) to calls.log, then
# prints and exits as the next line of responses.txt says ("<status> <output>"; default 0).
SCRIPTED_ACLS_TOOL = """#!/bin/bash
here="$(dirname "$0")"
echo "$*" >> "$here/calls.log"
calls=$(wc -l < "$here/calls.log")
response=$(sed -n "${calls}p" "$here/responses.txt" 2>/dev/null)
status="${response%% *}"
echo "${response#* }"
exit "${status:-0}"
"""


def _run_acl_script(
    manifests: list[Manifest],
    root: Path,
    responses: list[str] = (),  # type: ignore[assignment]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """grant-acls.sh against the scripted stand-in; returns the run and the calls it made."""
    script = find(manifests, "ConfigMap", f"{FULLNAME}-acls")["data"]["grant-acls.sh"]
    scratch = root / "scratch"
    scratch.mkdir()
    script = script.replace("/tmp/", f"{scratch}/").replace(
        "/etc/kafka/admin-tls", str(_tls_dir(root))
    )
    bin_dir = root / "kafka" / "bin"
    bin_dir.mkdir(parents=True)
    tool = bin_dir / "kafka-acls.sh"
    tool.write_text(SCRIPTED_ACLS_TOOL)
    tool.chmod(0o755)
    (bin_dir / "responses.txt").write_text("".join(f"{line}\n" for line in responses))
    job = find(manifests, "Job")["spec"]["template"]["spec"]
    env = {
        "PATH": os.environ["PATH"],
        **env_values(container(job, "grant-acls")),
        "KAFKA_HOME": str(root / "kafka"),
        "RETRY_INTERVAL_SECONDS": "0",
    }
    completed = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=False, timeout=30
    )
    calls_log = bin_dir / "calls.log"
    calls = calls_log.read_text().splitlines() if calls_log.exists() else []
    assert (scratch / "admin.properties").exists()
    return completed, calls


def test_the_acl_script_grants_the_topic_and_the_consumer_group(
    default_manifests: list[Manifest], tmp_path: Path
) -> None:
    completed, calls = _run_acl_script(default_manifests, tmp_path)
    assert completed.returncode == 0, completed.stderr
    properties = (tmp_path / "scratch" / "admin.properties").read_text().splitlines()
    assert "security.protocol=SSL" in properties
    assert f"ssl.keystore.location={tmp_path}/scratch/keystore.pem" in properties
    connection = f"--bootstrap-server {FULLNAME}-0.{POD_DOMAIN}:9092,"
    assert all(call.startswith(connection) for call in calls)
    topic_grant, group_grant, usage_grant, configs_grant, override_grant, *listings = (
        call.split("--command-config ")[1] for call in calls
    )
    assert topic_grant.endswith(
        "--add --allow-principal User:volume-quota-sidecar --operation Create --operation Write "
        "--operation Read --operation Describe --operation DescribeConfigs "
        "--topic __volume_quota_snapshots --resource-pattern-type literal"
    )
    # librdkafka's consumer needs a group.id, and the broker checks READ on it.
    assert group_grant.endswith(
        "--add --allow-principal User:volume-quota-sidecar --operation Read "
        "--group volume-quota-consumer --resource-pattern-type literal"
    )
    # The usage document: the sidecar creates its topic, checks its cleanup.policy and reads it
    # for `volume-quota status`.
    assert usage_grant.endswith(
        "--add --allow-principal User:volume-quota-sidecar --operation Create --operation Write "
        "--operation Read --operation Describe --operation DescribeConfigs "
        "--topic __volume_quota_usage "
        "--resource-pattern-type literal"
    )
    # The configs of every topic (never their data), for the tiered topics' upload backlogs.
    assert configs_grant.endswith(
        "--add --allow-principal User:volume-quota-sidecar --operation DescribeConfigs "
        "--topic * --resource-pattern-type literal"
    )
    # Without it Kafka refuses the override topic whether or not it exists, and every decider
    # reports an operator's override as unreadable.
    assert override_grant.endswith(
        "--add --allow-principal User:volume-quota-sidecar --operation Read "
        "--operation Describe --topic __volume_quota_overrides --resource-pattern-type literal"
    )
    assert [listing.split("admin.properties ")[1] for listing in listings] == [
        "--list --topic __volume_quota_snapshots",
        "--list --group volume-quota-consumer",
        "--list --topic __volume_quota_usage",
        "--list --topic __volume_quota_overrides",
    ]
    assert "running as User:kafka-broker" in completed.stderr


def test_the_acl_script_grants_the_history_job_read_only(tmp_path: Path) -> None:
    manifests = render(settings={"history.enabled": "true"})
    completed, calls = _run_acl_script(manifests, tmp_path)
    assert completed.returncode == 0, completed.stderr
    history_grants = [call for call in calls if "User:volume-quota-history" in call]
    assert [grant.split("admin.properties ")[1] for grant in history_grants] == [
        "--add --allow-principal User:volume-quota-history --operation Read --operation Describe "
        "--topic __volume_quota_snapshots --resource-pattern-type literal"
    ]


def test_the_acl_script_grants_nothing_to_a_history_job_that_is_off(
    default_manifests: list[Manifest], tmp_path: Path
) -> None:
    _, calls = _run_acl_script(default_manifests, tmp_path)
    assert not [call for call in calls if "volume-quota-history" in call]


def test_the_acl_script_waits_for_a_cluster_that_is_not_up_yet(
    default_manifests: list[Manifest], tmp_path: Path
) -> None:
    unreachable = "1 org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node"
    completed, calls = _run_acl_script(default_manifests, tmp_path, [unreachable, unreachable])
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.count("cluster not reachable yet") == 2
    assert len(calls) == 2 + 9  # two refused attempts, then five grants and four listings


def test_the_acl_script_reports_an_authorization_failure_with_its_principal(
    production_manifests: list[Manifest], tmp_path: Path
) -> None:
    refused = (
        "1 Error while executing ACL command: org.apache.kafka.common.errors."
        "ClusterAuthorizationException: Cluster authorization failed."
    )
    completed, calls = _run_acl_script(production_manifests, tmp_path, [refused])
    assert completed.returncode == 3  # the Job's podFailurePolicy ends the Job on 3
    assert len(calls) == 1  # no retry: waiting does not make a principal a super user
    assert "authorization failed" in completed.stderr
    assert "User:kafka-admin" in completed.stderr
    assert "Secret kafka-admin-tls" in completed.stderr
    assert "not reachable" not in completed.stderr


def test_the_acl_script_reports_a_refused_tls_handshake(
    default_manifests: list[Manifest], tmp_path: Path
) -> None:
    refused = "1 org.apache.kafka.common.errors.SslAuthenticationException: SSL handshake failed"
    completed, calls = _run_acl_script(default_manifests, tmp_path, [refused])
    assert completed.returncode == 4
    assert len(calls) == 1
    assert "TLS handshake failed as User:kafka-broker" in completed.stderr


def test_a_refusal_fails_the_job_at_once(production_manifests: list[Manifest]) -> None:
    job = find(production_manifests, "Job")["spec"]
    assert job["template"]["spec"]["restartPolicy"] == "Never"
    [rule] = job["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob"
    assert rule["onExitCodes"] == {
        "containerName": "grant-acls",
        "operator": "In",
        "values": [3, 4],
    }


def _decoded_cluster_id(cluster_id: str) -> bytes:
    assert len(cluster_id) == 22
    decoded = base64.urlsafe_b64decode(cluster_id + "==")
    # Kafka's Uuid.fromString: 16 bytes; the unused low bits of the last character are zero.
    assert base64.urlsafe_b64encode(decoded).decode().rstrip("=") == cluster_id
    return decoded


def _cluster_id(manifests: list[Manifest]) -> str:
    return env_values(container(pod_spec(manifests), "kafka"))["KAFKA_CLUSTER_ID"]


def test_the_derived_cluster_id_is_a_kafka_uuid_stable_per_release(
    default_manifests: list[Manifest],
) -> None:
    derived = _cluster_id(default_manifests)
    assert len(_decoded_cluster_id(derived)) == 16
    assert _cluster_id(render()) == derived
    assert _cluster_id(render(release="other")) != derived


@pytest.mark.parametrize("cluster_id", ["q1Xx0rT3SqGmD2vZ0bE7wA", "MkU3OEVBNTcwNTJENDM2Qg"])
def test_an_explicit_cluster_id_is_used_as_given(cluster_id: str) -> None:
    assert len(_decoded_cluster_id(cluster_id)) == 16
    assert _cluster_id(render(settings={"kafka.clusterId": cluster_id})) == cluster_id
