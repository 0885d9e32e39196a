"""Fetch Spark's Kafka source (``spark-sql-kafka-0-10``) with Maven into a per-version cache.

Why Maven and not ``--packages``: Spark's own resolver (Ivy) would need network settings of its
own on every machine, while ``mvn`` is already set up to reach the artifact repository here.
The POM beside this module names the connector; the version must equal the Spark runtime's,
so it is passed from the installed pyspark. Only the connector, its token provider,
kafka-clients and commons-pool2 are copied: everything else the connector depends on is
already in pyspark's own ``jars/`` and a second copy on the classpath only invites conflicts.

The cache directory is managed by :mod:`volume_quota.maven_cache` (complete or fetched again).
"""

# ruff: noqa: PLC0415 - pyspark is imported only to read its version

from __future__ import annotations

from pathlib import Path

from spark_history.errors import HistoryUsageError
from volume_quota.maven_cache import MavenFetchError, cache_root, fetch_dependencies

POM_PATH = Path(__file__).resolve().parent / "kafka-connector" / "pom.xml"
CACHE_ENV = "VOLUME_QUOTA_SPARK_KAFKA_CACHE"
"""Environment variable replacing the cache root ``~/.cache/volume-quota``."""

CONNECTOR_ARTIFACTS: tuple[str, ...] = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)


def spark_version() -> str:
    """The version of the installed pyspark, which the connector must match exactly."""
    import pyspark

    version: str = pyspark.__version__
    return version


def default_cache_dir(version: str) -> Path:
    return cache_root(CACHE_ENV) / f"spark-kafka-{version}"


def ensure_connector_jars(version: str | None = None, target: Path | None = None) -> list[Path]:
    """The connector's jars for Spark ``version``, downloading them once if needed."""
    version = version or spark_version()
    directory = target or default_cache_dir(version)
    try:
        fetch_dependencies(
            POM_PATH,
            directory,
            properties=(("spark.version", version),),
            include_artifacts=CONNECTOR_ARTIFACTS,
            expected_globs=tuple(f"{name}-*.jar" for name in CONNECTOR_ARTIFACTS),
        )
    except MavenFetchError as error:
        raise HistoryUsageError(
            f"cannot fetch Spark's Kafka connector {version} (or pass --conf spark.jars=... "
            f"yourself): {error}"
        ) from None
    return sorted(directory.glob("*.jar"))
