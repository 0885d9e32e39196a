"""``volume-quota decide`` as a daemon: the consumer role's shell wiring.

Builds the snapshot reader and Admin client from the settings, runs ``DecisionService`` (read the
topic, learn the live brokers, decide), writes every decision atomically to the decision file for
the broker's quota callback, and serves the consumer's metrics and health. Rotated TLS files, and a
changed signers' CA bundle (``signature_ca_file``), are picked up by rebuilding the Kafka clients
and the signature trust; the cluster state survives the swap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from cryptography import x509
from prometheus_client import CollectorRegistry

from consumer.clock import Clock, SystemClock
from consumer.cluster_state import ClusterState
from consumer.consumer_metrics import ConsumerMetrics, SnapshotAgeCollector
from consumer.decision_file import write_decision_atomically
from consumer.decision_service import (
    LOOKUP_TIMEOUT_SECONDS,
    DecisionService,
    LoopTiming,
    SignaturePolicy,
)
from consumer.live_brokers import describe_live_brokers
from consumer.override_follower import OverrideFollower
from consumer.overrides import OverridePolicy
from consumer.policy import DecisionPolicy
from consumer.signatures import SignatureMode, SignatureTrust
from consumer.snapshot_topic_reader import SnapshotTopicReader
from consumer.usage_follower import UsageFollower
from publisher.health import HealthVerdict
from schemas.decision import QuotaDecision
from schemas.usage import TopicConfigsSection
from volume_quota.certificate_files import FileWatch
from volume_quota.certificate_inspection import (
    CertificateError,
    refusal_of_rotation,
    summarize_certificate,
)
from volume_quota.collector import tune_for_decoding
from volume_quota.config import DecideSettings, StatusSettings
from volume_quota.config.commands import ConnectedSettings
from volume_quota.config.sources import describe_setting
from volume_quota.config.usage import DEFAULT_USAGE_INTERVAL_SECONDS, UsageSettings
from volume_quota.daemons.publisher import serve_endpoints
from volume_quota.errors import UsageError
from volume_quota.http_endpoints import EndpointServer
from volume_quota.kafka_client_config import consumer_config
from volume_quota.logging_setup import get_logger, with_client_logger

log = get_logger("volume_quota.consumer")

LIVENESS_MAX_AGE_SECONDS = 30.0
USAGE_INTERVALS_FRESH = 3
"""A usage document older than this many usage intervals names no topic in a reason."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def decision_policy(settings: DecideSettings) -> DecisionPolicy:
    return settings.decision_policy(valid_for_seconds=settings.decision_valid_for)


def usage_stale_after(settings: DecideSettings) -> float:
    """How old a usage document may be to name topics: 3 usage intervals (a sidecar's own
    ``usage_interval``; a lone ``decide`` assumes the default one)."""
    interval = (
        settings.usage_interval
        if isinstance(settings, UsageSettings)
        else DEFAULT_USAGE_INTERVAL_SECONDS
    )
    return USAGE_INTERVALS_FRESH * interval


def signature_ca_file(settings: StatusSettings | DecideSettings) -> Path | None:
    """The CA bundle signatures are checked against: ``signature_ca_file``, else the TLS one."""
    return settings.signature_ca_file or settings.tls_ca_file


def required_signature_ca_file(settings: StatusSettings | DecideSettings) -> Path:
    path = signature_ca_file(settings)
    if path is None:
        raise UsageError(
            f"{describe_setting('signature_ca_file')} or {describe_setting('tls_ca_file')} is "
            "required to check signatures"
        )
    return path


def signature_policy(settings: StatusSettings | DecideSettings) -> SignaturePolicy:
    """The signature mode and whom to trust: the CAs of ``signature_ca_file`` (default: the
    cluster CA of ``tls_ca_file``)."""
    if settings.snapshot_signatures is SignatureMode.ACCEPT:
        return SignaturePolicy()
    ca_pem = required_signature_ca_file(settings).read_bytes()
    trust = SignatureTrust(
        ca_certificates=x509.load_pem_x509_certificates(ca_pem),
        broker_identities=settings.signer_identities,
        cluster_signers=settings.cluster_signers,
    )
    return SignaturePolicy(settings.snapshot_signatures, trust)


def override_policy(settings: StatusSettings | DecideSettings) -> OverridePolicy:
    """Who may set an override: the operator identities, certified by the CAs of
    ``signature_ca_file`` (default: ``tls_ca_file``; none given: no signature can be verified,
    every override is unverified)."""
    mode = settings.override_signatures
    certificates: list[x509.Certificate] = []
    if mode is not SignatureMode.ACCEPT:
        ca_file = (
            required_signature_ca_file(settings)
            if mode is SignatureMode.REQUIRE
            else signature_ca_file(settings)
        )
        if ca_file is not None:
            certificates = x509.load_pem_x509_certificates(ca_file.read_bytes())
    return OverridePolicy(
        mode,
        certificates,
        tuple(settings.override_signers),
        max_set_at_skew_seconds=settings.override_max_clock_skew,
    )


