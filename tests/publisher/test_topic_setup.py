"""Topic setup against a fake AdminClient that answers like the real one."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from publisher.topic_requirements import TopicRequirements
from publisher.topic_setup import TopicAdmin, TopicGuard, TopicOutcome, check_topic
from tests.support import wait_for

REQUIREMENTS = TopicRequirements(name="snapshots")


@dataclass
class TopicMetadata:
    error: KafkaError | None = None
    partitions: dict[int, object] = field(default_factory=lambda: {0: object()})


@dataclass
class ClusterMetadata:
    topics: dict[str, TopicMetadata]


@dataclass
class ConfigEntry:
    value: str | None


def done(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def failed(code: int, text: str = "") -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(KafkaException(KafkaError(code, text)))
    return future


@dataclass
class FakeAdmin:
    reachable: bool = True
    topics: dict[str, dict[str, str]] = field(default_factory=dict)
    create_error: int | None = None
    describe_error: int | None = None
    metadata_error: int | None = None
    created: list[Any] = field(default_factory=list)
    calls: int = 0
    refusal: str | None = None
    partition_count: int = 1

    def credentials_refused(self) -> str | None:
        return self.refusal

    def list_topics(self, topic: str, timeout: float) -> ClusterMetadata:
        self.calls += 1
        if not self.reachable:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata"))
        if self.metadata_error is not None:
            return ClusterMetadata({topic: TopicMetadata(KafkaError(self.metadata_error))})
        if topic not in self.topics:
            return ClusterMetadata(
                {topic: TopicMetadata(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))}
            )
        partitions = {number: object() for number in range(self.partition_count)}
        return ClusterMetadata({topic: TopicMetadata(partitions=partitions)})

    def create_topics(
        self, new_topics: list[Any], request_timeout: float
    ) -> dict[str, Future[Any]]:
        (new_topic,) = new_topics
        self.created.append(new_topic)
        if self.create_error is not None:
            return {new_topic.topic: failed(self.create_error)}
        self.topics[new_topic.topic] = dict(new_topic.config)
        return {new_topic.topic: done(None)}

    def describe_configs(
        self, resources: list[Any], request_timeout: float
    ) -> dict[Any, Future[Any]]:
        (resource,) = resources
        if self.describe_error is not None:
            return {resource: failed(self.describe_error)}
        config = self.topics[resource.name]
        return {resource: done({name: ConfigEntry(value) for name, value in config.items()})}


def test_missing_topic_is_created_compacted() -> None:
    admin = FakeAdmin()
    result = check_topic(admin, REQUIREMENTS, create=True, timeout_seconds=1)  # type: ignore[arg-type]
    assert result.outcome is TopicOutcome.READY
    assert result.created
    (new_topic,) = admin.created
    assert new_topic.topic == "snapshots"
    assert new_topic.num_partitions == 1
    assert new_topic.replication_factor == -1
    assert new_topic.config["cleanup.policy"] == "compact"
    assert new_topic.config["min.compaction.lag.ms"] == "86400000"


def test_existing_compacted_topic_is_ready_and_a_short_lag_warns() -> None:
    admin = FakeAdmin(
        topics={"snapshots": {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}}
    )
    result = check_topic(admin, REQUIREMENTS, create=True, timeout_seconds=1)  # type: ignore[arg-type]
    assert result.outcome is TopicOutcome.READY
    assert not result.created
    assert admin.created == []
    assert len(result.warnings) == 1


def test_wrong_cleanup_policy_is_misconfigured() -> None:
    admin = FakeAdmin(topics={"snapshots": {"cleanup.policy": "delete"}})
    result = check_topic(admin, REQUIREMENTS, create=True, timeout_seconds=1)  # type: ignore[arg-type]
    assert result.outcome is TopicOutcome.MISCONFIGURED
    assert "cleanup.policy=delete" in result.detail


def test_transient_problems_are_retried() -> None:
    cases = [
        (FakeAdmin(reachable=False), "cannot reach Kafka: _TRANSPORT"),
        (FakeAdmin(create_error=KafkaError.TOPIC_AUTHORIZATION_FAILED), "not allowed to create"),
        (FakeAdmin(create_error=KafkaError.POLICY_VIOLATION), "cannot create topic"),
        (
            FakeAdmin(
                topics={"snapshots": {"cleanup.policy": "compact"}},
                describe_error=KafkaError.TOPIC_AUTHORIZATION_FAILED,
            ),
            "cannot read the configuration",
        ),
        (
            FakeAdmin(metadata_error=KafkaError.TOPIC_AUTHORIZATION_FAILED),
            "cannot describe topic",
        ),
    ]
    for admin, expected in cases:
        result = check_topic(admin, REQUIREMENTS, create=True, timeout_seconds=1)  # type: ignore[arg-type]
        assert result.outcome is TopicOutcome.RETRY, expected
        assert expected in result.detail


SCRAM_REFUSAL = (
    "sasl_ssl://127.0.0.1:9094/bootstrap: SASL authentication error: Authentication failed "
    "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
)


def test_refused_credentials_are_a_misconfiguration_not_a_retry() -> None:
    admin = FakeAdmin(reachable=False, refusal=SCRAM_REFUSAL)
    result = check_topic(admin, REQUIREMENTS, create=True, timeout_seconds=1)  # type: ignore[arg-type]
    assert result.outcome is TopicOutcome.MISCONFIGURED
    assert result.detail.startswith("Kafka refused this client's credentials")
    assert SCRAM_REFUSAL in result.detail
    assert "\n" not in result.detail


def test_the_admin_client_remembers_an_authentication_failure_only() -> None:
    admin = TopicAdmin({"bootstrap.servers": "127.0.0.1:1", "logger": logging.getLogger("t")})
    admin._client_error(KafkaError(KafkaError._TRANSPORT, "Connection refused"))
    admin._client_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    assert admin.credentials_refused() is None
    admin._client_error(KafkaError(KafkaError._AUTHENTICATION, SCRAM_REFUSAL))
    admin._client_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    assert admin.credentials_refused() == SCRAM_REFUSAL


def test_guard_stops_when_the_credentials_are_refused() -> None:
    admin = FakeAdmin(reachable=False, refusal=SCRAM_REFUSAL)
    guard = TopicGuard(lambda: admin, REQUIREMENTS, create=True)  # type: ignore[arg-type, return-value]
    guard.start()
    guard._thread.join(5)
    assert not guard._thread.is_alive()
    assert guard.misconfiguration is not None
    assert SCRAM_REFUSAL in guard.misconfiguration
    assert admin.calls == 1
    guard.stop()


def test_missing_topic_without_create_waits_for_an_operator() -> None:
    result = check_topic(FakeAdmin(), REQUIREMENTS, create=False, timeout_seconds=1)  # type: ignore[arg-type]
    assert result.outcome is TopicOutcome.RETRY
    assert "kafka-topics.sh --create --topic snapshots" in result.detail


def test_a_topic_created_meanwhile_by_another_publisher_is_fine() -> None:
    admin = FakeAdmin(create_error=KafkaError.TOPIC_ALREADY_EXISTS)
    admin.topics = {}

    def create_then_exist(new_topics: list[Any], request_timeout: float) -> dict[str, Future[Any]]:
        admin.topics["snapshots"] = {"cleanup.policy": "compact"}
        return {"snapshots": failed(KafkaError.TOPIC_ALREADY_EXISTS)}

    admin.create_topics = create_then_exist  # type: ignore[method-assign]
    result = check_topic(admin, REQUIREMENTS, create=True, timeout_seconds=1)  # type: ignore[arg-type]
    assert result.outcome is TopicOutcome.READY


def test_guard_retries_until_ready() -> None:
    admin = FakeAdmin(reachable=False)
    guard = TopicGuard(lambda: admin, REQUIREMENTS, create=True, max_backoff_seconds=0.05)  # type: ignore[arg-type, return-value]
    guard.start()
    try:
        deadline = time.monotonic() + 5
        while admin.calls < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert admin.calls >= 3
        assert not guard.ready.is_set()
        assert guard.problem is not None
        assert "cannot reach Kafka" in guard.problem
        admin.reachable = True
        assert guard.ready.wait(5)
        assert guard.problem is None
        assert guard.misconfiguration is None
    finally:
        guard.stop()


def test_guard_stops_at_a_misconfiguration() -> None:
    admin = FakeAdmin(topics={"snapshots": {"cleanup.policy": "compact,delete"}})
    guard = TopicGuard(lambda: admin, REQUIREMENTS, create=True)  # type: ignore[arg-type, return-value]
    guard.start()
    guard._thread.join(5)
    assert not guard._thread.is_alive()
    assert guard.misconfiguration is not None
    assert not guard.ready.is_set()
    guard.stop()


def test_guard_stop_interrupts_the_backoff() -> None:
    admin = FakeAdmin(reachable=False)
    guard = TopicGuard(lambda: admin, REQUIREMENTS, create=True, max_backoff_seconds=60)  # type: ignore[arg-type, return-value]
    guard.start()
    stopped = threading.Event()

    def stop() -> None:
        guard.stop()
        stopped.set()

    threading.Thread(target=stop).start()
    assert stopped.wait(5)


def test_a_running_guard_recreates_a_deleted_topic_compacted() -> None:
    admin = FakeAdmin(topics={"snapshots": {"cleanup.policy": "compact"}})
    guard = TopicGuard(lambda: admin, REQUIREMENTS, create=True, recheck_seconds=0.02)  # type: ignore[arg-type, return-value]
    guard.start()
    try:
        assert guard.ready.wait(5)
        assert admin.created == []
        del admin.topics["snapshots"]
        wait_for(lambda: "snapshots" in admin.topics, 5, "the topic recreated")
        (recreated,) = admin.created
        assert recreated.config["cleanup.policy"] == "compact"
        assert guard.ready.is_set()
        assert guard.problem is None
    finally:
        guard.stop()


def test_a_running_guard_reports_a_policy_changed_from_compact_and_its_repair() -> None:
    admin = FakeAdmin(topics={"snapshots": {"cleanup.policy": "compact"}})
    guard = TopicGuard(lambda: admin, REQUIREMENTS, create=True, recheck_seconds=0.02)  # type: ignore[arg-type, return-value]
    guard.start()
    try:
        assert guard.ready.wait(5)
        assert not guard.misconfigured_now
        admin.topics["snapshots"]["cleanup.policy"] = "delete"
        wait_for(lambda: guard.misconfigured_now, 5, "the wrong policy reported")
        assert not guard.ready.is_set()
        assert guard.problem is not None
        assert "cleanup.policy=delete" in guard.problem
        # Reported, not fatal: the publisher keeps publishing, so the guard keeps checking.
        assert guard.misconfiguration is None
        assert guard._thread.is_alive()
        admin.topics["snapshots"]["cleanup.policy"] = "compact"
        wait_for(guard.ready.is_set, 5, "the guard ready again")
        assert not guard.misconfigured_now
        assert guard.problem is None
    finally:
        guard.stop()


def test_a_running_guard_without_create_reports_a_deleted_topic() -> None:
    admin = FakeAdmin(topics={"snapshots": {"cleanup.policy": "compact"}})
    guard = TopicGuard(lambda: admin, REQUIREMENTS, create=False, recheck_seconds=0.02)  # type: ignore[arg-type, return-value]
    guard.start()
    try:
        assert guard.ready.wait(5)
        del admin.topics["snapshots"]
        wait_for(lambda: not guard.ready.is_set(), 5, "the missing topic reported")
        assert guard.problem is not None
        assert "does not exist and create_topic is off" in guard.problem
        assert admin.created == []
        assert not guard.misconfigured_now
    finally:
        guard.stop()


SINGLE_PARTITION = TopicRequirements(name="decisions", single_partition=True)


def test_a_topic_read_at_partition_0_only_must_have_one_partition() -> None:
    # The callbacks read partition 0 of the decisions topic; with three partitions the key
    # "cluster" hashes elsewhere and no broker would ever see a decision: PAUSE for good.
    admin = FakeAdmin(topics={"decisions": {"cleanup.policy": "compact"}}, partition_count=3)
    result = check_topic(admin, SINGLE_PARTITION, create=True, timeout_seconds=1)  # type: ignore[arg-type]
    assert result.outcome is TopicOutcome.MISCONFIGURED
    assert "decisions has 3 partitions" in result.detail
    admin.partition_count = 1
    assert check_topic(admin, SINGLE_PARTITION, True, 1).outcome is TopicOutcome.READY  # type: ignore[arg-type]
    admin.partition_count = 3
    assert check_topic(admin, REQUIREMENTS, True, 1).outcome is not TopicOutcome.MISCONFIGURED  # type: ignore[arg-type]


def test_a_running_guard_reports_partitions_added_later() -> None:
    admin = FakeAdmin(topics={"decisions": {"cleanup.policy": "compact"}})
    guard = TopicGuard(lambda: admin, SINGLE_PARTITION, create=True, recheck_seconds=0.05).start()  # type: ignore[arg-type,return-value]
    try:
        wait_for(guard.ready.is_set, 5, "the topic verified")
        admin.partition_count = 2
        wait_for(lambda: guard.misconfigured_now, 5, "the added partition reported")
        assert guard.problem is not None
        assert "2 partitions" in guard.problem
        assert not guard.ready.is_set()
    finally:
        guard.stop()
