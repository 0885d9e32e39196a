"""Helm, the Kubernetes JSON schemas and the CRD validators, for the chart tests.

Tools come from ``deploy/helm/install-helm.sh`` (helm, built with ``go install``, and the npm
package with the Prometheus Operator validators) and from the ``kubernetes-validate`` Python
package (JSON schemas of every Kubernetes API kind). A missing tool fails the tests with a
message that says how to install it; nothing is skipped.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "volume-quota"
PRODUCTION_VALUES = REPO / "deploy" / "helm" / "values-production.yaml"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
# Every values file the project ships: each must lint, render and validate.
SHIPPED_VALUES = (*CI_VALUES, PRODUCTION_VALUES)
INSTALL_SCRIPT = REPO / "deploy" / "helm" / "install-helm.sh"
CRD_VALIDATOR = Path(__file__).with_name("validate_crds.mjs")

# The chart's minimum (Chart.yaml kubeVersion) and the newest schemas kubernetes-validate ships.
KUBERNETES_VERSIONS = ("1.28.0", "1.37.0")
RELEASE = "vq"
NAMESPACE = "kafka"

Manifest = dict[str, Any]


class HelmError(Exception):
    """helm exited non-zero; the message is its standard error."""


def _install_script_setting(name: str) -> str:
    match = re.search(rf'^{name}="([^"]+)"$', INSTALL_SCRIPT.read_text(), re.MULTILINE)
    assert match is not None, f"{INSTALL_SCRIPT} does not set {name}"
    return match[1]


HELM_VERSION = _install_script_setting("HELM_VERSION")
MODELS_VERSION = _install_script_setting("PROMETHEUS_OPERATOR_MODELS_VERSION")


def _tools_dir() -> Path:
    configured = os.environ.get("VOLUME_QUOTA_TOOLS_DIR")
    if configured:
        return Path(configured)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "volume-quota" / "chart-tools"


def _missing(what: str) -> str:
    return f"{what}: run `bash {INSTALL_SCRIPT.relative_to(REPO)}` (installs helm {HELM_VERSION})"


@functools.cache
def helm_binary() -> Path:
    """``$VOLUME_QUOTA_HELM``, else the install script's cache path; fails the test if absent."""
    configured = os.environ.get("VOLUME_QUOTA_HELM")
    helm = Path(configured) if configured else _tools_dir() / f"helm-{HELM_VERSION}" / "helm"
    if not os.access(helm, os.X_OK):
        pytest.fail(_missing(f"helm not found at {helm}"), pytrace=False)
    version = subprocess.run(
        [str(helm), "version", "--template", "{{.Version}}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if version != HELM_VERSION:
        pytest.fail(_missing(f"{helm} is helm {version!r}, not {HELM_VERSION}"), pytrace=False)
    return helm


def run_helm(*arguments: str) -> str:
    completed = subprocess.run(
        [str(helm_binary()), *arguments],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if completed.returncode != 0:
        raise HelmError(completed.stderr.strip())
    return completed.stdout


def _value_arguments(
    values_files: Sequence[Path], settings: Mapping[str, str], kube_version: str | None
) -> list[str]:
    arguments: list[str] = []
    for values_file in values_files:
        arguments += ["--values", str(values_file)]
    for key, value in settings.items():
        arguments += ["--set", f"{key}={value}"]
    if kube_version is not None:
        arguments += ["--kube-version", kube_version]
    return arguments


def render_text(
    values_files: Sequence[Path] = (),
    settings: Mapping[str, str] | None = None,
    *,
    kube_version: str | None = None,
    release: str = RELEASE,
    chart: Path = CHART,
    show_only: str | None = None,
    hooks: bool = True,
) -> str:
    """``helm template`` output; raises :class:`HelmError` when helm refuses the values."""
    arguments = ["template", release, str(chart), "--namespace", NAMESPACE]
    if not hooks:
        arguments.append("--no-hooks")
    arguments += _value_arguments(values_files, settings or {}, kube_version)
    if show_only is not None:
        arguments += ["--show-only", show_only]
    return run_helm(*arguments)


def render(
    values_files: Sequence[Path] = (),
    settings: Mapping[str, str] | None = None,
    *,
    kube_version: str | None = None,
    release: str = RELEASE,
) -> list[Manifest]:
    """Every manifest ``helm template`` renders, parsed."""
    text = render_text(values_files, settings, kube_version=kube_version, release=release)
    return [cast(Manifest, document) for document in yaml.safe_load_all(text) if document]


def lint(values_files: Sequence[Path] = (), settings: Mapping[str, str] | None = None) -> str:
    arguments = ["lint", "--strict", str(CHART), "--namespace", NAMESPACE]
    return run_helm(*arguments, *_value_arguments(values_files, settings or {}, None))


def render_notes(chart_copy: Path, values_files: Sequence[Path] = ()) -> str:
    """NOTES.txt as ``helm install`` would print it (``helm template`` never renders it).

    ``chart_copy`` is a scratch directory: the chart is copied there with NOTES.txt as a plain
    file and a one-line template that renders it with ``tpl``.
    """
    shutil.copytree(CHART, chart_copy)
    shutil.copy(CHART / "templates" / "NOTES.txt", chart_copy / "notes-under-test.txt")
    (chart_copy / "templates" / "zz-notes-under-test.yaml").write_text(
        'notes: {{ tpl (.Files.Get "notes-under-test.txt") . | toJson }}\n'
    )
    text = render_text(
        values_files, chart=chart_copy, show_only="templates/zz-notes-under-test.yaml"
    )
    return cast(str, cast(Manifest, yaml.safe_load(text))["notes"])


# Looking things up in rendered manifests


def find(manifests: Iterable[Manifest], kind: str, name: str | None = None) -> Manifest:
    matches = [
        manifest
        for manifest in manifests
        if manifest["kind"] == kind and (name is None or manifest["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def kinds(manifests: Iterable[Manifest]) -> list[str]:
    return sorted(manifest["kind"] for manifest in manifests)


def pod_spec(manifests: Iterable[Manifest]) -> Manifest:
    return cast(Manifest, find(manifests, "StatefulSet")["spec"]["template"]["spec"])


def attach_snippets(manifests: Iterable[Manifest]) -> dict[str, Any]:
    """The attach-mode ConfigMap's entries, YAML entries parsed."""
    data = find(manifests, "ConfigMap", f"{RELEASE}-volume-quota-attach")["data"]
    return {
        key: yaml.safe_load(value) if key.endswith(".yaml") else value
        for key, value in data.items()
    }


def container(spec: Manifest, name: str, *, init: bool = False) -> Manifest:
    containers = spec.get("initContainers" if init else "containers", [])
    matches = [entry for entry in containers if entry["name"] == name]
    assert len(matches) == 1, f"expected one container {name!r}, found {len(matches)}"
    return cast(Manifest, matches[0])


def env_of(entry: Manifest) -> dict[str, Manifest]:
    """Container env by name; each value is the env entry itself (value or valueFrom)."""
    return {variable["name"]: variable for variable in entry.get("env", [])}


def env_values(entry: Manifest) -> dict[str, str]:
    return {
        name: variable["value"] for name, variable in env_of(entry).items() if "value" in variable
    }


def mounts(entry: Manifest) -> dict[str, Manifest]:
    """Volume mounts by mount path."""
    return {mount["mountPath"]: mount for mount in entry.get("volumeMounts", [])}


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` lines (the chart writes no continuations or escapes); later keys win."""
    properties: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "!")):
            continue
        key, separator, value = stripped.partition("=")
        assert separator, f"not a property line: {line!r}"
        properties[key.strip()] = value.strip()
    return properties


def server_properties(manifests: Iterable[Manifest]) -> dict[str, str]:
    config_map = find(manifests, "ConfigMap", f"{RELEASE}-volume-quota-kafka")
    return parse_properties(config_map["data"]["server.properties"])


# Validation against the Kubernetes API schemas


def _schema_root() -> Path:
    """The JSON schemas inside the kubernetes-validate package (its code is not used)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "the Python package kubernetes-validate (Kubernetes JSON schemas) is missing: "
            "pip install -e '.[dev]'",
            pytrace=False,
        )
    return Path(spec.submodule_search_locations[0]) / "kubernetes-json-schema"


@dataclass(frozen=True)
class KubernetesSchemas:
    """The strict JSON schemas of one Kubernetes version (unknown fields are errors)."""

    version: str

    @functools.cached_property
    def directory(self) -> Path:
        directory = _schema_root() / f"v{self.version}-local-strict"
        assert directory.is_dir(), f"kubernetes-validate has no schemas for {self.version}"
        return directory

    @functools.cached_property
    def registry(self) -> Registry[Any]:
        definitions = json.loads((self.directory / "_definitions.json").read_text())
        return Resource.from_contents(definitions) @ Registry()

    def schema_file(self, manifest: Manifest) -> Path:
        group, _, version = manifest["apiVersion"].rpartition("/")
        group_prefix = f"-{group.split('.')[0]}" if group else ""
        return self.directory / f"{manifest['kind'].lower()}{group_prefix}-{version}.json"

    def errors(self, manifest: Manifest) -> list[str]:
        schema_file = self.schema_file(manifest)
        if not schema_file.is_file():
            return [f"no schema for {manifest['apiVersion']} {manifest['kind']} in {self.version}"]
        schema = json.loads(schema_file.read_text())
        validator = jsonschema.Draft202012Validator(schema, registry=self.registry)
        return [
            f"{error.json_path}: {error.message[:300]}"
            for error in sorted(validator.iter_errors(manifest), key=lambda e: e.json_path)
        ]


@functools.cache
def kubernetes_schemas(version: str) -> KubernetesSchemas:
    return KubernetesSchemas(version)


def crd_errors(manifests: Sequence[Manifest]) -> list[list[str]]:
    """Errors of each monitoring.coreos.com/v1 object, from the CRD-generated validators."""
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "node (Node.js) is needed to validate ServiceMonitor/PrometheusRule", pytrace=False
        )
    models = _tools_dir() / f"prometheus-operator-models-{MODELS_VERSION}"
    if not (models / "node_modules" / "@kubernetes-models" / "prometheus-operator").is_dir():
        pytest.fail(
            _missing(f"@kubernetes-models/prometheus-operator not in {models}"), pytrace=False
        )
    completed = subprocess.run(
        [node, str(CRD_VALIDATOR), str(models)],
        input=json.dumps(list(manifests)),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    return cast(list[list[str]], json.loads(completed.stdout))


def validation_errors(manifests: Sequence[Manifest], kube_version: str) -> dict[str, list[str]]:
    """Every manifest's schema errors, keyed by 'Kind/name'; an empty dict means all valid."""
    schemas = kubernetes_schemas(kube_version)
    problems: dict[str, list[str]] = {}
    custom = [m for m in manifests if m["apiVersion"].startswith("monitoring.coreos.com/")]
    for manifest in manifests:
        if manifest in custom:
            continue
        errors = schemas.errors(manifest)
        if errors:
            problems[f"{manifest['kind']}/{manifest['metadata']['name']}"] = errors
    if custom:
        for manifest, errors in zip(custom, crd_errors(custom), strict=True):
            if errors:
                problems[f"{manifest['kind']}/{manifest['metadata']['name']}"] = errors
    return problems