def announce_override_trust(settings: StatusSettings | DecideSettings) -> None:
    """Say at start who may set an override, and what is not checked."""
    mode = settings.override_signatures
    if mode is SignatureMode.ACCEPT:
        log.warning(
            "override signatures are not checked (override_signatures=accept): anyone who may "
            "write the override topic can force OPEN or PAUSE"
        )
    elif not settings.override_signers or signature_ca_file(settings) is None:
        log.warning(
            "no override can be verified (override_signers, or signature_ca_file and "
            "tls_ca_file, not set): every override takes effect marked unverified "
            "(override_signatures=warn)"
        )
    else:
        log.info(
            "overrides checked against the operator identities",
            override_signatures=mode.value,
            override_signers=list(settings.override_signers),
        )


class KafkaClients:
    """The readers and the live-broker source, all built from the current TLS files (the
    usage reader only when ``usage_topic`` is given: the decider's, not ``status``'s)."""

    def __init__(self, settings: ConnectedSettings, usage_topic: str | None = None) -> None:
        connection = settings.required_kafka_connection()
        config: Mapping[str, Any] = with_client_logger(
            consumer_config(connection, settings.broker_id, settings.consumer_group)
        )
        self.reader = SnapshotTopicReader(_new_consumer, config, settings.topic)
        self.override_reader = SnapshotTopicReader(_new_consumer, config, settings.override_topic)
        self.usage_reader = (
            None if usage_topic is None else SnapshotTopicReader(_new_consumer, config, usage_topic)
        )
        admin_settings = {key: value for key, value in config.items() if key not in ("group.id",)}
        self._admin = AdminClient(admin_settings)
        self._topic = settings.topic

    def live_brokers(self) -> frozenset[int]:
        return describe_live_brokers(self._admin, self._topic, LOOKUP_TIMEOUT_SECONDS)

    def close(self) -> None:
        for reader in (self.reader, self.override_reader, self.usage_reader):
            if reader is None:
                continue
            try:
                reader.close()
            except Exception as error:  # closing a broken client must not stop the daemon
                log.warning("closing a topic reader failed", error=str(error))


def usage_follower(
    clients: KafkaClients,
    registry: CollectorRegistry,
    signatures: SignaturePolicy,
    settings: DecideSettings,
) -> UsageFollower | None:
    """What names, in a reason, the topics filling a volume (the usage topic's follower)."""
    if clients.usage_reader is None:
        return None
    return UsageFollower(
        clients.usage_reader,
        registry,
        mode=signatures.mode,
        trust=signatures.trust,
        stale_after_seconds=usage_stale_after(settings),
    )


def _new_consumer(config: Mapping[str, Any]) -> Consumer:
    return Consumer(dict(config))


class DeciderView:
    """A sidecar's decider seen as a ``publisher.topic_config_share.ClusterView``: the live
    brokers once learned, and the usage topic's configs sections and topic sizes."""

    def __init__(self, daemon: DecideDaemon) -> None:
        self._daemon = daemon

    def live_brokers(self) -> frozenset[int] | None:
        service = self._daemon.service
        return service.state.live_brokers if service.live_known else None

    def newest_section(self) -> TopicConfigsSection | None:
        usage = self._daemon.usage
        return None if usage is None else usage.newest_configs

    def cluster_topics(self) -> list[str]:
        usage = self._daemon.usage
        return [] if usage is None else usage.cluster_topics()


