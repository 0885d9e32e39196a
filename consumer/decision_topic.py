"""Writing each decision to a compacted Kafka topic, for callbacks that read it from Kafka (shell).

Where brokers cannot have a sidecar (Strimzi), the callback reads the newest decision from the
decisions topic instead of a file: partition 0 (the agent refuses a topic with more), key
``cluster``, the same JSON as the file.
``write`` returns only once Kafka has the record, and raises ``OSError`` otherwise, like the
file writer, so the decision loop counts the failure and tries again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from schemas.decision import QuotaDecision

DEFAULT_DECISIONS_TOPIC = "__volume_quota_decisions"
DECISION_KEY = b"cluster"


class DecisionTopicWriter:
    def __init__(self, config: Mapping[str, Any], topic: str, timeout_seconds: float) -> None:
        self._producer = Producer(dict(config))
        self._topic = topic
        self._timeout = timeout_seconds

    def write(self, decision: QuotaDecision) -> None:
        errors: list[KafkaError | None] = []

        def report(error: KafkaError | None, _message: Message) -> None:
            errors.append(error)

        try:
            # Partition 0 explicitly: the callbacks read nothing else, whatever the partitioner.
            self._producer.produce(
                self._topic,
                key=DECISION_KEY,
                value=decision.to_json_bytes(),
                partition=0,
                on_delivery=report,
            )
            self._producer.flush(self._timeout)
        except (BufferError, KafkaException) as error:
            raise OSError(f"decision not written to {self._topic}: {error}") from None
        if not errors:
            raise OSError(f"decision not written to {self._topic} within {self._timeout:g}s")
        if errors[0] is not None:
            raise OSError(f"decision not written to {self._topic}: {errors[0].str()}")

    def close(self, timeout_seconds: float = 2.0) -> None:
        self._producer.flush(timeout_seconds)
