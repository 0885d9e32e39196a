"""Fetch the pinned Kafka broker jars with Maven into a per-version cache directory.

Why Maven and not a Kafka tarball: the only artifact source reachable from CI and developer
machines is the Maven repository, reached through the ordinary ``mvn`` client. The POM in
``deploy/local/kafka-jars/pom.xml`` is the single source of truth for the Kafka version.
"""

from __future__ import annotations

import re
from pathlib import Path

from local_cluster.errors import LocalClusterError
from volume_quota.maven_cache import MavenFetchError, cache_root, fetch_dependencies

POM_PATH = Path(__file__).resolve().parent.parent / "kafka-jars" / "pom.xml"
CACHE_ENV = "VOLUME_QUOTA_KAFKA_CACHE"
"""Environment variable replacing the cache root ``~/.cache/volume-quota`` for these jars."""

_VERSION_PROPERTY = re.compile(r"<kafka\.version>\s*([^<\s]+)\s*</kafka\.version>")


def kafka_version(pom: Path = POM_PATH) -> str:
    """The Kafka version pinned in the POM (its ``kafka.version`` property)."""
    match = _VERSION_PROPERTY.search(_read_pom(pom))
    if match is None:
        raise LocalClusterError(f"{pom} has no <kafka.version> property")
    return match.group(1)


def default_jars_dir(pom: Path = POM_PATH, version: str | None = None) -> Path:
    """``<cache root>/kafka-<version>/libs`` (``version`` defaults to the POM's); the root is
    ``$VOLUME_QUOTA_KAFKA_CACHE`` if set, else ``~/.cache/volume-quota``."""
    return cache_root(CACHE_ENV) / f"kafka-{version or kafka_version(pom)}" / "libs"


def ensure_kafka_jars(
    target: Path | None = None, pom: Path = POM_PATH, version: str | None = None
) -> Path:
    """Return a directory holding the broker's runtime jars, downloading them if needed
    (once per POM and version; see :mod:`volume_quota.maven_cache`).

    ``version`` fetches another Kafka release than the POM's pinned one (e.g. to check that
    the quota callback loads on an older broker); each version has its own cache directory.
    """
    if version == kafka_version(pom):
        version = None
    libs = target if target is not None else default_jars_dir(pom, version)
    properties = () if version is None else (("kafka.version", version),)
    try:
        return fetch_dependencies(
            pom, libs, properties=properties, expected_globs=(f"kafka_2.13-{version or ''}*.jar",)
        )
    except MavenFetchError as error:
        raise LocalClusterError(f"cannot fetch the Kafka jars: {error}") from None


def _read_pom(pom: Path) -> str:
    try:
        return pom.read_text()
    except OSError as exc:
        raise LocalClusterError(f"cannot read the Kafka jar list {pom}: {exc}") from exc
