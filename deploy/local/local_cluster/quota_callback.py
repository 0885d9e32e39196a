"""Brokers with volume-quota's PRODUCE quota callback (deploy/broker-plugin) loaded.

The callback reads each broker's decision file and maps OPEN / THROTTLE / PAUSE to a quota per
principal between ``base`` and ``pause`` bytes/s (docs/broker-plugin.md). The jar path and
both rates are parameters, so tests and benchmarks outside this package can start such a
cluster::

    cluster = callback_cluster(
        tmp / "kafka", [tmp / f"decision-{i}.json" for i in range(3)], plugin_jar,
        base_bytes_per_second=10 * MIB, pause_bytes_per_second=256 * KIB,
    )
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from local_cluster.cluster import LocalKafkaCluster
from local_cluster.errors import LocalClusterError

CALLBACK_CLASS = "io.volumequota.broker.VolumeQuotaCallback"
DEFAULT_EXCLUDED = ("User:publisher", "User:consumer")
"""Never throttled: the volume-quota identities. ``admin`` is not excluded by default."""


def callback_properties(
    decision_file: Path,
    *,
    base_bytes_per_second: int,
    pause_bytes_per_second: int,
    excluded_principals: Sequence[str] = DEFAULT_EXCLUDED,
    on_missing: str = "PAUSE",
    reload_interval_ms: int = 250,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Broker properties that load the callback reading ``decision_file``.

    Retention is checked every second, so that producers cannot fill small test volumes.
    """
    if not 0 < pause_bytes_per_second <= base_bytes_per_second:
        raise LocalClusterError(
            f"need 0 < pause ({pause_bytes_per_second}) <= base ({base_bytes_per_second})"
        )
    return {
        "client.quota.callback.class": CALLBACK_CLASS,
        "volume.quota.decision.path": str(decision_file),
        "volume.quota.produce.base.bytes.per.second": str(base_bytes_per_second),
        "volume.quota.pause.bytes.per.second": str(pause_bytes_per_second),
        "volume.quota.excluded.principals": ";".join(excluded_principals),
        "volume.quota.on.missing": on_missing,
        "volume.quota.reload.interval.ms": str(reload_interval_ms),
        "log.retention.check.interval.ms": "1000",
        "log.segment.delete.delay.ms": "1000",
        **(extra or {}),
    }


def callback_cluster(
    base_dir: Path,
    decision_files: Sequence[Path],
    plugin_jar: Path,
    *,
    base_bytes_per_second: int,
    pause_bytes_per_second: int,
    excluded_principals: Sequence[str] = DEFAULT_EXCLUDED,
    callback_extra: Mapping[str, str] | None = None,
    **cluster_options: Any,
) -> LocalKafkaCluster:
    """A (not yet started) cluster of ``len(decision_files)`` nodes, node i's callback reading
    ``decision_files[i]``, with ``plugin_jar`` on the classpath. ``cluster_options`` go to
    :class:`LocalKafkaCluster` (``log_dirs``, ``heap``, ...)."""
    if not plugin_jar.exists():
        raise LocalClusterError(
            f"{plugin_jar} is missing: build it with `mvn -q -B package` in deploy/broker-plugin"
        )
    properties = [
        callback_properties(
            path,
            base_bytes_per_second=base_bytes_per_second,
            pause_bytes_per_second=pause_bytes_per_second,
            excluded_principals=excluded_principals,
            extra=callback_extra,
        )
        for path in decision_files
    ]
    extra_classpath = [plugin_jar, *cluster_options.pop("extra_classpath", ())]
    return LocalKafkaCluster(
        base_dir,
        broker_count=len(decision_files),
        per_broker_properties=properties,
        extra_classpath=extra_classpath,
        **cluster_options,
    )
