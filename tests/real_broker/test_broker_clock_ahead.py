"""On a real cluster in topic mode: a broker whose wall clock is 40 s ahead keeps producers OPEN.

Three Kafka nodes whose quota callbacks read the decision from the decisions topic
(``volume.quota.decision.source=topic``) and one ``volume-quota cluster-agent`` deciding OPEN.
Broker 1's JVM runs under libfaketime with ``FAKETIME=+40s`` and the monotonic clock left
alone (``FAKETIME_DONT_FAKE_MONOTONIC=1``): a host whose NTP is off. Every decision the agent
writes is valid for ``validUntil - decidedAt`` on the agent's clock; compared with broker 1's
wall clock it would have expired 30 s before it arrived. The callback must count that lifetime
on its own monotonic clock from the moment it received the decision, so broker 1 applies OPEN
like the others, and a PAUSE still reaches it.

libfaketime: ``bash tests/real_broker/install-faketime.sh`` (Debian's packages);
``VOLUME_QUOTA_LIBFAKETIME`` names another copy of the library. ``VOLUME_QUOTA_CLOCK_TEST_JAR``
runs the same checks against another build of the callback (e.g. one that compared
``validUntil`` with the wall clock, to see these tests fail).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from local_cluster import BrokerPorts, ClusterPki, LocalKafkaCluster, grant_sidecar_acls
from local_cluster.acls import create_acls
from local_cluster.ports import free_loopback_ports
from schemas.decision import QuotaState
from tests.e2e.cluster_harness import (
    BASE_RATE,
    PAUSE_RATE,
    STALE_AFTER_S,
    CallbackLog,
    RateProbe,
    Sidecar,
    agent_acl_bindings,
    agent_environment,
    create_data_topic,
    probe_status,
    require_plugin_jar,
    topic_callback_properties,
    wait_for,
)

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(600)]

SKEW_S = 40
SKEWED = 1
"""The broker whose wall clock is ``SKEW_S`` ahead; brokers 0 and 2 keep the host's clock."""
ON_MISSING = "applying on-missing"
FIRST_DECISION_TIMEOUT_S = 90


def libfaketime() -> Path:
    default = Path(f"/usr/lib/{platform.machine()}-linux-gnu/faketime/libfaketime.so.1")
    library = Path(os.environ.get("VOLUME_QUOTA_LIBFAKETIME", str(default)))
    if not library.exists():
        raise AssertionError(
            f"{library} is missing: run `bash tests/real_broker/install-faketime.sh`"
        )
    return library


def plugin_jar() -> Path:
    override = os.environ.get("VOLUME_QUOTA_CLOCK_TEST_JAR")
    return Path(override) if override else require_plugin_jar()


def clock_ahead_environment(library: Path, seconds: int) -> dict[str, str]:
    """A JVM whose wall clock runs ``seconds`` ahead and whose monotonic clock is untouched."""
    return {
        "LD_PRELOAD": str(library),
        "FAKETIME": f"+{seconds}s",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        # glibc 2.36 makes libfaketime 0.9.10 turn on its "monotonic fix" for
        # pthread_cond_timedwait, which returns every timed wait of the JVM at once (parkNanos,
        # Object.wait: measured 0 ms for 10 x 100 ms): the broker spins and takes minutes to
        # start. Without it the timed waits keep their length, as on a real skewed host.
        "FAKETIME_FORCE_MONOTONIC_FIX": "0",
    }


@dataclass
class SkewedCluster:
    kafka: LocalKafkaCluster
    base: Path
    agent: Sidecar
    callback_logs: list[CallbackLog]
    probe: RateProbe
    """Produces as fast as allowed to a partition led by the skewed broker (User:admin)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SkewedCluster]:
    jar = plugin_jar()
    library = libfaketime()
    base = tmp_path_factory.mktemp("clock-ahead")
    numbers = free_loopback_ports(9)
    ports = [BrokerPorts(*numbers[3 * index : 3 * index + 3]) for index in range(3)]
    bootstrap = ",".join(f"127.0.0.1:{port.client}" for port in ports)
    reader = ClusterPki.create_or_open(base / "kafka" / "pki", 3).identity("consumer")
    environments: list[dict[str, str]] = [{}, {}, {}]
    environments[SKEWED] = clock_ahead_environment(library, SKEW_S)
    kafka = LocalKafkaCluster(
        base / "kafka",
        broker_count=3,
        broker_properties=topic_callback_properties(bootstrap, reader),
        extra_classpath=[jar],
        ports=ports,
        per_broker_environment=environments,
    )
    with kafka:
        logs = [CallbackLog(kafka.broker_log(index)) for index in range(3)]
        for log in logs:
            log.offset = 0
        grant_sidecar_acls(kafka)
        create_acls(kafka, agent_acl_bindings())
        agent = Sidecar(
            0,
            base / "unused",
            agent_environment(kafka, {"VOLUME_QUOTA_SURVEY_INTERVAL": "1s"}),
            base / "agent-open.log",
            command="cluster-agent",
        )
        probe: RateProbe | None = None
        try:
            agent.start()
            wait_for(
                "the agent's first decision on every broker",
                lambda: all(log.seen("reading __volume_quota_decisions-0") for log in logs),
                FIRST_DECISION_TIMEOUT_S,
            )
            create_data_topic(kafka, f"data-on-broker-{SKEWED}", SKEWED)
            probe = RateProbe(kafka.client_config("admin"), f"data-on-broker-{SKEWED}").start()
            yield SkewedCluster(kafka, base, agent, logs, probe)
        finally:
            if probe is not None:
                probe.stop()
            agent.stop()


def log_append_offset_s(kafka: LocalKafkaCluster, leader: int) -> float:
    """The leader's wall clock minus this host's, from a record's LogAppendTime (the broker
    stamps the record with its own ``System.currentTimeMillis()``)."""
    topic = f"clock-on-broker-{leader}"
    admin = AdminClient(kafka.client_config("admin"))
    new = NewTopic(
        topic,
        num_partitions=1,
        replica_assignment=[[leader]],
        config={"message.timestamp.type": "LogAppendTime"},
    )
    admin.create_topics([new], request_timeout=30)[topic].result(timeout=30)
    stamps: list[tuple[int, int]] = []

    def delivered(error: KafkaError | None, message: Any) -> None:
        assert error is None, error
        stamps.append(message.timestamp())

    producer = Producer({**kafka.client_config("admin"), "acks": 1, "linger.ms": 0})
    wait_for("metadata of the new topic", lambda: topic in producer.list_topics(topic).topics, 30)
    before = time.time()
    producer.produce(topic, value=b"what time is it?", on_delivery=delivered)
    assert producer.flush(30) == 0
    after = time.time()
    assert after - before < 5, "the produce took too long to date it"
    kind, stamp_ms = stamps[0]
    assert kind == TIMESTAMP_LOG_APPEND_TIME, kind
    return stamp_ms / 1000 - (before + after) / 2


def last_status(log: CallbackLog) -> str:
    """The callback's last logged decision status (``decision ...`` or ``no valid decision``)."""
    lines = [
        line
        for line in log.path.read_text(errors="replace").splitlines()
        if "volume-quota engine" in line and ("decision" in line.split("engine", 1)[1])
    ]
    return lines[-1] if lines else "no decision status logged"


