"""deploy/container/Dockerfile agrees with the chart (it cannot be built here: no container
engine), and the chart README documents every value."""

from __future__ import annotations

import re

import yaml

from tests.chart.chart_tools import CHART, REPO

DOCKERFILE = REPO / "deploy" / "container" / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    pairs = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            instruction, _, arguments = stripped.partition(" ")
            pairs.append((instruction.upper(), arguments.strip()))
    return pairs


def _stages() -> dict[str, list[tuple[str, str]]]:
    """Instructions by stage name (``FROM ... AS name``); the last stage is the default target."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for instruction, arguments in _instructions():
        if instruction == "FROM":
            name = arguments.split(" AS ")[-1] if " AS " in arguments else arguments
            current = stages.setdefault(name, [])
        current.append((instruction, arguments))
    return stages


def _chain(stages: dict[str, list[tuple[str, str]]], name: str) -> list[tuple[str, str]]:
    """A target's instructions, its parent stages' first (``FROM <stage> AS name``)."""
    instructions = stages[name]
    parent = instructions[0][1].split(" AS ")[0]
    return (_chain(stages, parent) if parent in stages else []) + instructions


def test_the_image_puts_the_jar_where_the_chart_copies_it_from() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    jar = values["sidecar"]["image"]["pluginJarPath"]
    sidecar = _chain(_stages(), list(_stages())[-1])
    copies = [arguments for instruction, arguments in sidecar if instruction == "COPY"]
    assert any(
        arguments.startswith("--from=plugin") and arguments.endswith(jar) for arguments in copies
    )


def test_both_targets_run_as_the_chart_sidecars_non_root_user() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    context = values["sidecar"]["securityContext"]
    expected = f"{context['runAsUser']}:{context['runAsGroup']}"
    assert context["runAsUser"] != 0
    stages = _stages()
    for target in (list(stages)[-1], "history"):
        users = [
            arguments for instruction, arguments in _chain(stages, target) if instruction == "USER"
        ]
        assert users, target
        assert users[-1] == expected, target  # the user the container runs as


def test_the_sidecar_target_is_the_default_and_installs_no_extras() -> None:
    stages = _stages()
    default = list(stages)[-1]
    instructions = _chain(stages, default)
    assert ("CMD", '["volume-quota", "sidecar"]') in instructions
    # ARGs with a default (a stage's bare `ARG NAME` only brings a global one into scope).
    arguments = dict(
        argument.split("=", 1)
        for instruction, argument in _instructions()
        if instruction == "ARG" and "=" in argument
    )
    assert arguments["PYTHON_IMAGE"] == "python:3.11-slim"
    assert "eclipse-temurin-17" in arguments["MAVEN_IMAGE"]
    runs = " ".join(
        arguments
        for stage in stages.values()
        for instruction, arguments in stage
        if instruction == "RUN" and stage is not stages["history"]
    )
    assert "[history]" not in runs
    assert "[dev]" not in runs


def test_the_history_target_is_what_the_history_cronjob_runs() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    history = _chain(_stages(), "history")
    assert ("ENTRYPOINT", '["volume-quota", "history"]') in history
    runs = " ".join(arguments for instruction, arguments in history if instruction == "RUN")
    assert '["optional-dependencies"]["history"]' in runs  # the [history] extra
    assert "openjdk-17" in runs  # Java for Spark
    tag = f"{values['history']['image']['repository']}:{values['history']['image']['tag']}"
    assert f"--target history -t {tag} ." in DOCKERFILE.read_text()


def test_the_chart_readme_documents_every_value() -> None:
    readme = (CHART / "README.md").read_text()
    first_cells = re.findall(r"^\|([^|]*)\|", readme, re.MULTILINE)
    documented = {key for cell in first_cells for key in re.findall(r"`([^`]+)`", cell)}

    def leaves(values: object, prefix: str) -> set[str]:
        if isinstance(values, dict) and values:
            return {
                leaf
                for key, value in values.items()
                for leaf in leaves(value, f"{prefix}.{key}" if prefix else key)
            }
        return {prefix}

    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    undocumented = {
        leaf
        for leaf in leaves(defaults, "")
        if not any(leaf == key or leaf.startswith(f"{key}.") for key in documented)
    }
    assert not undocumented, f"values missing from {CHART.name}/README.md: {sorted(undocumented)}"
