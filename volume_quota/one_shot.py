"""One message and exit: ``publish --once`` (one snapshot) and ``retire`` (one tombstone)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import BinaryIO

from consumer.clock import Clock, SystemClock
from publisher.kafka_sink import KafkaSnapshotSink, SendError, SnapshotSink
from publisher.snapshot_building import build_snapshot
from publisher.topic_requirements import TopicRequirements
from publisher.topic_setup import TopicOutcome, check_topic, new_admin_client
from publisher.volume_measurement import measure_volumes
from schemas.override import OVERRIDE_KEY
from schemas.snapshot import VolumeSnapshot, snapshot_key
from volume_quota.certificate_files import load_signer
from volume_quota.config import PublishSettings
from volume_quota.config.commands import ConnectedSettings
from volume_quota.daemons.publisher import discover_configured_volumes
from volume_quota.errors import UsageError
from volume_quota.kafka_client_config import admin_config, producer_config
from volume_quota.logging_setup import with_client_logger


class PublicationFailedError(RuntimeError):
    """Kafka did not take the message; the command exits with status 1."""


def measure_snapshot(settings: PublishSettings, clock: Clock | None = None) -> VolumeSnapshot:
    clock = clock or SystemClock()
    broker_id = settings.required_broker_id()
    volumes = discover_configured_volumes(settings)
    return build_snapshot(
        broker_id, measure_volumes(volumes), settings.soft_limit, settings.hard_limit, clock.wall()
    )


def print_snapshot(settings: PublishSettings, output: BinaryIO) -> None:
    output.write(measure_snapshot(settings).to_json_bytes() + b"\n")
    output.flush()


def publish_snapshot_once(settings: PublishSettings) -> VolumeSnapshot:
    snapshot = measure_snapshot(settings)
    _send_after_topic_check(
        settings, snapshot_key(snapshot.broker_id), snapshot.to_json_bytes(), create_topic=None
    )
    return snapshot


def retire_broker(settings: PublishSettings) -> int:
    """Write a tombstone for the broker: compaction then forgets it, and consumers stop counting
    its last snapshot. Returns the broker id retired."""
    broker_id = settings.required_broker_id()
    _send_after_topic_check(settings, snapshot_key(broker_id), None, create_topic=False)
    return broker_id


def _send_after_topic_check(
    settings: PublishSettings, key: bytes, value: bytes | None, create_topic: bool | None
) -> None:
    connection = settings.required_kafka_connection()
    broker_id = settings.required_broker_id()
    timeout = settings.delivery_timeout
    admin = new_admin_client(with_client_logger(admin_config(connection, broker_id)))
    create = settings.create_topic if create_topic is None else create_topic
    check = check_topic(admin, settings.topic_requirements(), create, timeout)
    if check.outcome is TopicOutcome.MISCONFIGURED:
        raise UsageError(check.detail)
    if check.outcome is not TopicOutcome.READY:
        raise PublicationFailedError(check.detail)
    sink = KafkaSnapshotSink(
        with_client_logger(producer_config(connection, broker_id, timeout)), settings.topic
    )
    # Signed like the daemon's snapshots: a consumer that requires signatures must be able to
    # tell this message (a tombstone above all) from a forgery.
    headers = signature_headers(settings, key, value)
    error = send_and_wait(sink, key, value, timeout + 5.0, headers)
    if error is not None:
        raise PublicationFailedError(error)


def signature_headers(
    settings: ConnectedSettings, key: bytes, value: bytes | None
) -> list[tuple[str, bytes]]:
    """Headers signing the message with the client certificate's key; none (unsigned) when
    the connection has no certificate (SASL_SSL alone)."""
    files = settings.client_tls_files()
    return [] if files is None else load_signer(files).headers(key, value)


def send_and_wait(
    sink: SnapshotSink,
    key: bytes,
    value: bytes | None,
    timeout_seconds: float,
    headers: list[tuple[str, bytes]] | None = None,
) -> str | None:
    """Send one message and wait for its delivery report; None when delivered."""
    outcome: list[str | None] = []
    reported = threading.Event()

    def on_result(error: str | None) -> None:
        outcome.append(error)
        reported.set()

    try:
        sink.send(key, value, on_result, headers or [])
    except SendError as error:
        return f"refused by the producer: {error}"
    deadline = time.monotonic() + timeout_seconds
    while not reported.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return f"no delivery report within {timeout_seconds:g}s"
        sink.flush(min(remaining, 1.0))
    return outcome[0]


@dataclass(frozen=True, slots=True)
class OverrideTopicRequirements(TopicRequirements):
    """The override topic: compacted like the others, and every record stamped with the
    broker's clock (``LogAppendTime``), the arrival a decider checks an override's ``setAt``
    against; with ``CreateTime`` the writer would choose it."""

    def creation_config(self) -> dict[str, str]:
        return {**TopicRequirements.creation_config(self), **OVERRIDE_TOPIC_TIMESTAMPS}


OVERRIDE_TOPIC_TIMESTAMPS = {"message.timestamp.type": "LogAppendTime"}


def write_override(settings: ConnectedSettings, value: bytes | None) -> None:
    """Write the override record (or its tombstone) to the override topic, signed with the
    client certificate's key, creating the compacted topic (``LogAppendTime``) when missing;
    ``PublicationFailedError`` when Kafka does not take it."""
    connection = settings.required_kafka_connection()
    timeout = settings.delivery_timeout
    admin = new_admin_client(with_client_logger(admin_config(connection, 0)))
    requirements = OverrideTopicRequirements(name=settings.override_topic)
    check = check_topic(admin, requirements, value is not None, timeout)
    if check.outcome is TopicOutcome.MISCONFIGURED:
        raise UsageError(check.detail)
    if check.outcome is not TopicOutcome.READY:
        raise PublicationFailedError(check.detail)
    sink = KafkaSnapshotSink(
        with_client_logger(producer_config(connection, 0, timeout)), settings.override_topic
    )
    headers = signature_headers(settings, OVERRIDE_KEY, value)
    error = send_and_wait(sink, OVERRIDE_KEY, value, timeout + 5.0, headers)
    if error is not None:
        raise PublicationFailedError(error)