def test_1_the_skewed_brokers_wall_clock_is_40_s_ahead_inside_its_jvm(
    cluster: SkewedCluster,
) -> None:
    skewed = log_append_offset_s(cluster.kafka, SKEWED)
    print(f"broker {SKEWED}: LogAppendTime {skewed:+.2f} s from this host's clock")
    assert SKEW_S - 3 <= skewed <= SKEW_S + 3, f"broker {SKEWED} is {skewed:+.1f} s off"
    normal = log_append_offset_s(cluster.kafka, 0)
    print(f"broker 0: LogAppendTime {normal:+.2f} s from this host's clock")
    assert abs(normal) <= 3, f"broker 0 is {normal:+.1f} s off"


def test_2_the_skewed_broker_keeps_producers_open_for_two_validity_periods(
    cluster: SkewedCluster,
) -> None:
    skewed_log = cluster.callback_logs[SKEWED]
    try:
        wait_for(
            "every broker's callback applying the agent's OPEN",
            lambda: all(log.applied(QuotaState.OPEN) for log in cluster.callback_logs),
            30,
        )
    except AssertionError as error:
        raise AssertionError(f"{error}; broker {SKEWED}: {last_status(skewed_log)}") from None
    for log in cluster.callback_logs:
        log.mark()
    watched_from = time.monotonic()
    watch_s = 2 * STALE_AFTER_S + 5
    time.sleep(watch_s)
    problems = {
        index: [text for text in (ON_MISSING, "decision PAUSE") if log.seen(text)]
        for index, log in enumerate(cluster.callback_logs)
    }
    assert problems == {0: [], 1: [], 2: []}, (
        f"no PAUSE on any broker for {watch_s} s; broker {SKEWED}'s log: {skewed_log.path}"
    )
    # Kafka throttles by holding responses back, so the deliveries come in bursts about a
    # quota window (11 s) apart: a 20 s window holds two or three of them and measures the
    # base rate within about 40 %. Half the base rate is still eight times the PAUSE rate.
    rate = cluster.probe.rate(watch_s - 5)
    assert rate >= 0.5 * BASE_RATE, (
        f"the producer on broker {SKEWED} at {rate / 1024:.0f} KiB/s, base"
        f" {BASE_RATE / 1024:.0f}: {probe_status([cluster.probe], watched_from)}"
    )


def test_3_a_pause_decision_still_reaches_the_skewed_broker(cluster: SkewedCluster) -> None:
    for log in cluster.callback_logs:
        log.mark()
    # The same agent, restarted with limits this host's disk breaches: it decides PAUSE.
    cluster.agent.stop()
    cluster.agent.environment = {
        **cluster.agent.environment,
        "VOLUME_QUOTA_SOFT_LIMIT": "MinFreePercentage:99.5",
        "VOLUME_QUOTA_HARD_LIMIT": "MinFreePercentage:99",
    }
    cluster.agent.log_file = cluster.base / "agent-pause.log"
    cluster.agent.start()
    try:
        wait_for(
            "every broker's callback, the skewed one too, applying the agent's PAUSE",
            lambda: all(log.applied(QuotaState.PAUSE) for log in cluster.callback_logs),
            60,
        )
    except AssertionError as error:
        raise AssertionError(
            f"{error}; broker {SKEWED}: {last_status(cluster.callback_logs[SKEWED])}"
        ) from None
    paused_at = time.monotonic()
    wait_for(
        f"the producer on broker {SKEWED} down to the pause floor",
        lambda: cluster.probe.rate(8) <= 2.5 * PAUSE_RATE,
        60,
        interval_s=1,
    )
    assert time.monotonic() - paused_at < 60, probe_status([cluster.probe], paused_at)
