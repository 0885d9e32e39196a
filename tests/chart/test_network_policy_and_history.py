"""The optional NetworkPolicy and the history CronJob."""

from __future__ import annotations

import argparse
import os
import re
import shlex
from pathlib import Path

import pytest

from spark_history.analysis_settings import ForecastSettings, ReportSettings
from spark_history.commands import register
from spark_history.history_settings import HistoryConcern
from spark_history.settings_flags import load_options
from spark_history.source_settings import IngestSettings
from tests.chart.chart_tools import (
    CI_VALUES,
    RELEASE,
    Manifest,
    container,
    env_values,
    find,
    pod_spec,
    render,
)

FULLNAME = f"{RELEASE}-volume-quota"
OWN_CLUSTER = next(path for path in CI_VALUES if path.name == "own-cluster-values.yaml")
ATTACH = next(path for path in CI_VALUES if path.name == "attach-values.yaml")


@pytest.fixture(scope="module")
def own_cluster() -> list[Manifest]:
    return render([OWN_CLUSTER])


def _rules_by_port(policy: Manifest) -> dict[int, list[Manifest]]:
    by_port: dict[int, list[Manifest]] = {}
    for rule in policy["spec"]["ingress"]:
        for port in rule["ports"]:
            by_port.setdefault(port["port"], []).append(rule)
    return by_port


def test_no_network_policy_unless_asked(default_manifests: list[Manifest]) -> None:
    assert not any(m["kind"] == "NetworkPolicy" for m in default_manifests)
    assert not any(m["kind"] == "NetworkPolicy" for m in render([ATTACH]))


def test_replication_and_quorum_only_between_brokers(own_cluster: list[Manifest]) -> None:
    policy = find(own_cluster, "NetworkPolicy")
    pod_labels = find(own_cluster, "StatefulSet")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    by_port = _rules_by_port(policy)
    for port in (9091, 9093):
        [rule] = by_port[port]
        [peer] = rule["from"]
        assert peer == {
            "podSelector": {"matchLabels": policy["spec"]["podSelector"]["matchLabels"]}
        }


def test_clients_and_this_releases_jobs_reach_the_client_port(own_cluster: list[Manifest]) -> None:
    by_port = _rules_by_port(find(own_cluster, "NetworkPolicy"))
    peers = [peer for rule in by_port[9092] for peer in rule.get("from", [])]
    assert {"namespaceSelector": {"matchLabels": {"kafka-clients": "true"}}} in peers
    release_jobs = next(peer for peer in peers if "matchExpressions" in peer.get("podSelector", {}))
    expressions = {e["key"]: e["values"] for e in release_jobs["podSelector"]["matchExpressions"]}
    assert expressions == {
        "app.kubernetes.io/instance": [RELEASE],
        "app.kubernetes.io/component": ["acls", "test", "history"],
    }
    job_labels = find(own_cluster, "Job")["spec"]["template"]["metadata"]["labels"]
    assert job_labels["app.kubernetes.io/component"] in expressions["app.kubernetes.io/component"]
    hook_labels = find(own_cluster, "Pod")["metadata"]["labels"]
    assert hook_labels["app.kubernetes.io/component"] == "test"


def test_an_empty_client_list_leaves_the_client_port_open() -> None:
    policy = find(render(settings={"networkPolicy.enabled": "true"}), "NetworkPolicy")
    [rule] = _rules_by_port(policy)[9092][-1:]
    assert "from" not in rule


def test_prometheus_and_the_test_pod_reach_the_metrics_port(own_cluster: list[Manifest]) -> None:
    [rule] = _rules_by_port(find(own_cluster, "NetworkPolicy"))[9464]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
        {
            "podSelector": {
                "matchLabels": {
                    "app.kubernetes.io/instance": RELEASE,
                    "app.kubernetes.io/component": "test",
                }
            }
        },
    ]


