"""The functional core stays pure, and the dependency direction holds (read from the source)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

PURE_MODULES = (
    "volume_quota/byte_sizes",
    "volume_quota/durations",
    "volume_quota/limit_parsing",
    "volume_quota/java_properties",
    "volume_quota/server_properties",
    "publisher/mount_points",
    "publisher/volumes",
    "publisher/snapshot_building",
    "publisher/publication_policy",
    "publisher/delivery_pacing",
    "publisher/repeat_suppression",
    "publisher/health",
    "volume_quota/kafka_client_config",
    "publisher/topic_requirements",
    "volume_quota/certificate_inspection",
)

FORBIDDEN_IN_PURE = {
    "os",
    "time",
    "datetime.datetime.now",
    "socket",
    "subprocess",
    "threading",
    "signal",
    "psutil",
    "confluent_kafka",
    "prometheus_client",
    "structlog",
    "logging",
    "http",
    "urllib",
    "volume_quota.config",
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_modules_do_no_io(module: str) -> None:
    imports = imported_modules(REPOSITORY / f"{module}.py")
    for name in imports:
        assert name.split(".")[0] not in FORBIDDEN_IN_PURE, f"{module} imports {name}"
        assert name not in FORBIDDEN_IN_PURE, f"{module} imports {name}"
    source = (REPOSITORY / f"{module}.py").read_text()
    assert ".now(" not in source
    assert "open(" not in source


def test_pure_modules_exist() -> None:
    for module in PURE_MODULES:
        assert (REPOSITORY / f"{module}.py").is_file(), module


SHARED_WITH_THE_CONSUMER = {"volume_quota.logging_setup"}
"""The one publisher module the consumer daemon may reuse (JSON-lines logging); it imports
nothing else from the publisher."""


def test_consumer_and_schemas_never_import_the_publisher() -> None:
    for package in ("consumer", "schemas"):
        for path in (REPOSITORY / package).rglob("*.py"):
            for name in imported_modules(path) - SHARED_WITH_THE_CONSUMER:
                assert name.split(".")[0] != "publisher", f"{path} imports {name}"


def test_the_shared_logging_setup_depends_on_nothing_publisher_specific() -> None:
    imports = imported_modules(REPOSITORY / "volume_quota" / "logging_setup.py")
    publisher_imports = {name for name in imports if name.startswith("publisher")}
    assert publisher_imports <= {"publisher.repeat_suppression"}
