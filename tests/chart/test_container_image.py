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


def test_the_image_puts_the_jar_where_the_chart_copies_it_from() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    jar = values["sidecar"]["image"]["pluginJarPath"]
    copies = [arguments for instruction, arguments in _instructions() if instruction == "COPY"]
    assert any(
        arguments.startswith("--from=plugin") and arguments.endswith(jar) for arguments in copies
    )


def test_the_image_runs_as_the_chart_sidecars_non_root_user() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    context = values["sidecar"]["securityContext"]
    users = [arguments for instruction, arguments in _instructions() if instruction == "USER"]
    assert users == [f"{context['runAsUser']}:{context['runAsGroup']}"]
    assert context["runAsUser"] != 0


def test_the_image_is_multi_stage_and_installs_no_extras() -> None:
    instructions = _instructions()
    stages = [arguments for instruction, arguments in instructions if instruction == "FROM"]
    assert stages == ["${MAVEN_IMAGE} AS plugin", "${PYTHON_IMAGE} AS runtime"]
    arguments = dict(
        argument.split("=", 1) for instruction, argument in instructions if instruction == "ARG"
    )
    assert arguments["PYTHON_IMAGE"] == "python:3.11-slim"
    assert "eclipse-temurin-17" in arguments["MAVEN_IMAGE"]
    runs = " ".join(arguments for instruction, arguments in instructions if instruction == "RUN")
    assert "pip install /src " in runs
    assert "[history]" not in runs
    assert "[dev]" not in runs
    assert ("CMD", '["volume-quota", "sidecar"]') in instructions


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
