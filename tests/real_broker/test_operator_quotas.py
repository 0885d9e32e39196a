"""Quotas an operator sets with Kafka's own kafka-configs stay in force with the callback loaded.

One combined KRaft node (the pinned Kafka) runs with the plugin jar and a decision file the test
writes. ``User:quota-app`` gets ``producer_byte_rate`` and ``consumer_byte_rate`` of 256 KiB/s
from Kafka's ``kafka.admin.ConfigCommand`` (what ``kafka-configs.sh`` runs), from the cached
distribution. Then, measured with real clients:

- OPEN: produce runs at the operator's 256 KiB/s (our base is 4 MiB/s), fetch at what Kafka
  itself makes of a 256 KiB/s consumer_byte_rate;
- PAUSE: the stricter quota wins, our 128 KiB/s floor;
- THROTTLE 0.5 (ours 2 MiB/s): the operator's 256 KiB/s, now the stricter, wins.

Kafka 4.0 and 4.1 keep quotas in the Scala ``kafka.server.ClientQuotaManager`` (4.2 and newer:
the Java one), which the callback reaches another way: a second test sets the same quota on a
Kafka 4.1.2 broker and checks that 2 MiB from ``quota-app`` get throttled (our base alone would
let 12 MiB through before the first throttle).

Rates: the broker throttles on a Rate over ``quota.window.num`` x 1 s samples and lets a fresh
window through before the first throttle, so a rate is taken over ``MEASURE_S``, starting one
window after the client's first throttle. The window is 4 s here (Kafka's default is 11 s), so
8 s of measurement cover two whole windows and the test stays short (about 70 s; the module,
with the Kafka 4.1.2 test, about 110 s). A rate still swings with the window (a burst whenever
old samples leave it), so the tolerance is 0.6x to 1.5x the expected rate: far tighter than
what a lost quota gives (our base, 16x the operator's quota here), and enough to tell the PAUSE
floor from the operator's quota (2x apart).

Fetch: Kafka answers a fetch that would exceed the quota with an empty response, yet throttles
for the bytes it would have carried, so each fetch that carries data costs about twice its size
in throttle time. The same consumer reads at 122 KiB/s from a broker without the callback and the
same 256 KiB/s quota (measured here, 4 s window). Fetch must lie between 0.6x half the quota
and 1.5x the quota; unthrottled it reads megabytes per second.

``VOLUME_QUOTA_OPERATOR_TEST_JAR`` runs the same checks against another build of the callback
(e.g. one that ignored the operator's quotas, to see these tests fail).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from local_cluster import LocalKafkaCluster, callback_cluster, ensure_kafka_jars, issue_client
from tests.real_broker.kafka_helpers import create_topic, quiet
from tests.real_broker.test_callback_metrics import write_decision
from tests.support import wait_for

KIB = 1024
MIB = 1024 * KIB
OPERATOR_RATE = 256 * KIB
BASE = 4 * MIB
FLOOR = 128 * KIB
WINDOW_S = 4
MEASURE_S = 8.0
LOW, HIGH = 0.6, 1.5
APP = "quota-app"
TOPIC = "operator-quotas"
GROUP = "operator-quotas-reader"
RECORD = b"x" * 4096


@pytest.fixture
def jar(plugin_jar: Path) -> Path:
    override = os.environ.get("VOLUME_QUOTA_OPERATOR_TEST_JAR")
    return Path(override) if override else plugin_jar


def kafka_configs(cluster: LocalKafkaCluster, work_dir: Path, *arguments: str) -> str:
    """Runs Kafka's ConfigCommand (kafka-configs.sh) as ``User:admin``; returns its output."""
    properties = work_dir / "admin.properties"
    config = cluster.java_client_config("admin")
    properties.write_text("".join(f"{key}={value}\n" for key, value in config.items()))
    command = [
        "java",
        "-cp",
        f"{ensure_kafka_jars()}/*",
        "kafka.admin.ConfigCommand",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--command-config",
        str(properties),
        *arguments,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


class RateAfterFirstThrottle:
    """Bytes that arrive within ``MEASURE_S``, one window (``WINDOW_S``) after the first throttle
    the broker reports, or after the start if there is none by then (no quota: the rate the
    client reaches unthrottled). The window after the first throttle lets the burst the broker
    admitted before it leave the rate window."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.first_throttle: float | None = None
        self.arrivals: list[tuple[float, int]] = []

    def on_throttle(self, event: Any) -> None:
        if self.first_throttle is None and event.throttle_time > 0:
            self.first_throttle = time.monotonic()

    def window_start(self) -> float:
        return (self.started if self.first_throttle is None else self.first_throttle) + WINDOW_S

    def done(self) -> bool:
        return time.monotonic() > self.window_start() + MEASURE_S

    def rate(self) -> float:
        start = self.window_start()
        return sum(n for t, n in self.arrivals if start <= t <= start + MEASURE_S) / MEASURE_S


def run_until(done: Callable[[], bool], step: Callable[[], None], limit_s: float = 40) -> None:
    deadline = time.monotonic() + limit_s
    while not done() and time.monotonic() < deadline:
        step()


def produce_rate(cluster: LocalKafkaCluster) -> float:
    """Produces as ``quota-app`` as fast as the broker lets it; the delivered bytes/s."""
    measure = RateAfterFirstThrottle()

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            measure.arrivals.append((time.monotonic(), len(message.value())))

    config = quiet(cluster.client_config(APP))
    producer = Producer(
        {
            **config,
            "client.id": "quota-app-producer",
            "acks": "1",
            "linger.ms": 5,
            "batch.size": 16 * KIB,
            "max.in.flight.requests.per.connection": 1,
            "queue.buffering.max.kbytes": 256,
            "throttle_cb": measure.on_throttle,
        }
    )

    def step() -> None:
        try:
            producer.produce(TOPIC, RECORD, on_delivery=delivered)
        except BufferError:
            producer.poll(0.02)
        producer.poll(0)

    run_until(measure.done, step)
    producer.purge()
    producer.flush(10)
    return measure.rate()


def fetch_rate(cluster: LocalKafkaCluster) -> float:
    """Reads the topic from the start as ``quota-app``; the fetched bytes/s."""
    measure = RateAfterFirstThrottle()
    consumer = Consumer(
        {
            **quiet(cluster.client_config(APP)),
            "client.id": "quota-app-consumer",
            "group.id": GROUP,
            "enable.auto.commit": False,
            "queued.max.messages.kbytes": 256,
            "throttle_cb": measure.on_throttle,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])

    def step() -> None:
        for message in consumer.consume(num_messages=1000, timeout=0.1):
            if message.error() is None:
                measure.arrivals.append((time.monotonic(), len(message.value() or b"")))

    try:
        run_until(measure.done, step)
    finally:
        consumer.close()
    return measure.rate()


def preload(cluster: LocalKafkaCluster, size: int) -> None:
    """``size`` bytes for the reader, written as ``User:admin`` (our 4 MiB/s base only)."""
    producer = Producer({**quiet(cluster.client_config("admin")), "acks": "1", "linger.ms": 5})
    for _ in range(size // len(RECORD)):
        while True:
            try:
                producer.produce(TOPIC, RECORD)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0


def largest_throttle_ms(cluster: LocalKafkaCluster, size: int, timeout_s: float = 15) -> int:
    """Produces ``size`` bytes as ``quota-app``; the largest throttle the broker answered."""
    throttles: list[int] = []

    def on_throttle(event: Any) -> None:
        throttles.append(int(event.throttle_time))

    producer = Producer(
        {**quiet(cluster.client_config(APP)), "acks": "1", "throttle_cb": on_throttle}
    )
    for _ in range(size // len(RECORD)):
        producer.produce(TOPIC, RECORD)
        producer.poll(0)
    deadline = time.monotonic() + timeout_s
    while not any(throttles) and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.purge()
    producer.flush(10)
    return max(throttles, default=0)


def set_operator_quota(cluster: LocalKafkaCluster, work_dir: Path) -> None:
    """``producer_byte_rate`` and ``consumer_byte_rate`` for ``quota-app``, as an operator would."""
    kafka_configs(
        cluster,
        work_dir,
        *("--alter", "--entity-type", "users", "--entity-name", APP),
        "--add-config",
        f"producer_byte_rate={OPERATOR_RATE},consumer_byte_rate={OPERATOR_RATE}",
    )
    described = kafka_configs(
        cluster, work_dir, "--describe", "--entity-type", "users", "--entity-name", APP
    )
    assert f"producer_byte_rate={OPERATOR_RATE}" in described, described
    time.sleep(2)  # the broker applies the quota records from the metadata log


def decide(cluster: LocalKafkaCluster, decision: Path, state: str, factor: float) -> None:
    write_decision(decision, state, factor)
    wait_for(
        lambda: f"decision {state} factor {factor}" in cluster.broker_log(0).read_text(),
        timeout=30,
        what=f"the callback to apply {state}",
    )


def assert_near(measured: float, expected: float, what: str) -> None:
    kib = f"{measured / KIB:.0f} KiB/s, expected {expected / KIB:.0f} KiB/s"
    assert LOW * expected <= measured <= HIGH * expected, f"{what}: {kib}"


@pytest.mark.real_broker
def test_operator_quotas_hold_and_the_stricter_quota_wins(jar: Path, tmp_path: Path) -> None:
    decision = tmp_path / "decision.json"
    write_decision(decision, "OPEN", 1.0)
    cluster = callback_cluster(
        tmp_path / "kafka",
        [decision],
        jar,
        base_bytes_per_second=BASE,
        pause_bytes_per_second=FLOOR,
        callback_extra={"quota.window.num": str(WINDOW_S), "quota.window.size.seconds": "1"},
    )
    with cluster:
        decide(cluster, decision, "OPEN", 1.0)
        create_topic(cluster.client_config("admin"), TOPIC)
        issue_client(cluster, APP, topics_write=[TOPIC], topics_read=[TOPIC], groups_read=[GROUP])
        set_operator_quota(cluster, tmp_path)
        preload(cluster, 8 * MIB)

        rates = {"fetch OPEN": fetch_rate(cluster), "produce OPEN": produce_rate(cluster)}
        decide(cluster, decision, "PAUSE", 0.0)
        time.sleep(WINDOW_S + 1)  # quota-app's window empties: no step-down from its last rate
        rates["produce PAUSE"] = produce_rate(cluster)
        decide(cluster, decision, "THROTTLE", 0.5)
        time.sleep(1)
        rates["produce THROTTLE"] = produce_rate(cluster)

    summary = {name: round(rate / KIB) for name, rate in rates.items()}
    fetched = rates["fetch OPEN"]
    assert LOW * OPERATOR_RATE / 2 <= fetched <= HIGH * OPERATOR_RATE, (
        f"operator's consumer_byte_rate, Kafka's fetch throttle {summary}"
    )
    assert_near(rates["produce OPEN"], OPERATOR_RATE, f"operator's producer_byte_rate {summary}")
    assert_near(rates["produce PAUSE"], FLOOR, f"PAUSE: our floor is stricter {summary}")
    assert_near(rates["produce THROTTLE"], OPERATOR_RATE, f"THROTTLE: operator's wins {summary}")


@pytest.mark.real_broker
def test_kafka_4_1s_scala_quota_manager_keeps_the_operators_quota(
    jar: Path, tmp_path: Path
) -> None:
    version = "4.1.2"
    decision = tmp_path / "decision.json"
    write_decision(decision, "OPEN", 1.0)
    cluster = callback_cluster(
        tmp_path / "kafka",
        [decision],
        jar,
        base_bytes_per_second=BASE,
        pause_bytes_per_second=FLOOR,
        callback_extra={"quota.window.num": str(WINDOW_S), "quota.window.size.seconds": "1"},
        jars_dir=ensure_kafka_jars(version=version),
    )
    with cluster:
        assert f"Kafka version: {version}" in cluster.broker_log(0).read_text()
        decide(cluster, decision, "OPEN", 1.0)
        create_topic(cluster.client_config("admin"), TOPIC)
        issue_client(cluster, APP, topics_write=[TOPIC])
        set_operator_quota(cluster, tmp_path)
        throttle_ms = largest_throttle_ms(cluster, 2 * MIB)
    assert throttle_ms > 0, "2 MiB at the operator's 256 KiB/s, 768 KiB allowed per window"
