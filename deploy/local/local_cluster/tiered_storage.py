"""Tiered storage for the local cluster, with Kafka's own ``LocalTieredStorage`` as the remote
store: a ``RemoteStorageManager`` that keeps the "remote" segments in a local directory. It
ships only in the storage module's test jar (``org.apache.kafka:kafka-storage:<version>:test``),
fetched with Maven once per Kafka version into the cache (``deploy/local/tiered-storage-jars``).

The broker loads it from ``remote.log.storage.manager.class.path`` (its own class loader), keeps
the remote log metadata in the default topic-based manager, ``__remote_log_metadata``, whose
clients reach the INTERNAL listener with the broker's own certificate (a super user), and checks
for segments to upload and to delete every second, from a second after start (Kafka's defaults
are 30 s, 5 min and 30 s: made for production, not for a test that must see a segment uploaded
and deleted locally within seconds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from local_cluster.broker_config import INTERNAL_LISTENER
from local_cluster.errors import LocalClusterError
from local_cluster.jars import CACHE_ENV, kafka_version
from local_cluster.pki import ClusterPki, broker_identity
from volume_quota.maven_cache import MavenFetchError, cache_root, fetch_dependencies

POM_PATH = Path(__file__).resolve().parent.parent / "tiered-storage-jars" / "pom.xml"
STORAGE_MANAGER_CLASS = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
STORAGE_PREFIX = "rsm.config."
"""``remote.log.storage.manager.impl.prefix``'s default, said explicitly."""
METADATA_PREFIX = "rlmm.config."
"""``remote.log.metadata.manager.impl.prefix``'s default."""
METADATA_CLIENT = METADATA_PREFIX + "remote.log.metadata.common.client."
TASK_INTERVAL_MS = 1000


def ensure_tiered_storage_jar(version: str | None = None) -> Path:
    """The ``kafka-storage-<version>-test.jar`` holding ``LocalTieredStorage`` (``version``
    defaults to the broker POM's), fetched once into ``<cache>/kafka-<version>/tiered-storage``."""
    version = version or kafka_version()
    directory = cache_root(CACHE_ENV) / f"kafka-{version}" / "tiered-storage"
    pattern = f"kafka-storage-{version}-test.jar"
    try:
        fetch_dependencies(
            POM_PATH,
            directory,
            properties=(("kafka.version", version),),
            expected_globs=(pattern,),
        )
    except MavenFetchError as error:
        raise LocalClusterError(f"cannot fetch LocalTieredStorage: {error}") from None
    return directory / pattern


def tiered_storage_properties(
    *,
    jar: Path,
    remote_dir: Path,
    keystore: Path,
    truststore: Path,
    replication_factor: int,
) -> dict[str, str]:
    """A node's properties for tiered storage into ``remote_dir`` (shared by every node: the
    store is one directory, as a bucket is one bucket)."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": STORAGE_MANAGER_CLASS,
        "remote.log.storage.manager.class.path": str(jar),
        "remote.log.storage.manager.impl.prefix": STORAGE_PREFIX,
        STORAGE_PREFIX + "dir": str(remote_dir),
        STORAGE_PREFIX + "delete.on.close": "false",
        "remote.log.metadata.manager.listener.name": INTERNAL_LISTENER,
        "remote.log.metadata.manager.impl.prefix": METADATA_PREFIX,
        METADATA_PREFIX + "remote.log.metadata.topic.replication.factor": str(replication_factor),
        METADATA_PREFIX + "remote.log.metadata.topic.num.partitions": "3",
        METADATA_CLIENT + "ssl.keystore.type": "PEM",
        METADATA_CLIENT + "ssl.keystore.location": str(keystore),
        METADATA_CLIENT + "ssl.truststore.type": "PEM",
        METADATA_CLIENT + "ssl.truststore.location": str(truststore),
        "remote.log.manager.task.interval.ms": str(TASK_INTERVAL_MS),
        "log.retention.check.interval.ms": str(TASK_INTERVAL_MS),
        "log.initial.task.delay.ms": str(TASK_INTERVAL_MS),
    }


def with_tiered_storage(
    own_properties: Sequence[Mapping[str, str]], pki: ClusterPki, remote_dir: Path
) -> list[dict[str, str]]:
    """Each node's own properties on top of its tiered storage properties (the jar fetched if
    needed): what ``LocalKafkaCluster(tiered_storage_dir=...)`` starts its nodes with."""
    jar = ensure_tiered_storage_jar()
    nodes = []
    for index, own in enumerate(own_properties):
        identity = pki.identity(broker_identity(index))
        tiered = tiered_storage_properties(
            jar=jar,
            remote_dir=remote_dir,
            keystore=identity.keystore,
            truststore=identity.ca,
            replication_factor=min(3, len(own_properties)),
        )
        nodes.append({**tiered, **own})
    return nodes
