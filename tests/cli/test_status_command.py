"""``volume-quota status``'s shell for the top topics: the usage topic read to its end, one
DescribeConfigs call, its authorization error a line (not a traceback), and the help."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

from consumer.snapshot_topic_reader import TopicAccessDeniedError, TopicRecord
from consumer.topic_status import NOT_AUTHORIZED, UsageCollection
from tests.consumer.test_topic_status import LOGS, usage_value
from volume_quota.cli import main
from volume_quota.commands.status import read_usage
from volume_quota.daemons.topic_configs import describe_topic_configs

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)


class Entry:
    def __init__(self, value: str | None) -> None:
        self.value = value


class FakeAdmin:
    def __init__(self, answers: dict[str, dict[str, str | None] | Exception]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    def describe_configs(
        self, resources: list[ConfigResource], **kwargs: Any
    ) -> dict[ConfigResource, Future[dict[str, Entry]]]:
        self.calls.append([resource.name for resource in resources])
        futures: dict[ConfigResource, Future[dict[str, Entry]]] = {}
        for resource in resources:
            future: Future[dict[str, Entry]] = Future()
            answer = self.answers[resource.name]
            if isinstance(answer, Exception):
                future.set_exception(answer)
            else:
                future.set_result({name: Entry(value) for name, value in answer.items()})
            futures[resource] = future
        return futures


def test_configs_come_from_one_call_and_a_refusal_is_a_reason_not_a_traceback() -> None:
    denied = KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied"))
    admin = FakeAdmin(
        {
            "orders": {"retention.ms": "60000", "cleanup.policy": "delete"},
            "secret": denied,
            "broken": KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out")),
        }
    )
    configs = describe_topic_configs(admin, ["orders", "secret", "broken"], 5.0)
    assert admin.calls == [["orders", "secret", "broken"]]
    assert configs["orders"] == {"retention.ms": "60000", "cleanup.policy": "delete"}
    assert configs["secret"] == NOT_AUTHORIZED
    assert isinstance(configs["broken"], str)
    assert "timed out" in configs["broken"]
    assert describe_topic_configs(admin, [], 5.0) == {}
    assert len(admin.calls) == 1


class FakeReader:
    def __init__(self, records: list[TopicRecord], denied: bool = False) -> None:
        self.records = records
        self.denied = denied
        self.assigned = False

    def assign_from_beginning(self, timeout_seconds: float = 10.0) -> None:
        if self.denied:
            raise TopicAccessDeniedError("topic '__volume_quota_usage': TOPIC_AUTHORIZATION_FAILED")
        self.assigned = True

    @property
    def caught_up(self) -> bool:
        return self.assigned and not self.records

    def poll(self, timeout_seconds: float, max_records: int = 500) -> Iterator[TopicRecord]:
        while self.records:
            yield self.records.pop(0)


def record(key: bytes, value: bytes | None, offset: int) -> TopicRecord:
    return TopicRecord(key, value, 0, offset, (), None, False)


def test_the_usage_topic_is_read_to_its_end_and_refusals_counted() -> None:
    reader = FakeReader(
        [
            record(b"1", usage_value(1, "/dev/b", LOGS), 0),
            record(b"2", b"[]", 1),
        ]
    )
    usage = UsageCollection()
    assert read_usage(reader, usage, lambda: NOW, timeout_seconds=5.0) is None
    assert sorted(usage.documents) == [1]
    assert usage.refused == {"invalid_field": 1}


def test_a_usage_topic_this_identity_may_not_read_is_a_reason() -> None:
    problem = read_usage(FakeReader([], denied=True), UsageCollection(), lambda: NOW, 5.0)
    assert problem is not None
    assert "TOPIC_AUTHORIZATION_FAILED" in problem


def test_the_help_explains_the_topic_columns(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["status", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for phrase in (
        "--topics",
        "--top-topics",
        "--usage-topic",
        "SHARE",
        "GROWTH 15M",
        "GROWTH 24H",
        "RETENTION",
        "bounded",
        "steady",
        "unbounded",
        "not authorized to describe configs",
    ):
        assert phrase in text, phrase


def test_top_topics_must_be_a_positive_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main(["status", "--top-topics", "0"])
    assert exit_status.value.code == 2
    assert "--top-topics" in capsys.readouterr().err
