"""The production example installs on a cluster prepared the way docs/kubernetes.md says.

docs/kubernetes.md installs release `kafka` in namespace `kafka` after applying the YAML it
shows (cert-manager Certificates, whose `secretName` is the Secret cert-manager creates) and
running its shell commands (`kubectl create secret ...`, `kubectl create priorityclass ...`).
A pod that mounts a Secret nobody creates stays in ContainerCreating; a pod whose
`priorityClassName` names no PriorityClass is refused by admission. So every Secret the
example's pods mount must be one the docs create, and every PriorityClass they name must be
one the docs or the chart create.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.chart.chart_tools import PRODUCTION_VALUES, REPO, HelmError, Manifest, render
from tests.chart.test_secret_permissions import _pod_templates

DOCS = REPO / "docs" / "kubernetes.md"
# The release and namespace docs/kubernetes.md installs and names its Secrets after.
DOCS_RELEASE = "kafka"
FENCE = re.compile(r"^[ \t]*```(\w*)[ \t]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)


@dataclass
class Prepared:
    """What the docs' commands create before `helm install`."""

    secrets: set[str] = field(default_factory=set)
    priority_classes: set[str] = field(default_factory=set)


def _yaml_objects(text: str) -> list[Manifest]:
    # A docs block may be indented as part of a list item; dedent by its first line.
    lines = text.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    body = "\n".join(line[indent:] for line in lines)
    try:
        return [o for o in yaml.safe_load_all(body) if isinstance(o, dict) and "kind" in o]
    except yaml.YAMLError:
        return []  # a Helm template snippet, not a manifest


def _commands(text: str) -> list[list[str]]:
    joined = re.sub(r"\\\n", " ", text)
    commands = []
    for line in joined.splitlines():
        command = line.split(" #", 1)[0].strip()
        if command and not command.startswith("#"):
            commands.append(shlex.split(command))
    return commands


def prepared_by(markdown: str) -> Prepared:
    prepared = Prepared()
    for language, body in FENCE.findall(markdown):
        if language == "yaml":
            for manifest in _yaml_objects(body):
                kind, name = manifest["kind"], manifest.get("metadata", {}).get("name")
                if kind == "Certificate":
                    prepared.secrets.add(manifest["spec"]["secretName"])
                elif kind == "Secret":
                    prepared.secrets.add(name)
                elif kind == "PriorityClass":
                    prepared.priority_classes.add(name)
        elif language in ("bash", "sh", "shell", "console"):
            for words in _commands(body):
                if words[:3] == ["kubectl", "create", "secret"] and len(words) > 4:
                    prepared.secrets.add(words[4])
                elif words[:3] == ["kubectl", "create", "priorityclass"] and len(words) > 3:
                    prepared.priority_classes.add(words[3])
    return prepared


def _production() -> list[Manifest]:
    return render([PRODUCTION_VALUES], release=DOCS_RELEASE)


def test_every_secret_the_production_pods_mount_is_created_by_the_docs() -> None:
    prepared = prepared_by(DOCS.read_text())
    mounted = {
        (workload, volume["secret"]["secretName"])
        for workload, spec in _pod_templates(_production())
        for volume in spec.get("volumes", [])
        if "secret" in volume
    }
    # broker, admin (the sidecars' certificates come from csi-driver, one per pod)
    assert len({secret for _, secret in mounted}) >= 2, mounted
    missing = sorted(
        f"{workload} mounts Secret {secret}"
        for workload, secret in mounted
        if secret not in prepared.secrets
    )
    assert not missing, f"not created in {DOCS.name} ({sorted(prepared.secrets)}): {missing}"


def test_every_priority_class_the_production_pods_name_exists() -> None:
    manifests = _production()
    prepared = prepared_by(DOCS.read_text())
    rendered = {m["metadata"]["name"] for m in manifests if m["kind"] == "PriorityClass"}
    named = {
        (workload, spec["priorityClassName"])
        for workload, spec in _pod_templates(manifests)
        if spec.get("priorityClassName")
    }
    assert named, "the production example names no priorityClassName"
    missing = sorted(
        f"{workload}: {name}"
        for workload, name in named
        if name not in prepared.priority_classes | rendered
    )
    assert not missing, f"PriorityClass created neither by {DOCS.name} nor by the chart: {missing}"


def test_the_docs_parser_finds_certificates_secrets_and_priority_classes() -> None:
    markdown = "\n".join(
        [
            "```yaml",
            "apiVersion: cert-manager.io/v1",
            "kind: Certificate",
            "metadata: {name: c}",
            "spec: {secretName: from-certificate}",
            "```",
            "  ```bash",
            "  kubectl -n kafka create secret generic not-this-form --from-file=a",
            "  kubectl create secret tls from-kubectl \\",
            "    --cert=tls.crt --key=tls.key   # a comment",
            "  kubectl create priorityclass kafka-critical --value=1000000",
            "  ```",
        ]
    )
    prepared = prepared_by(markdown)
    assert prepared.secrets == {"from-certificate", "from-kubectl"}
    assert prepared.priority_classes == {"kafka-critical"}


def test_the_docs_parser_reads_the_real_docs() -> None:
    prepared = prepared_by(Path(DOCS).read_text())
    assert "kafka-admin-tls" in prepared.secrets


def test_the_chart_creates_the_priority_class_only_when_asked() -> None:
    named = {"priorityClassName": "kafka-critical"}
    assert "PriorityClass" not in {m["kind"] for m in render(settings=named)}
    created = render(settings=named | {"priorityClass.create": "true"})
    priority_class = next(m for m in created if m["kind"] == "PriorityClass")
    assert priority_class["metadata"]["name"] == "kafka-critical"
    assert priority_class["value"] == 1000000
    assert priority_class["globalDefault"] is False


def test_the_chart_refuses_to_create_a_nameless_priority_class() -> None:
    with pytest.raises(HelmError, match="needs priorityClassName"):
        render(settings={"priorityClass.create": "true"})
