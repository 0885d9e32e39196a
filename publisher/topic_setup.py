"""Making sure the snapshot topic exists and is compacted, with the Kafka AdminClient.

``check_topic`` does one attempt and says how it went: ready, worth retrying (cluster
unreachable, permission missing, topic not created yet) or misconfigured (an existing topic with
the wrong ``cleanup.policy``, or a broker refusing the client's SASL credentials: the operator
must fix it, retrying cannot). ``TopicGuard`` retries in
a background thread until the topic is ready, so the publisher keeps sampling meanwhile, and
checks it again periodically while the publisher runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import structlog
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported, not in __all__
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from publisher.delivery_pacing import retry_delay
from publisher.topic_requirements import (
    DEFAULT_TOPIC_RECHECK_SECONDS,
    TopicRequirements,
    topic_config_problem,
    topic_config_warnings,
    topic_partition_problem,
)

log = structlog.get_logger(logger_name="volume_quota.topic_setup")

_PERMISSION_CODES = frozenset(
    {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED}
)


class TopicAdmin(AdminClient):
    """An AdminClient that leaves connection errors to the caller, which reports them as
    "cannot reach Kafka", except a broker refusing the credentials (a SASL authentication
    failure, which librdkafka reports only to ``error_cb`` and retries forever)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._refusal: str | None = None
        settings: dict[str, Any] = {**config, "error_cb": self._client_error}
        super().__init__(settings)

    def _client_error(self, error: KafkaError) -> None:
        # Connection trouble otherwise shows up as the failed request it causes.
        if error.code() == KafkaError._AUTHENTICATION:
            self._refusal = error.str()

    def credentials_refused(self) -> str | None:
        """librdkafka's words when a broker refused this client's credentials, else None."""
        self.poll(0)  # serves error_cb
        return self._refusal


def new_admin_client(config: dict[str, Any]) -> TopicAdmin:
    return TopicAdmin(config)


class TopicOutcome(StrEnum):
    READY = "ready"
    RETRY = "retry"
    MISCONFIGURED = "misconfigured"


@dataclass(frozen=True, slots=True)
class TopicCheck:
    outcome: TopicOutcome
    detail: str
    warnings: tuple[str, ...] = field(default_factory=tuple)
    created: bool = False


def check_topic(
    admin: TopicAdmin, requirements: TopicRequirements, create: bool, timeout_seconds: float
) -> TopicCheck:
    name = requirements.name
    try:
        metadata = admin.list_topics(topic=name, timeout=timeout_seconds)
    except KafkaException as error:
        refusal = admin.credentials_refused()
        if refusal is not None:
            return TopicCheck(
                TopicOutcome.MISCONFIGURED,
                f"Kafka refused this client's credentials (check the SASL user name, password "
                f"and mechanism): {refusal}",
            )
        return TopicCheck(TopicOutcome.RETRY, f"cannot reach Kafka: {_describe(error)}")
    topic = metadata.topics.get(name)
    topic_error = topic.error if topic is not None else None
    created = False
    if topic is None or (
        topic_error is not None and topic_error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    ):
        if not create:
            return TopicCheck(
                TopicOutcome.RETRY,
                f"topic {name} does not exist and create_topic is off: create it compacted "
                f"({_creation_hint(requirements)})",
            )
        failure = _create(admin, requirements, timeout_seconds)
        if failure is not None:
            return failure
        created = True
    elif topic_error is not None:
        return TopicCheck(TopicOutcome.RETRY, f"cannot describe topic {name}: {topic_error.str()}")
    else:
        problem = topic_partition_problem(requirements, len(topic.partitions))
        if problem is not None:
            return TopicCheck(TopicOutcome.MISCONFIGURED, problem)
    return _verify_config(admin, requirements, timeout_seconds, created)


def _create(
    admin: AdminClient, requirements: TopicRequirements, timeout_seconds: float
) -> TopicCheck | None:
    new_topic = NewTopic(
        requirements.name,
        num_partitions=requirements.partitions,
        replication_factor=requirements.replication_factor,
        config=requirements.creation_config(),
    )
    futures = admin.create_topics([new_topic], request_timeout=timeout_seconds)
    try:
        futures[requirements.name].result(timeout=timeout_seconds + 1)
    except KafkaException as error:
        code = _code(error)
        if code == KafkaError.TOPIC_ALREADY_EXISTS:
            return None  # another broker's publisher created it first
        if code in _PERMISSION_CODES:
            return TopicCheck(
                TopicOutcome.RETRY,
                f"not allowed to create topic {requirements.name}: grant the publisher CREATE "
                f"on it, or create it yourself ({_creation_hint(requirements)})",
            )
        return TopicCheck(
            TopicOutcome.RETRY, f"cannot create topic {requirements.name}: {_describe(error)}"
        )
    log.info("topic created", topic=requirements.name, config=requirements.creation_config())
    return None


def _verify_config(
    admin: AdminClient, requirements: TopicRequirements, timeout_seconds: float, created: bool
) -> TopicCheck:
    resource = ConfigResource(ResourceType.TOPIC, requirements.name)
    futures = admin.describe_configs([resource], request_timeout=timeout_seconds)
    try:
        entries = next(iter(futures.values())).result(timeout=timeout_seconds + 1)
    except KafkaException as error:
        return TopicCheck(
            TopicOutcome.RETRY,
            f"cannot read the configuration of topic {requirements.name}: {_describe(error)}",
        )
    config = {name: entry.value for name, entry in entries.items() if entry.value is not None}
    problem = topic_config_problem(requirements.name, config)
    if problem is not None:
        return TopicCheck(TopicOutcome.MISCONFIGURED, problem)
    warnings = tuple(topic_config_warnings(requirements, config))
    return TopicCheck(
        TopicOutcome.READY, f"topic {requirements.name} is compacted", warnings, created
    )


