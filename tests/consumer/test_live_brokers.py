from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from consumer.live_brokers import describe_live_brokers


class FakeAdmin:
    def __init__(self, brokers: dict[int, object] | None) -> None:
        self.brokers = brokers
        self.asked: list[tuple[str | None, float]] = []

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        self.asked.append((topic, timeout))
        if self.brokers is None:
            raise RuntimeError("KafkaError{code=_TRANSPORT}")
        return SimpleNamespace(brokers=self.brokers, topics={})


def test_live_brokers_are_the_brokers_in_the_metadata_of_the_snapshot_topic() -> None:
    admin = FakeAdmin({0: object(), 2: object()})
    assert describe_live_brokers(admin, "snapshots", timeout_seconds=3) == frozenset({0, 2})
    assert admin.asked == [("snapshots", 3)]


def test_no_answer_is_an_error_for_the_caller_to_count() -> None:
    with pytest.raises(RuntimeError, match="_TRANSPORT"):
        describe_live_brokers(FakeAdmin(None))
