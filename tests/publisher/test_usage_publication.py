"""The usage publisher's own timer: survey, sign, send, wait; every failure counted, none raised."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from publisher.kafka_sink import DeliveryCallback, SendError
from publisher.publication_core import ClientIssue
from publisher.publisher_metrics import PublisherMetrics
from publisher.topic_usage import OtherTopics, TopicTotals, VolumeTopicUsage
from publisher.usage_publication import UsagePublisher, UsageSchedule
from schemas.decode import decode_usage
from schemas.usage import TopicUsageDocument

START = datetime(2026, 11, 26, 12, tzinfo=UTC)


class StepClock:
    """Time advances only when the code under test polls the sink or asks again."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wall(self) -> datetime:
        return START + timedelta(seconds=self.seconds)

    def monotonic(self) -> float:
        return self.seconds


@dataclass
class FakeSink:
    clock: StepClock
    answer: str | None = None
    delivers: bool = True
    refuses: bool = False
    sent: list[tuple[bytes, bytes | None, list[tuple[str, bytes]]]] = field(default_factory=list)
    pending: list[DeliveryCallback] = field(default_factory=list)
    rebuilds: int = 0
    needs_rebuild: bool = False
    bootstrap_servers: str = "fake:9093"

    def send(
        self,
        key: bytes,
        value: bytes | None,
        on_result: DeliveryCallback,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        if self.refuses:
            raise SendError("queue full")
        self.sent.append((key, value, list(headers)))
        self.pending.append(on_result)

    def poll(self, timeout_seconds: float) -> None:
        self.clock.seconds += timeout_seconds
        if self.delivers:
            for callback in self.pending:
                callback(self.answer)
            self.pending.clear()

    def flush(self, timeout_seconds: float) -> int:
        return len(self.pending)

    def rebuild(self, flush_timeout_seconds: float, elsewhere: bool = False) -> int:
        self.rebuilds += 1
        return 0


class FakeCredentials:
    not_after = START + timedelta(days=30)
    last_problem = None

    def rotated(self, now: datetime) -> object | None:
        return None

    def sign(self, key: bytes, value: bytes | None) -> list[tuple[str, bytes]]:
        return [("vq-signature", b"sig:" + key)]


def summaries() -> list[VolumeTopicUsage]:
    orders = TopicTotals("orders", 4000, 2, 100, 0, 1_700_000_000.0)
    return [VolumeTopicUsage("/dev/a", 4100, (orders,), OtherTopics(1, 90, 1, 5, 0), 10)]


def make(
    sink: FakeSink,
    survey: Callable[[], Sequence[VolumeTopicUsage]] = summaries,
    topic_ready: Callable[[], bool] = lambda: True,
    interval_seconds: float = 60.0,
) -> tuple[UsagePublisher, PublisherMetrics]:
    metrics = PublisherMetrics()
    publisher = UsagePublisher(
        UsageSchedule(broker_id=5, interval_seconds=interval_seconds, delivery_timeout_seconds=2.0),
        survey=survey,
        sink_factory=lambda _issue: sink,
        clock=sink.clock,
        metrics=metrics,
        topic_ready=topic_ready,
        credentials=FakeCredentials(),
    )
    return publisher, metrics


def failures(metrics: PublisherMetrics, stage: str) -> float:
    return float(metrics.usage_failures.labels(stage)._value.get())


def test_a_delivered_document_is_signed_keyed_by_broker_and_recorded() -> None:
    sink = FakeSink(StepClock())
    publisher, metrics = make(sink)
    assert publisher.publish_once()
    ((key, value, headers),) = sink.sent
    assert key == b"5"
    assert headers == [("vq-signature", b"sig:5")]
    assert value is not None
    document = decode_usage(value, key)
    assert isinstance(document, TopicUsageDocument)
    assert document.volumes[0].topics[0].topic == "orders"
    assert metrics.usage_last_success._value.get() == sink.clock.wall().timestamp()


def test_a_failing_survey_is_counted_and_nothing_is_sent() -> None:
    def broken() -> list[VolumeTopicUsage]:
        raise PermissionError("log dir unreadable")

    sink = FakeSink(StepClock())
    publisher, metrics = make(sink, survey=broken)
    assert not publisher.publish_once()
    assert sink.sent == []
    assert failures(metrics, "survey") == 1


def test_a_refused_send_a_failed_and_a_lost_delivery_are_counted() -> None:
    for sink in (
        FakeSink(StepClock(), refuses=True),
        FakeSink(StepClock(), answer="TOPIC_AUTHORIZATION_FAILED: not authorized"),
        FakeSink(StepClock(), delivers=False),
    ):
        publisher, metrics = make(sink)
        assert not publisher.publish_once()
        assert failures(metrics, "publish") == 1
        assert metrics.usage_last_success._value.get() == 0


def test_a_topic_never_ready_is_counted_once_per_interval_and_nothing_is_surveyed() -> None:
    surveyed: list[int] = []

    def survey() -> list[VolumeTopicUsage]:
        surveyed.append(1)
        return summaries()

    clock = StepClock()
    sink = FakeSink(clock)

    def not_ready() -> bool:
        clock.seconds += 1.0
        return False

    publisher, metrics = make(sink, survey=survey, topic_ready=not_ready, interval_seconds=3.0)
    assert not publisher._wait_for_topic()
    assert failures(metrics, "topic") == 1
    assert surveyed == []


def test_the_thread_publishes_at_once_and_stops_promptly() -> None:
    sink = FakeSink(StepClock())
    publisher, metrics = make(sink)
    done = threading.Event()
    original = publisher.publish_once

    def publish_and_signal() -> bool:
        result = original()
        done.set()
        return result

    publisher.publish_once = publish_and_signal  # type: ignore[method-assign]
    publisher.start()
    assert done.wait(10)
    publisher.stop(wait_seconds=5)
    assert not publisher._thread.is_alive()
    assert len(sink.sent) == 1
    assert metrics.usage_survey_duration._value.get() >= 0


def test_a_client_issue_is_only_logged() -> None:
    sink = FakeSink(StepClock())
    publisher, _ = make(sink)
    publisher._client_issue(ClientIssue("_SSL", "handshake", disconnecting=True, fatal=False))
    assert sink.sent == []


def test_the_second_document_carries_the_growth_since_the_first_with_its_span() -> None:
    sizes = iter([4000, 4600])

    def growing() -> list[VolumeTopicUsage]:
        orders = TopicTotals("orders", next(sizes), 2, 100, 0, 1_700_000_000.0)
        return [
            VolumeTopicUsage(
                "/dev/a", orders.bytes + 100, (orders,), OtherTopics(1, 90, 1, 5, 0), 10
            )
        ]

    sink = FakeSink(StepClock())
    publisher, _ = make(sink, survey=growing)
    assert publisher.publish_once()
    sink.clock.seconds += 60.0
    assert publisher.publish_once()
    first, second = (decode_usage(value or b"", key) for key, value, _ in sink.sent)
    assert isinstance(first, TopicUsageDocument)
    assert isinstance(second, TopicUsageDocument)
    assert first.volumes[0].topics[0].growth_15m is None
    topic = second.volumes[0].topics[0]
    assert topic.growth_15m is not None
    assert topic.growth_24h is not None
    assert topic.growth_15m.bytes == 600
    assert topic.growth_15m.seconds > 60.0
    assert topic.growth_24h == topic.growth_15m


def test_each_published_topic_is_a_metric_and_a_topic_that_leaves_the_top_is_dropped() -> None:
    tops = iter([("orders", "clicks"), ("orders",)])

    def survey() -> list[VolumeTopicUsage]:
        names = next(tops)
        totals = tuple(
            TopicTotals(n, 4000 - 1000 * i, 2, 100, 0, None) for i, n in enumerate(names)
        )
        rest = OtherTopics(1, 90, 1, 5, 0)
        return [VolumeTopicUsage("/dev/a", sum(t.bytes for t in totals) + 100, totals, rest, 10)]

    sink = FakeSink(StepClock())
    publisher, metrics = make(sink, survey=survey)
    assert publisher.publish_once()

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(
            name, {"broker": "5", "volume": "/dev/a", **labels}
        )

    assert sample("volume_quota_topic_bytes", topic="orders") == 4000
    assert sample("volume_quota_topic_bytes", topic="clicks") == 3000
    assert sample("volume_quota_other_topics_bytes") == 90
    sink.clock.seconds += 60
    assert publisher.publish_once()
    assert sample("volume_quota_topic_bytes", topic="clicks") is None
    assert sample("volume_quota_topic_bytes", topic="orders") == 4000
    growth = sample("volume_quota_topic_growth_bytes_per_second", topic="orders", window="15m")
    assert growth == 0.0
