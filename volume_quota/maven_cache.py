"""Jars fetched once with Maven into a cache directory that is either complete or absent.

Used for the Kafka broker jars of the local test cluster and for Spark's Kafka connector. Why
Maven: the artifact repository is the one source reachable everywhere this runs, through the
ordinary ``mvn`` client. A directory is complete when its marker holds the fingerprint of what
was asked for (the POM and its parameters); anything else (an interrupted download, a changed
POM) is fetched again. Maven copies into a sibling staging directory that replaces the target
only on success, and a file lock makes concurrent callers wait for one download.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

CACHE_ROOT_ENV = "VOLUME_QUOTA_CACHE_DIR"
"""Environment variable replacing the cache root ``~/.cache/volume-quota``."""

MARKER = ".complete"
MVN_TIMEOUT_SECONDS = 900


class MavenFetchError(Exception):
    """Maven is missing, failed, timed out, or did not copy what was expected; one line."""


def cache_root(override_env: str | None = None) -> Path:
    """``$override_env``, else ``$VOLUME_QUOTA_CACHE_DIR``, else ``~/.cache/volume-quota``."""
    for name in (override_env, CACHE_ROOT_ENV):
        value = os.environ.get(name) if name else None
        if value:
            return Path(value).expanduser()
    return Path.home() / ".cache" / "volume-quota"


def fetch_dependencies(
    pom: Path,
    directory: Path,
    *,
    properties: Sequence[tuple[str, str]] = (),
    include_artifacts: Sequence[str] = (),
    expected_globs: Sequence[str] = (),
) -> Path:
    """``directory`` holding the runtime dependencies of ``pom``, copied once by Maven.

    ``properties`` are passed as ``-Dname=value``; ``include_artifacts`` limits the copy to those
    artifact ids; every pattern of ``expected_globs`` must match a copied file.
    """
    try:
        pom_text = pom.read_bytes()
    except OSError as error:
        raise MavenFetchError(f"cannot read {pom}: {error.strerror or error}") from None
    fingerprint = hashlib.sha256(
        pom_text + repr((sorted(properties), sorted(include_artifacts))).encode()
    ).hexdigest()
    if _is_complete(directory, fingerprint):
        return directory
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenFetchError("mvn (Apache Maven) not found on PATH; it is needed once here")
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".{directory.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(directory, fingerprint):
            return directory
        staging = directory.with_name(directory.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        arguments = [f"-D{name}={value}" for name, value in properties]
        if include_artifacts:
            arguments.append(f"-DincludeArtifactIds={','.join(include_artifacts)}")
        _copy_dependencies(mvn, pom, staging, arguments)
        missing = [pattern for pattern in expected_globs if not any(staging.glob(pattern))]
        if missing:
            raise MavenFetchError(f"mvn did not copy {', '.join(missing)} from {pom}")
        (staging / MARKER).write_text(fingerprint + "\n")
        shutil.rmtree(directory, ignore_errors=True)
        staging.rename(directory)
    return directory


def _is_complete(directory: Path, fingerprint: str) -> bool:
    marker = directory / MARKER
    return marker.is_file() and marker.read_text().strip() == fingerprint


def _copy_dependencies(mvn: str, pom: Path, output: Path, arguments: Sequence[str]) -> None:
    command = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={output}",
        *arguments,
    ]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=MVN_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise MavenFetchError(
            f"mvn did not finish copying the jars of {pom} within {MVN_TIMEOUT_SECONDS} s"
        ) from None
    if result.returncode != 0:
        lines = (result.stdout + result.stderr).strip().splitlines()
        errors = [line for line in lines if "ERROR" in line]
        detail = (errors or lines or [f"exit status {result.returncode}"])[0]
        raise MavenFetchError(f"mvn failed to copy the jars of {pom}: {detail[:300]}")
