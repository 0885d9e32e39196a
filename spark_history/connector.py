"""Fetch Spark's Kafka source (``spark-sql-kafka-0-10``) with Maven into a per-version cache.

Why Maven and not ``--packages``: Spark's own resolver (Ivy) would need network settings of its
own on every machine, while ``mvn`` is already set up to reach the artifact repository here.
The POM beside this module names the connector; the version must equal the Spark runtime's,
so it is passed from the installed pyspark. Only the connector, its token provider,
kafka-clients and commons-pool2 are copied: everything else the connector depends on is
already in pyspark's own ``jars/`` and a second copy on the classpath only invites conflicts.

The cache directory is complete when its marker file holds the digest of the POM and the
version; an interrupted download is redone, concurrent callers wait on a file lock.
"""

# ruff: noqa: PLC0415 - pyspark is imported only to read its version

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from spark_history.errors import HistoryUsageError

POM_PATH = Path(__file__).resolve().parent / "kafka-connector" / "pom.xml"
CACHE_ENV = "VOLUME_QUOTA_SPARK_KAFKA_CACHE"
"""Environment variable replacing the cache root ``~/.cache/volume-quota``."""

CONNECTOR_ARTIFACTS: tuple[str, ...] = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)
_MARKER = ".complete"
_MVN_TIMEOUT_S = 900


def spark_version() -> str:
    """The version of the installed pyspark, which the connector must match exactly."""
    import pyspark

    version: str = pyspark.__version__
    return version


def default_cache_dir(version: str) -> Path:
    root_override = os.environ.get(CACHE_ENV)
    root = (
        Path(root_override).expanduser()
        if root_override
        else (Path.home() / ".cache" / "volume-quota")
    )
    return root / f"spark-kafka-{version}"


def ensure_connector_jars(version: str | None = None, target: Path | None = None) -> list[Path]:
    """The connector's jars for Spark ``version``, downloading them once if needed."""
    version = version or spark_version()
    directory = target or default_cache_dir(version)
    digest = hashlib.sha256(POM_PATH.read_bytes() + version.encode()).hexdigest()
    if not _is_complete(directory, digest):
        mvn = shutil.which("mvn")
        if mvn is None:
            raise HistoryUsageError(
                "mvn (Apache Maven) not found on PATH: it is needed once to fetch Spark's "
                "Kafka connector (or pass --conf spark.jars=... yourself)"
            )
        directory.parent.mkdir(parents=True, exist_ok=True)
        with open(directory.parent / f".{directory.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _is_complete(directory, digest):
                staging = directory.with_name(directory.name + ".partial")
                shutil.rmtree(staging, ignore_errors=True)
                _copy_dependencies(mvn, version, staging)
                (staging / _MARKER).write_text(digest + "\n")
                shutil.rmtree(directory, ignore_errors=True)
                staging.rename(directory)
    return sorted(directory.glob("*.jar"))


def _is_complete(directory: Path, digest: str) -> bool:
    marker = directory / _MARKER
    return marker.is_file() and marker.read_text().strip() == digest


def _copy_dependencies(mvn: str, version: str, output: Path) -> None:
    command = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(POM_PATH),
        "dependency:copy-dependencies",
        f"-Dspark.version={version}",
        "-DincludeScope=runtime",
        f"-DincludeArtifactIds={','.join(CONNECTOR_ARTIFACTS)}",
        f"-DoutputDirectory={output}",
    ]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise HistoryUsageError(
            f"fetching the Spark Kafka connector {version} with mvn took over {_MVN_TIMEOUT_S} s"
        ) from None
    if result.returncode != 0:
        errors = [line for line in (result.stdout + result.stderr).splitlines() if "ERROR" in line]
        detail = errors[0] if errors else f"mvn exited with {result.returncode}"
        raise HistoryUsageError(
            f"cannot fetch the Spark Kafka connector {version} with mvn: {detail[:300]}"
        )
    missing = [name for name in CONNECTOR_ARTIFACTS if not list(output.glob(f"{name}-*.jar"))]
    if missing:
        raise HistoryUsageError(f"mvn did not copy {', '.join(missing)} for Spark {version}")
