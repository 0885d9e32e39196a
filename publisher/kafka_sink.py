"""Sending snapshot messages with a confluent-kafka ``Producer`` that can be rebuilt.

librdkafka reads the TLS files only when a client is created, so a certificate rotation needs a
new producer: ``rebuild`` flushes the old one briefly and creates a fresh one from the same
configuration. A fatal client error (``error.fatal()``, e.g. a fenced idempotent producer) also
asks for a rebuild.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from consumer.bootstrap_rotation import ClusterView, cluster_view, next_bootstrap
from publisher.publication_core import ClientIssue

DeliveryCallback = Callable[[str | None], None]
"""Called with None when the message was delivered, else a description of the failure."""

ClientIssueCallback = Callable[[ClientIssue], None]

DISCONNECTING_ERRORS = frozenset(
    {KafkaError._ALL_BROKERS_DOWN, KafkaError._AUTHENTICATION, KafkaError._SSL}
)
"""Client errors after which Kafka counts as unreachable until a delivery succeeds."""


def client_issue(error: KafkaError) -> ClientIssue:
    """librdkafka's error, in the terms the publication core decides on."""
    return ClientIssue(
        name=error.name(),
        detail=error.str(),
        disconnecting=error.code() in DISCONNECTING_ERRORS,
        fatal=error.fatal(),
    )


class SendError(RuntimeError):
    """The producer refused the message outright (queue full, fatal state...)."""


class SnapshotSink(Protocol):
    """Where the publication loop sends messages; Kafka in production, a fake in unit tests."""

    @property
    def needs_rebuild(self) -> bool: ...

    @property
    def bootstrap_servers(self) -> str: ...

    def send(
        self,
        key: bytes,
        value: bytes | None,
        on_result: DeliveryCallback,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None: ...

    def poll(self, timeout_seconds: float) -> None: ...

    def flush(self, timeout_seconds: float) -> int: ...

    def rebuild(self, flush_timeout_seconds: float, elsewhere: bool = False) -> int: ...


class KafkaSnapshotSink:
    def __init__(
        self,
        config: dict[str, Any],
        topic: str,
        on_client_issue: ClientIssueCallback | None = None,
    ) -> None:
        self._config = dict(config)
        self._topic = topic
        self._on_client_issue = on_client_issue
        self._fatal = False
        self._view = ClusterView({}, frozenset())
        self._rebuilds_elsewhere = 0
        self.bootstrap_servers = str(self._config.get("bootstrap.servers", ""))
        self._producer = self._new_producer(self.bootstrap_servers)

    def _new_producer(self, bootstrap_servers: str) -> Producer:
        self._fatal = False
        self.bootstrap_servers = bootstrap_servers
        return Producer(
            {**self._config, "bootstrap.servers": bootstrap_servers, "error_cb": self._client_error}
        )

    def _client_error(self, error: KafkaError) -> None:
        if error.fatal():
            self._fatal = True
        if self._on_client_issue is not None:
            self._on_client_issue(client_issue(error))

    @property
    def needs_rebuild(self) -> bool:
        return self._fatal

    def send(
        self,
        key: bytes,
        value: bytes | None,
        on_result: DeliveryCallback,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        def report(error: KafkaError | None, _message: Message) -> None:
            on_result(None if error is None else f"{error.name()}: {error.str()}")

        try:
            self._producer.produce(
                self._topic, key=key, value=value, headers=list(headers), on_delivery=report
            )
        except (BufferError, KafkaException) as error:
            raise SendError(str(error)) from None

    def poll(self, timeout_seconds: float) -> None:
        try:
            self._producer.poll(timeout_seconds)
        except KafkaException:
            # A producer in a fatal state raises here; it will be rebuilt (needs_rebuild).
            self._fatal = True

    def flush(self, timeout_seconds: float) -> int:
        """Wait up to ``timeout_seconds`` for outstanding messages; the number still pending."""
        return _flush(self._producer, timeout_seconds)

    def rebuild(self, flush_timeout_seconds: float, elsewhere: bool = False) -> int:
        """Replace the producer (re-reading the TLS files); messages the old one could not
        deliver within ``flush_timeout_seconds`` are abandoned (reported as failed), their
        count returned. ``elsewhere``: bootstrap the new producer from one broker, in turn
        among those that did not lead the topic in the old producer's last metadata
        (``consumer.bootstrap_rotation``); otherwise from the configured servers."""
        old = self._producer
        bootstrap = str(self._config.get("bootstrap.servers", ""))
        if elsewhere:
            with contextlib.suppress(Exception):  # a stuck client may not answer
                view = cluster_view(old.list_topics(self._topic, timeout=1.0), self._topic)
                if view.brokers:
                    self._view = view
            bootstrap = next_bootstrap(self._view, self._rebuilds_elsewhere) or bootstrap
            self._rebuilds_elsewhere += 1
        abandoned = _flush(old, flush_timeout_seconds)
        if abandoned:
            with contextlib.suppress(KafkaException):
                old.purge()
                old.poll(0)
        self._producer = self._new_producer(bootstrap)
        return abandoned


def _flush(producer: Producer, timeout_seconds: float) -> int:
    """``flush`` that does not raise: a producer in a fatal state refuses to flush, and what it
    still holds will never be delivered."""
    try:
        return int(producer.flush(timeout_seconds))
    except KafkaException:
        return len(producer)