def _creation_hint(requirements: TopicRequirements) -> str:
    configs = ",".join(f"{key}={value}" for key, value in requirements.creation_config().items())
    return f"kafka-topics.sh --create --topic {requirements.name} --config {configs}"


def _code(error: KafkaException) -> Any:
    kafka_error = error.args[0] if error.args else None
    return kafka_error.code() if isinstance(kafka_error, KafkaError) else None


def _describe(error: KafkaException) -> str:
    kafka_error = error.args[0] if error.args else None
    if isinstance(kafka_error, KafkaError):
        return f"{kafka_error.name()}: {kafka_error.str()}"
    return str(error)


class TopicGuard:
    """Checks the topic in a background thread, first until it is verified, then again every
    ``recheck_seconds`` while the publisher runs.

    Before the first verification a misconfigured topic is fatal (``misconfiguration``): the
    publisher exits 2, as the operator must fix it. Once running, the same verdict is reported
    (error log, ``ready`` cleared with the reason in ``problem``, ``misconfigured_now``) but
    publication goes on: stopping would leave every decider without snapshots, i.e. the whole
    cluster in fail-safe PAUSE, for a problem that bites only when retention deletes a silent
    broker's last snapshot. A topic deleted under a running publisher is recreated at the next
    recheck when ``create`` is on, as at start.
    """

    def __init__(
        self,
        admin_factory: Callable[[], TopicAdmin],
        requirements: TopicRequirements,
        create: bool,
        *,
        timeout_seconds: float = 10.0,
        max_backoff_seconds: float = 30.0,
        recheck_seconds: float = DEFAULT_TOPIC_RECHECK_SECONDS,
    ) -> None:
        self._admin_factory = admin_factory
        self._requirements = requirements
        self._create = create
        self._timeout = timeout_seconds
        self._max_backoff = max_backoff_seconds
        self._recheck = recheck_seconds
        self._stop = threading.Event()
        self.ready = threading.Event()
        self.problem: str | None = f"topic {requirements.name} is not verified yet"
        self.misconfiguration: str | None = None
        self.misconfigured_now = False
        """The last recheck of a running publisher found the topic misconfigured."""
        self._thread = threading.Thread(target=self._run, name="volume-quota-topic", daemon=True)

    def start(self) -> TopicGuard:
        self._thread.start()
        return self

    def stop(self, wait_seconds: float = 1.0) -> None:
        """Stop checking. A check in progress may block inside librdkafka for up to the request
        timeout; the thread is a daemon thread, so shutdown waits for it at most
        ``wait_seconds``."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=wait_seconds)

    def _run(self) -> None:
        admin = self._admin_factory()
        if self._verify_first(admin):
            self._recheck_while_running(admin)

    def _verify_first(self, admin: TopicAdmin) -> bool:
        """Retry until the topic is verified (True) or misconfigured or stopped (False)."""
        attempts = 0
        while not self._stop.is_set():
            attempts += 1
            result = check_topic(admin, self._requirements, self._create, self._timeout)
            if self._stop.is_set():
                # The daemon is shutting down (a check can outlast stop()'s join): say nothing
                # after its "publisher stopped" line.
                return False
            if result.outcome is TopicOutcome.READY:
                for warning in result.warnings:
                    log.warning("topic configuration", detail=warning)
                log.info("topic ready", topic=self._requirements.name, attempts=attempts)
                self.problem = None
                self.ready.set()
                return True
            self.problem = result.detail
            if result.outcome is TopicOutcome.MISCONFIGURED:
                log.error("topic misconfigured", detail=result.detail)
                self.misconfiguration = result.detail
                return False
            delay = retry_delay(attempts, base_seconds=1.0, cap_seconds=self._max_backoff)
            log.warning("topic not ready", detail=result.detail, retry_in_seconds=delay)
            self._stop.wait(delay)
        return False

    def _recheck_while_running(self, admin: TopicAdmin) -> None:
        while not self._stop.wait(self._recheck):
            result = check_topic(admin, self._requirements, self._create, self._timeout)
            if self._stop.is_set():
                return
            self._report_recheck(result)

    def _report_recheck(self, result: TopicCheck) -> None:
        topic = self._requirements.name
        if result.created:
            log.warning("topic recreated", topic=topic, detail="it was missing at a recheck")
        if result.outcome is TopicOutcome.READY:
            if self.problem is not None:
                log.info("topic ready again", topic=topic, previous_problem=self.problem)
            self.problem = None
            self.misconfigured_now = False
            self.ready.set()
            return
        if result.detail != self.problem:  # one line per change, not one per recheck
            if result.outcome is TopicOutcome.MISCONFIGURED:
                log.error("topic misconfigured", detail=result.detail, still_publishing=True)
            else:
                log.warning(
                    "topic not ready", detail=result.detail, recheck_in_seconds=self._recheck
                )
        self.problem = result.detail
        self.misconfigured_now = result.outcome is TopicOutcome.MISCONFIGURED
        self.ready.clear()