def test_the_history_job_ingests_then_forecasts_on_its_own_volume(
    own_cluster: list[Manifest],
) -> None:
    cronjob = find(own_cluster, "CronJob")
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    assert cronjob["spec"]["schedule"] == "17 * * * *"
    spec = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    history = container(spec, "history")
    assert history["image"] == "volume-quota-history:0.1.0"
    script = history["command"][2]
    steps = [line.split()[:3] for line in script.splitlines() if line.startswith("volume-quota")]
    assert steps == [
        ["volume-quota", "history", "ingest"],
        ["volume-quota", "history", "forecast"],
        ["volume-quota", "history", "report"],
    ]
    assert (
        "--checkpoint /var/lib/volume-quota/checkpoint --output /var/lib/volume-quota/dataset"
        in (script)
    )
    assert "--compact-min-files 24" in script, "hourly ingests leave small files: compact them"
    claim = find(own_cluster, "PersistentVolumeClaim")
    data = next(v for v in spec["volumes"] if v["name"] == "data")
    assert data["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    sidecar = container(pod_spec(own_cluster), "volume-quota")
    assert (
        env_values(history)["BOOTSTRAP_SERVERS"]
        == env_values(sidecar)["VOLUME_QUOTA_BOOTSTRAP_SERVERS"]
    )
    tls = next(v for v in spec["volumes"] if v["name"] == "tls")
    # Its own certificate (history.tls), never the sidecars' WRITE identity.
    assert tls["secret"]["secretName"] == f"{FULLNAME}-history-tls"
    assert history["securityContext"]["readOnlyRootFilesystem"] is True
    assert spec["automountServiceAccountToken"] is False


def _history_commands(script: str, env: dict[str, str]) -> list[list[str]]:
    """The script's ``volume-quota history`` command lines as words, the variables expanded as
    the shell expands them."""
    joined = script.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        if line.strip().startswith("volume-quota"):
            expanded = re.sub(r"\$(\w+)", lambda match: env[match.group(1)], line)
            commands.append(shlex.split(expanded))
    return commands


def test_the_history_commands_are_accepted_by_the_history_job_as_written(
    own_cluster: list[Manifest], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in os.environ if name.startswith("VOLUME_QUOTA_")]:
        monkeypatch.delenv(name)
    spec = find(own_cluster, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    history = container(spec, "history")
    env = env_values(history)
    parser = argparse.ArgumentParser(prog="volume-quota")
    history_parsers = parser.add_subparsers()
    register(history_parsers)
    history_actions = history_parsers.choices["history"]._subparsers
    assert history_actions is not None
    (actions,) = history_actions._group_actions
    assert isinstance(actions.choices, dict)
    settings_by_action: dict[str, type[HistoryConcern]] = {
        "ingest": IngestSettings,
        "forecast": ForecastSettings,
        "report": ReportSettings,
    }
    loaded: dict[str, HistoryConcern] = {}
    for words in _history_commands(history["command"][2], env):
        flags = actions.choices[words[2]]._option_string_actions
        # Spelled out: argparse would also take an abbreviation of a flag, or an old name.
        assert [word for word in words if word.startswith("--") and word not in flags] == []
        arguments = parser.parse_args(words[1:])
        loaded[words[2]] = load_options(settings_by_action[words[2]], arguments)
    assert set(loaded) == set(settings_by_action)
    ingest = loaded["ingest"]
    assert isinstance(ingest, IngestSettings)
    assert ingest.bootstrap_servers == env["BOOTSTRAP_SERVERS"]
    assert ingest.topic == env["TOPIC"]
    tls = next(Path(m["mountPath"]) for m in history["volumeMounts"] if m["name"] == "tls")
    assert (ingest.tls_ca_file, ingest.tls_cert_file, ingest.tls_key_file) == (
        tls / "ca.crt",
        tls / "tls.crt",
        tls / "tls.key",
    )
    assert ingest.compact_min_files == 24


def test_no_history_job_unless_asked(default_manifests: list[Manifest]) -> None:
    assert not {"CronJob", "PersistentVolumeClaim"} & {m["kind"] for m in default_manifests}
