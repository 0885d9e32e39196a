"""The layout by role holds, read from the source: who may import whom, what stays pure, sizes.

- Pure modules (the functional core of every package) import no I/O library and read no clock.
- ``schemas`` imports no other package of the project; ``consumer`` never imports ``publisher``;
  ``publisher`` imports only the consumer's pure core; neither the roles' cores nor
  ``publisher`` import the application shell ``volume_quota``; ``spark_history`` takes its
  options from the shared settings (``volume_quota.config``), never the shell's command line.
- No module over 400 lines, no function over 60 lines except declarative tables; the same for
  the Java of the broker callback and of the Kafka quota suite (files and methods).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGES = ("schemas", "consumer", "publisher", "spark_history", "volume_quota")

PURE_MODULES = (
    *(f"schemas/{path.stem}" for path in (REPOSITORY / "schemas").glob("*.py")),
    "consumer/limits",
    "consumer/broker_assessment",
    "consumer/cluster_state",
    "consumer/policy",
    "consumer/reasons",
    "consumer/topic_growth",
    "consumer/status_report",
    "consumer/topic_status",
    "consumer/retention_outlook",
    "consumer/incoming_bytes",
    "consumer/incoming_status",
    "consumer/upload_backlog",
    "consumer/topic_config_reads",
    "consumer/stream_replay",
    "consumer/topic_messages",
    "consumer/current_decision",
    "consumer/signatures",
    "consumer/bootstrap_rotation",
    "publisher/publication_core",
    "publisher/publication_policy",
    "publisher/delivery_pacing",
    "publisher/snapshot_building",
    "publisher/volumes",
    "publisher/mount_points",
    "publisher/health",
    "publisher/repeat_suppression",
    "publisher/topic_requirements",
    "publisher/signing",
    "publisher/topic_usage",
    "publisher/usage_document",
    "publisher/usage_history",
    "publisher/log_dir_usage",
    "publisher/upload_backlogs",
    "consumer/overrides",
    "volume_quota/byte_sizes",
    "volume_quota/durations",
    "volume_quota/limit_parsing",
    "volume_quota/java_properties",
    "volume_quota/server_properties",
    "volume_quota/kafka_client_config",
    "volume_quota/certificate_inspection",
    "spark_history/forecast/vocabulary",
    "spark_history/forecast/robust_trend",
    "spark_history/forecast/conformal_bands",
    "spark_history/forecast/trend",
    "spark_history/forecast/envelope",
    "spark_history/forecast/choice",
    "spark_history/forecast/predict_linear",
    *(
        f"spark_history/forecast/{folder}/{path.stem}"
        for folder in ("mechanism", "backtest")
        for path in (REPOSITORY / "spark_history" / "forecast" / folder).glob("[a-z]*.py")
        if path.stem != "spark_buckets"
    ),
    "spark_history/usage_documents",
    "spark_history/fleet_planning",
    "spark_history/decision_replay",
    "spark_history/override_history",
    "spark_history/rollup_manifests",
    "spark_history/prometheus",
    "spark_history/volume_groups",
)
"""``schemas/__main__`` writes the schema files: it is the one shell module of schemas."""

IO_LIBRARIES = {
    "os",
    "time",
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
    "shutil",
    "tempfile",
    "pyspark",
}

CONSUMER_CORE = {f"consumer.{path.split('/')[1]}" for path in PURE_MODULES if "consumer/" in path}
ALLOWED_FROM_CONSUMER_IN_PUBLISHER = CONSUMER_CORE | {"consumer.clock"}

DECLARATIVE_FUNCTIONS = {
    ("consumer/consumer_metrics.py", "__init__"): "the consumer's metric declarations",
    ("publisher/publisher_metrics.py", "__init__"): "the publisher's metric declarations",
    ("deploy/local/local_cluster/broker_config.py", "server_properties"): "broker properties",
}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
    return names


def package_files(*packages: str) -> Iterator[Path]:
    for package in packages:
        yield from sorted((REPOSITORY / package).rglob("*.py"))


@pytest.mark.parametrize("module", [m for m in PURE_MODULES if not m.endswith("__main__")])
def test_pure_modules_do_no_io(module: str) -> None:
    path = REPOSITORY / f"{module}.py"
    for name in imported_modules(path):
        assert name.split(".")[0] not in IO_LIBRARIES, f"{module} imports {name}"
        if not module.startswith("volume_quota/"):
            assert not name.startswith("volume_quota"), f"{module} imports the shell: {name}"
    source = path.read_text()
    assert ".now(" not in source
    assert re.search(r"(?<![\w.])open\(", source) is None, f"{module} opens a file"


def test_schemas_import_no_other_package_of_the_project() -> None:
    for path in package_files("schemas"):
        for name in imported_modules(path):
            assert name.split(".")[0] not in PACKAGES[1:], f"{path} imports {name}"


def test_the_consumer_never_imports_the_publisher_nor_the_shell() -> None:
    for path in package_files("consumer"):
        for name in imported_modules(path):
            assert name.split(".")[0] not in {"publisher", "volume_quota"}, f"{path}: {name}"


def test_the_publisher_imports_only_the_consumers_core_and_never_the_shell() -> None:
    for path in package_files("publisher"):
        for name in imported_modules(path):
            top = name.split(".")[0]
            assert top != "volume_quota", f"{path} imports the shell: {name}"
            if top == "consumer":
                assert name in ALLOWED_FROM_CONSUMER_IN_PUBLISHER, f"{path} imports {name}"


SHELL_COMMAND_LINE = ("volume_quota.arguments", "volume_quota.cli", "volume_quota.commands")
"""The application shell's argparse layer: the history job takes its options from the shared
settings models (``volume_quota.config``) instead, so every command spells a flag the same way."""


def test_the_history_job_does_not_import_the_shells_command_line() -> None:
    for path in package_files("spark_history"):
        for name in imported_modules(path):
            assert not any(
                name == module or name.startswith(module + ".") for module in SHELL_COMMAND_LINE
            ), f"{path.relative_to(REPOSITORY)} imports {name}"


def test_the_production_import_path_does_not_need_the_test_cluster() -> None:
    for path in package_files(*PACKAGES):
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only: a lazy import inside a function is fine
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                assert not any(n.startswith("local_cluster") for n in names), path


@pytest.mark.parametrize("package", [*PACKAGES, "deploy/local/local_cluster"])
def test_no_module_over_400_lines(package: str) -> None:
    for path in package_files(package):
        lines = path.read_text().count("\n")
        assert lines <= 400, f"{path.relative_to(REPOSITORY)} has {lines} lines"


@pytest.mark.parametrize("package", [*PACKAGES, "deploy/local/local_cluster"])
def test_no_function_over_60_lines(package: str) -> None:
    for path in package_files(package):
        relative = str(path.relative_to(REPOSITORY))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if (relative, node.name) in DECLARATIVE_FUNCTIONS:
                continue
            assert length <= 60, f"{relative}: {node.name} has {length} lines"


JAVA_SOURCES = (
    REPOSITORY / "deploy/broker-plugin/src/main",
    REPOSITORY / "tests/kafka_quota_suite/src",
)
JAVA_NOT_METHODS = {"if", "for", "while", "switch", "catch", "synchronized", "try", "do", "else"}
JAVA_NOT_METHOD_WORDS = re.compile(r"\b(class|interface|enum|record|new)\b|->|=")
JAVA_ANNOTATION = re.compile(r"@[\w.]+(\s*\([^()]*\))?")
JAVA_SIGNATURE = re.compile(r"(\w+)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*(throws\s+[\w.,\s<>]+)?$")


def java_code_only(source: str) -> str:
    """The source with comments, strings, text blocks and chars blanked; newlines kept."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        if source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
        elif source.startswith('"""', i):
            end = source.find('"""', i + 3)
            end = n if end < 0 else end + 3
        elif source[i] in "\"'":
            end = i + 1
            while end < n and source[end] != source[i]:
                end += 2 if source[end] == "\\" else 1
            end = min(end + 1, n)
        else:
            out.append(source[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", source[i:end]))
        i = end
    return "".join(out)


def java_methods(source: str) -> list[tuple[str, int]]:
    """(name, lines) of every method and constructor: from its name's line to its closing brace."""
    code = java_code_only(source)
    methods: list[tuple[str, int]] = []
    for position, char in enumerate(code):
        if char != "{":
            continue
        header_start = max(code.rfind(c, 0, position) for c in ";{}") + 1
        header = JAVA_ANNOTATION.sub(" ", code[header_start:position]).strip()
        signature = JAVA_SIGNATURE.search(header)
        if signature is None or signature.group(1) in JAVA_NOT_METHODS:
            continue
        if JAVA_NOT_METHOD_WORDS.search(header):
            continue
        depth, end = 0, position
        for end in range(position, len(code)):
            depth += {"{": 1, "}": -1}.get(code[end], 0)
            if depth == 0:
                break
        name = re.compile(rf"\b{signature.group(1)}\s*\(")
        name_at = [m.start() for m in name.finditer(code, header_start, position)][-1]
        first_line = code.count("\n", 0, name_at) + 1
        methods.append((signature.group(1), code.count("\n", 0, end) + 1 - first_line + 1))
    return methods


def java_files() -> Iterator[Path]:
    for root in JAVA_SOURCES:
        yield from sorted(root.rglob("*.java"))


def test_the_java_reader_skips_strings_chars_and_comments() -> None:
    source = (
        "class A {\n"
        "    String braces() {\n"
        "        String s = \"{ not a block }\"; char c = '{'; // } a comment\n"
        "        /* { */ return s + c;\n"
        "    }\n"
        "}\n"
    )
    assert java_methods(source) == [("braces", 4)]


def test_the_java_reader_counts_a_lambda_inside_its_method_and_not_as_one() -> None:
    source = (
        "class A {\n"
        "    @Override\n"
        "    public void run(Map<String, Integer> map) throws IOException {\n"
        "        map.forEach((k, v) -> {\n"
        "            System.out.println(k);\n"
        "        });\n"
        "        if (map.isEmpty()) {\n"
        "            return;\n"
        "        }\n"
        "    }\n"
        "}\n"
    )
    assert java_methods(source) == [("run", 8)]


def test_the_java_reader_finds_methods_of_nested_classes_and_constructors() -> None:
    source = (
        "final class Outer {\n"
        "    Outer(int a) {\n"
        "        this.a = a;\n"
        "    }\n"
        "    static final class Inner {\n"
        "        private record R(int x) {\n"
        "        }\n"
        "        int twice(\n"
        "                int x) {\n"
        "            return new Object() {\n"
        "                int id() { return 2; }\n"
        "            }.id() * x;\n"
        "        }\n"
        "    }\n"
        "}\n"
    )
    assert java_methods(source) == [("Outer", 3), ("twice", 6), ("id", 1)]


def test_no_java_file_over_400_lines() -> None:
    too_long = [
        f"{path.relative_to(REPOSITORY)} has {lines} lines"
        for path in java_files()
        if (lines := path.read_text().count("\n")) > 400
    ]
    assert not too_long


def test_no_java_method_over_60_lines() -> None:
    too_long = [
        f"{path.relative_to(REPOSITORY)}: {name} has {lines} lines"
        for path in java_files()
        for name, lines in java_methods(path.read_text())
        if lines > 60
    ]
    assert not too_long
