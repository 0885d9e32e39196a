"""Measuring every live broker through the Admin API, for a cluster-level publisher (shell).

Each survey asks the cluster for its live brokers, then each broker for its log dirs
(DescribeLogDirs with total and usable bytes, KIP-827; no partitions listed), and turns the
answers into volumes (``log_dir_volumes``). A broker that does not answer is left out of the
survey: it gets no new snapshot, and freshness and the on-missing action apply as usual.

librdkafka has no DescribeLogDirs, so this edge uses kafka-python's admin client.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import structlog

from publisher.log_dir_volumes import LogDirReport, volumes_from_log_dirs
from publisher.volumes import VolumeLimitOverride, VolumeMeasurement

log = structlog.get_logger(logger_name="volume_quota.publisher")


class LogDirAdmin(Protocol):
    """The two calls used of kafka-python's ``KafkaAdminClient``."""

    def describe_cluster(self) -> dict[str, Any]: ...

    def describe_log_dirs(
        self, topic_partitions: Any = ..., brokers: list[int] | None = ...
    ) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


class LogDirSurvey:
    def __init__(
        self,
        admin_factory: Callable[[], LogDirAdmin],
        overrides: Sequence[VolumeLimitOverride] = (),
    ) -> None:
        self._admin_factory = admin_factory
        self._admin: LogDirAdmin | None = None
        self._overrides = list(overrides)
        self._failing: set[int] = set()
        self._stale_client = False

    def measure(self) -> dict[int, list[VolumeMeasurement]]:
        """Each answering broker's volumes; raises ``OSError`` when the cluster cannot be
        asked at all (the loop counts it as a failed sample)."""
        admin = self._client()
        try:
            cluster = admin.describe_cluster()
        except Exception as error:
            self._drop_client()
            raise OSError(f"cannot learn the live brokers: {error}") from error
        brokers = sorted(
            int(broker["broker_id"])
            for broker in cluster.get("brokers", [])
            if not broker.get("is_fenced", False)
        )
        measured = {}
        for broker_id in brokers:
            volumes = self._measure_broker(admin, broker_id)
            if volumes is not None:
                measured[broker_id] = volumes
        if self._stale_client:
            self._drop_client()
        return measured

    def close(self) -> None:
        self._drop_client()

    def _measure_broker(self, admin: LogDirAdmin, broker_id: int) -> list[VolumeMeasurement] | None:
        try:
            (answer,) = admin.describe_log_dirs(topic_partitions=[], brokers=[broker_id])
            reports = [_report(entry) for entry in answer["log_dirs"]]
            volumes = volumes_from_log_dirs(reports, self._overrides)
        except Exception as error:  # one broker's trouble must not stop the others
            if broker_id not in self._failing:
                log.warning("broker not measured", broker_id=broker_id, error=str(error))
            self._failing.add(broker_id)
            # The client's cached metadata may no longer know a restarted broker (kafka-python
            # answers UnknownBrokerIdError from then on): start from fresh metadata next survey.
            self._stale_client = True
            return None
        if broker_id in self._failing:
            log.info("broker measured again", broker_id=broker_id)
            self._failing.discard(broker_id)
        return volumes

    def _client(self) -> LogDirAdmin:
        if self._admin is None:
            try:
                self._admin = self._admin_factory()
            except Exception as error:
                raise OSError(f"cannot reach Kafka: {error}") from error
        return self._admin

    def _drop_client(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception as error:  # a broken client is dropped either way
                log.debug("closing the admin client failed", error=str(error))
            self._admin = None
        self._stale_client = False


def _report(entry: dict[str, Any]) -> LogDirReport:
    error_code = int(entry.get("error_code", 0))
    return LogDirReport(
        path=str(entry["log_dir"]),
        error=None if error_code == 0 else f"Kafka error code {error_code}",
        total_bytes=int(entry.get("total_bytes", -1)),
        usable_bytes=int(entry.get("usable_bytes", -1)),
    )
