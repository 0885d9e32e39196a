"""Fetch the pinned Kafka broker jars with Maven into a per-version cache directory.

Why Maven and not a Kafka tarball: the only artifact source reachable from CI and developer
machines is the Maven repository, reached through the ordinary ``mvn`` client. The POM in
``deploy/local/kafka-jars/pom.xml`` is the single source of truth for the Kafka version.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from local_cluster.errors import LocalClusterError

POM_PATH = Path(__file__).resolve().parent.parent / "kafka-jars" / "pom.xml"
CACHE_ENV = "VOLUME_QUOTA_KAFKA_CACHE"
"""Environment variable replacing the cache root ``~/.cache/volume-quota``."""

_MARKER = ".complete"
_MVN_TIMEOUT_S = 900
_VERSION_PROPERTY = re.compile(r"<kafka\.version>\s*([^<\s]+)\s*</kafka\.version>")


def kafka_version(pom: Path = POM_PATH) -> str:
    """The Kafka version pinned in the POM (its ``kafka.version`` property)."""
    match = _VERSION_PROPERTY.search(_read_pom(pom))
    if match is None:
        raise LocalClusterError(f"{pom} has no <kafka.version> property")
    return match.group(1)


def default_jars_dir(pom: Path = POM_PATH) -> Path:
    """``<cache root>/kafka-<version>/libs``; the root is ``$VOLUME_QUOTA_KAFKA_CACHE``
    if set, else ``~/.cache/volume-quota``."""
    root_override = os.environ.get(CACHE_ENV)
    root = (
        Path(root_override).expanduser()
        if root_override
        else Path.home() / ".cache" / "volume-quota"
    )
    return root / f"kafka-{kafka_version(pom)}" / "libs"


def ensure_kafka_jars(target: Path | None = None, pom: Path = POM_PATH) -> Path:
    """Return a directory holding the broker's runtime jars, downloading them if needed.

    The copy runs only when the directory lacks a marker matching the current POM, so a
    changed POM refreshes the cache and an interrupted download is redone. Maven copies into
    a sibling staging directory that replaces ``target`` only on success; a file lock makes
    concurrent callers (parallel test processes) wait for one download instead of racing.
    """
    libs = target if target is not None else default_jars_dir(pom)
    pom_digest = hashlib.sha256(_read_pom(pom).encode()).hexdigest()
    if _is_complete(libs, pom_digest):
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LocalClusterError(
            "mvn (Apache Maven) not found on PATH; it is needed once to fetch the Kafka jars"
        )
    libs.parent.mkdir(parents=True, exist_ok=True)
    with open(libs.parent / ".libs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(libs, pom_digest):
            return libs
        staging = libs.with_name(libs.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        _copy_dependencies(mvn, pom, staging)
        (staging / _MARKER).write_text(pom_digest + "\n")
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
    return libs


def _is_complete(libs: Path, pom_digest: str) -> bool:
    marker = libs / _MARKER
    return marker.is_file() and marker.read_text().strip() == pom_digest


def _read_pom(pom: Path) -> str:
    try:
        return pom.read_text()
    except OSError as exc:
        raise LocalClusterError(f"cannot read the Kafka jar list {pom}: {exc}") from exc


def _copy_dependencies(mvn: str, pom: Path, output: Path) -> None:
    command = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={output}",
        "-DincludeScope=runtime",
    ]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise LocalClusterError(
            f"mvn did not finish fetching the Kafka jars within {_MVN_TIMEOUT_S}s"
        ) from exc
    if result.returncode != 0:
        output_tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise LocalClusterError(
            f"mvn failed to fetch the Kafka jars (exit {result.returncode}):\n{output_tail}"
        )
    if not any(output.glob("kafka_2.13-*.jar")):
        raise LocalClusterError(f"mvn finished but {output} holds no kafka_2.13 jar")