class DecideDaemon:
    def __init__(
        self,
        settings: DecideSettings,
        *,
        registry: CollectorRegistry | None = None,
        serve_http: bool = True,
        clock: Clock | None = None,
        sink: Callable[[QuotaDecision], None] | None = None,
    ) -> None:
        """``sink`` receives every decision to hand on; by default, the decision file."""
        self._settings = settings
        self._clock: Clock = clock or SystemClock()
        if sink is None:
            decision_file = settings.required_decision_file()
            sink = partial(write_decision_atomically, decision_file)
        settings.required_kafka_connection()
        # The TLS files and the signers' CA bundle: a change of either rebuilds the clients,
        # whose replay judges every snapshot again under the trust then in force.
        extra_ca = settings.signature_ca_file
        self._tls_watch = FileWatch(
            (*settings.tls_paths(), *(() if extra_ca is None else (extra_ca,)))
        )
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = ConsumerMetrics(self.registry)
        self.state = ClusterState(decision_policy(settings))
        self._clients = KafkaClients(settings, settings.usage_topic)
        self.service = DecisionService(
            self.state,
            source=self._clients.reader,
            live_brokers=self._clients.live_brokers,
            clock=self._clock,
            sink=sink,
            metrics=self.metrics,
            timing=LoopTiming(
                live_broker_refresh_seconds=settings.live_broker_refresh_interval,
                decision_refresh_seconds=max(1.0, settings.decision_valid_for / 3),
                reconnect_when_quiet_seconds=settings.stale_after / 2,
            ),
            signatures=(signatures := signature_policy(settings)),
            usage=(usage := usage_follower(self._clients, self.registry, signatures, settings)),
            overrides=(
                overrides := OverrideFollower(
                    self._clients.override_reader,
                    self.registry,
                    policy=(operators := override_policy(settings)),
                )
            ),
        )
        self.signatures: SignaturePolicy = signatures
        """The snapshot signature trust in force (rebuilt when a CA bundle changes)."""
        self.operators: OverridePolicy = operators
        """The override trust in force (rebuilt when a CA bundle changes)."""
        self._overrides = overrides
        self.usage = usage  # the usage topic's follower; None when it is not followed
        self.registry.register(SnapshotAgeCollector(self.state.snapshot_times, self._clock.wall))
        self._server: EndpointServer | None = (
            serve_endpoints(settings, self.registry, self.liveness, self.readiness)
            if serve_http
            else None
        )

    def cluster_view(self) -> DeciderView:
        """What this decider knows of the other brokers, for sharing the reading of topic
        configs (``publisher.topic_config_share``)."""
        return DeciderView(self)

    @property
    def decision(self) -> QuotaDecision:
        """The decision in force: one attribute read, from any thread."""
        return self.service.current.decision

    @property
    def http_port(self) -> int:
        if self._server is None:
            raise RuntimeError("this daemon serves no HTTP endpoints (serve_http=False)")
        return self._server.port

    def liveness(self) -> HealthVerdict:
        last = self.service.last_step_at
        age = 0.0 if last is None else self._clock.monotonic() - last
        if age <= LIVENESS_MAX_AGE_SECONDS:
            return HealthVerdict(True)
        return HealthVerdict(False, (f"the decision loop last ran {age:.0f}s ago",))

    def readiness(self) -> HealthVerdict:
        if self.service.ready:
            return HealthVerdict(True)
        reason = (
            self.service.not_ready_reason()
            or self.service.override_problem
            or "the decision file could not be written"
        )
        return HealthVerdict(False, (reason,))

    def run(self, stop: threading.Event) -> int:
        tune_for_decoding()
        if self._server is not None:
            self._server.start()
        log.info(
            "consumer started",
            topic=self._settings.topic,
            decision_file=str(self._settings.decision_file),
            stale_after_seconds=self._settings.stale_after,
            on_missing=self._settings.on_missing.value,
        )
        announce_override_trust(self._settings)
        try:
            self.service.run(stop, between_steps=self.pick_up_changed_files)
            return 0
        finally:
            self._clients.close()
            if self._server is not None:
                self._server.stop()
            log.info("consumer stopped", last_state=self.decision.state.value)

    def pick_up_changed_files(self) -> None:
        """Rebuild the Kafka clients and the signature trust when the TLS files or the
        signers' CA bundle changed (called between the decision loop's steps)."""
        fingerprint = self._tls_watch.changed()
        if fingerprint is None:
            return
        refusal = self._refusal_of_new_certificate()
        if refusal is not None:
            self._tls_watch.refuse(fingerprint)  # logged once per change
            log.warning("rotated TLS files refused; keeping the Kafka clients", error=refusal)
            return
        try:
            clients = KafkaClients(self._settings, self._settings.usage_topic)
        except Exception as error:  # e.g. new certificate already there, new key not yet
            log.warning("rotated TLS files not usable yet", error=str(error))
            return
        try:
            signatures = signature_policy(self._settings)
            operators = override_policy(self._settings)
        except (ValueError, OSError) as error:  # a half-written or moved CA bundle: retried
            log.warning("rotated CA bundle not readable yet", error=str(error))
            clients.close()
            return
        self._tls_watch.accept(fingerprint)
        old, self._clients = self._clients, clients
        self.service.replace_signatures(signatures)
        self._overrides.replace_policy(operators)
        self.signatures, self.operators = signatures, operators
        if self.usage is not None and clients.usage_reader is not None:
            self.usage.replace_signatures(signatures.mode, signatures.trust)
            self.usage.replace_source(clients.usage_reader)
        self.service.replace_source(clients.reader, clients.live_brokers, clients.override_reader)
        old.close()
        log.info("TLS files rotated: Kafka clients and signature trust rebuilt")

    def _refusal_of_new_certificate(self) -> str | None:
        """Why the client certificate now on disk must not replace the one in use, if so."""
        path = self._settings.tls_cert_file
        if path is None:
            return None
        try:
            summary = summarize_certificate(path.read_bytes())
        except (CertificateError, OSError):
            return None  # a half-written set: building the clients says what is wrong
        return refusal_of_rotation(summary, self._clock.wall())
