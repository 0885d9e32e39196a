"""A 3-broker cluster that throttles itself: real Kafka with the callback, one sidecar per broker,
each broker's log dir on its own tmpfs, and producers whose delivered rate is measured.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AdminClient,
    NewTopic,
    ResourceType,
)

from local_cluster import IdentityFiles, LocalKafkaCluster, allow
from local_cluster.processes import die_with_parent
from schemas.decision import QuotaDecision, QuotaState
from tests.support import PLUGIN_JAR

REPOSITORY = Path(__file__).resolve().parents[2]

MIB = 1024 * 1024
VOLUME_SIZE = 256 * MIB
SOFT_FREE = 128 * MIB
HARD_FREE = 64 * MIB
BASE_RATE = 1 * MIB
PAUSE_RATE = 64 * 1024
STALE_AFTER_S = 10


def require_plugin_jar() -> Path:
    if not PLUGIN_JAR.exists():
        raise AssertionError(
            f"{PLUGIN_JAR} is missing: build it with `mvn -q package` in deploy/broker-plugin "
            "(tests/run.sh does)"
        )
    return PLUGIN_JAR


def callback_properties(
    decision_file: Path, *, base_rate: int = BASE_RATE, pause_rate: int = PAUSE_RATE
) -> dict[str, str]:
    return {
        "client.quota.callback.class": "io.volumequota.broker.VolumeQuotaCallback",
        "volume.quota.decision.path": str(decision_file),
        "volume.quota.produce.base.bytes.per.second": str(base_rate),
        "volume.quota.pause.bytes.per.second": str(pause_rate),
        "volume.quota.excluded.principals": "User:publisher;User:consumer",
        "volume.quota.on.missing": "PAUSE",
        "volume.quota.reload.interval.ms": "250",
        # Keep the producers' own data from filling the small volumes.
        "log.retention.check.interval.ms": "1000",
        "log.segment.delete.delay.ms": "1000",
    }


def create_data_topic(cluster: LocalKafkaCluster, name: str, leader: int) -> None:
    admin = AdminClient(cluster.client_config("admin"))
    topic = NewTopic(
        name,
        num_partitions=1,  # librdkafka wants it spelled out next to a replica assignment
        replica_assignment=[[leader]],
        config={"segment.bytes": str(1 * MIB), "retention.bytes": str(4 * MIB)},
    )
    admin.create_topics([topic], request_timeout=30)[name].result(timeout=30)


@dataclass
class Sidecar:
    broker_id: int
    decision_file: Path
    environment: dict[str, str]
    log_file: Path
    command: str = "sidecar"
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.stop()
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(  # SIGTERM when the test process dies
                die_with_parent([sys.executable, "-m", "volume_quota", self.command]),
                env=self.environment,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None


def sidecar_environment(
    cluster: LocalKafkaCluster,
    broker_id: int,
    log_dir: Path,
    decision_file: Path,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    identity = cluster.identity_files("publisher")
    base = {key: value for key, value in os.environ.items() if not key.startswith("VOLUME_QUOTA_")}
    return {
        **base,
        "VOLUME_QUOTA_BROKER_ID": str(broker_id),
        "VOLUME_QUOTA_LOG_DIRS": str(log_dir),
        "VOLUME_QUOTA_BOOTSTRAP_SERVERS": cluster.bootstrap_servers,
        "VOLUME_QUOTA_TLS_CA_FILE": str(identity.ca),
        "VOLUME_QUOTA_TLS_CERT_FILE": str(identity.cert),
        "VOLUME_QUOTA_TLS_KEY_FILE": str(identity.key),
        "VOLUME_QUOTA_SOFT_LIMIT": f"MinFreeBytes:{SOFT_FREE}",
        "VOLUME_QUOTA_HARD_LIMIT": f"MinFreeBytes:{HARD_FREE}",
        "VOLUME_QUOTA_DECISION_FILE": str(decision_file),
        "VOLUME_QUOTA_STALE_AFTER": f"{STALE_AFTER_S}s",
        "VOLUME_QUOTA_DECISION_VALID_FOR": f"{STALE_AFTER_S}s",
        "VOLUME_QUOTA_HEARTBEAT_INTERVAL": "2s",
        "VOLUME_QUOTA_READINESS_MAX_AGE": "10s",
        "VOLUME_QUOTA_LIVE_BROKER_REFRESH_INTERVAL": "1s",
        "VOLUME_QUOTA_METRICS_PORT": "0",
        "VOLUME_QUOTA_METRICS_HOST": "127.0.0.1",
        "VOLUME_QUOTA_TLS_VERIFY_HOSTNAME": "false",
        **(extra or {}),
    }


def read_decision(path: Path) -> QuotaDecision | None:
    try:
        return QuotaDecision.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None


def wait_for(
    description: str, condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.1
) -> float:
    """Seconds it took for ``condition`` to hold; fails the test after ``timeout_s``."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {description}")
        time.sleep(interval_s)
    return time.monotonic() - start


def all_decisions(files: list[Path], state: QuotaState) -> Callable[[], bool]:
    def check() -> bool:
        decisions = [read_decision(path) for path in files]
        return all(decision is not None and decision.state is state for decision in decisions)

    return check


class CallbackLog:
    """Watches a broker's server.log for the callback applying a decision state."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size

    def applied(self, state: QuotaState) -> bool:
        return self.seen(f"decision {state.value}")

    def last_applied(self) -> QuotaState | None:
        """The state of the last decision the callback applied, from the whole log."""
        found = re.findall(rb"\bdecision (OPEN|THROTTLE|PAUSE)\b", self.path.read_bytes())
        return QuotaState(found[-1].decode()) if found else None

    def seen(self, text: str) -> bool:
        """Whether ``text`` was logged since the mark."""
        with self.path.open("rb") as log:
            log.seek(self.offset)
            return text.encode() in log.read()


@dataclass
class RateProbe:
    """Produces as fast as the broker lets it and records what was delivered, when."""

    config: Mapping[str, Any]
    topic: str
    message_size: int = 16 * 1024
    deliveries: deque[tuple[float, int]] = field(default_factory=deque)
    errors: list[str] = field(default_factory=list)
    client_events: list[tuple[float, str]] = field(default_factory=list)
    """What librdkafka reported on its own (disconnects, timed-out requests), and when."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> RateProbe:
        self._thread = threading.Thread(target=self._run, name=f"probe-{self.topic}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        producer = Producer(
            {
                **self.config,
                "acks": 1,
                "linger.ms": 5,
                "batch.size": 64 * 1024,
                "queue.buffering.max.kbytes": 1024,
                "message.timeout.ms": 600_000,
                "error_cb": self._client_event,
            }
        )
        payload = b"x" * self.message_size

        def delivered(error: KafkaError | None, message: Any) -> None:
            if error is None:
                self.deliveries.append((time.monotonic(), len(payload)))
            else:
                self.errors.append(str(error))

        while not self._stop.is_set():
            try:
                producer.produce(self.topic, value=payload, on_delivery=delivered)
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        producer.flush(5)

    def _client_event(self, error: KafkaError) -> None:
        self.client_events.append((time.monotonic(), str(error)))

    def rate(self, window_s: float) -> float:
        """Bytes per second delivered over the last ``window_s`` seconds."""
        since = time.monotonic() - window_s
        return sum(size for at, size in list(self.deliveries) if at >= since) / window_s

    def timeline(self, since: float, bucket_s: float = 1.0) -> list[int]:
        """KiB/s delivered in each ``bucket_s`` since the monotonic moment ``since``."""
        buckets = [0] * max(1, int((time.monotonic() - since) // bucket_s))
        for at, size in list(self.deliveries):
            index = int((at - since) // bucket_s)
            if 0 <= index < len(buckets):
                buckets[index] += size
        return [round(total / bucket_s / 1024) for total in buckets]

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)


def probe_status(probes: list[RateProbe], since: float | None = None) -> str:
    """What each producer did lately (and second by second since ``since``), for a failure
    message."""
    now = time.monotonic()
    parts = []
    for probe in probes:
        last = probe.deliveries[-1][0] if probe.deliveries else None
        events = [(round(now - at, 1), text) for at, text in probe.client_events[-5:]]
        parts.append(
            f"{probe.topic}: {probe.rate(2) / 1024:.0f} KiB/s over 2 s,"
            f" {probe.rate(30) / 1024:.0f} KiB/s over 30 s, last delivery"
            f" {'never' if last is None else f'{now - last:.1f} s ago'}, errors {probe.errors[-3:]}"
            + ("" if since is None else f", KiB/s per second since: {probe.timeline(since)}")
            + f", client events (s ago): {events}"
        )
    return "; ".join(parts)


def wait_for_each_recovery(
    probes: list[RateProbe], since: float, rate: float, timeout_s: float
) -> dict[str, float]:
    """Seconds from ``since`` until each producer delivered ``rate`` over 2 s, by topic.

    Each producer on its own: once paused, producers deliver in bursts (over 30 s they are back
    at base) and are seldom all above the rate within the same 2 s.
    """
    recovered: dict[str, float] = {}

    def each_back() -> bool:
        for probe in probes:
            if probe.topic not in recovered and probe.rate(2) >= rate:
                recovered[probe.topic] = time.monotonic() - since
        return len(recovered) == len(probes)

    try:
        wait_for("each producer back to its rate", each_back, timeout_s, interval_s=0.25)
    except AssertionError as error:
        raise AssertionError(f"{error}; {probe_status(probes, since)}") from None
    return recovered


def write_timings(timings: Mapping[str, float]) -> None:
    """Where the benchmark reads the figures (benchmarks/e2e_reaction.py)."""
    target = os.environ.get("VOLUME_QUOTA_E2E_TIMINGS")
    if target:
        Path(target).write_text(json.dumps(dict(timings), indent=2))


# ------------------------------------------------------------------ without sidecars
# (issue 12: `volume-quota cluster-agent` + the callback's decision.source=topic)

DECISIONS_TOPIC = "__volume_quota_decisions"
OVERRIDE_TOPIC = "__volume_quota_overrides"


def topic_callback_properties(bootstrap_servers: str, identity: IdentityFiles) -> dict[str, str]:
    """The callback reading the decisions topic as ``identity`` (mTLS, PEM files), no file."""
    properties = callback_properties(Path("/nonexistent"))
    del properties["volume.quota.decision.path"]
    consumer = "volume.quota.decision.consumer."
    return {
        **properties,
        "volume.quota.decision.source": "topic",
        "volume.quota.decision.topic": DECISIONS_TOPIC,
        consumer + "bootstrap.servers": bootstrap_servers,
        consumer + "security.protocol": "SSL",
        consumer + "ssl.keystore.type": "PEM",
        consumer + "ssl.keystore.location": str(identity.keystore),
        consumer + "ssl.truststore.type": "PEM",
        consumer + "ssl.truststore.location": str(identity.ca),
    }


def agent_acl_bindings(
    agent: str = "User:publisher", reader: str = "User:consumer"
) -> list[AclBinding]:
    """What `cluster-agent --help` asks for beyond the sidecar's snapshot-topic ACLs, and the
    callbacks' READ + DESCRIBE on the decisions topic (no group: the callback assigns)."""
    bindings = allow(
        ResourceType.TOPIC,
        DECISIONS_TOPIC,
        agent,
        AclOperation.CREATE,
        AclOperation.WRITE,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
    )
    bindings += allow(
        ResourceType.TOPIC, OVERRIDE_TOPIC, agent, AclOperation.READ, AclOperation.DESCRIBE
    )
    bindings += allow(ResourceType.BROKER, "kafka-cluster", agent, AclOperation.DESCRIBE)
    bindings += allow(
        ResourceType.TOPIC, DECISIONS_TOPIC, reader, AclOperation.READ, AclOperation.DESCRIBE
    )
    return bindings


def agent_environment(
    cluster: LocalKafkaCluster, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """`volume-quota cluster-agent` as ``publisher`` with the limits and timings of the sidecars."""
    identity = cluster.identity_files("publisher")
    base = {key: value for key, value in os.environ.items() if not key.startswith("VOLUME_QUOTA_")}
    return {
        **base,
        "VOLUME_QUOTA_BOOTSTRAP_SERVERS": cluster.bootstrap_servers,
        "VOLUME_QUOTA_TLS_CA_FILE": str(identity.ca),
        "VOLUME_QUOTA_TLS_CERT_FILE": str(identity.cert),
        "VOLUME_QUOTA_TLS_KEY_FILE": str(identity.key),
        "VOLUME_QUOTA_TLS_VERIFY_HOSTNAME": "false",
        "VOLUME_QUOTA_DECISIONS_TOPIC": DECISIONS_TOPIC,
        "VOLUME_QUOTA_SOFT_LIMIT": f"MinFreeBytes:{SOFT_FREE}",
        "VOLUME_QUOTA_HARD_LIMIT": f"MinFreeBytes:{HARD_FREE}",
        "VOLUME_QUOTA_STALE_AFTER": f"{STALE_AFTER_S}s",
        "VOLUME_QUOTA_DECISION_VALID_FOR": f"{STALE_AFTER_S}s",
        "VOLUME_QUOTA_HEARTBEAT_INTERVAL": "2s",
        "VOLUME_QUOTA_READINESS_MAX_AGE": "10s",
        "VOLUME_QUOTA_LIVE_BROKER_REFRESH_INTERVAL": "1s",
        "VOLUME_QUOTA_METRICS_PORT": "0",
        "VOLUME_QUOTA_METRICS_HOST": "127.0.0.1",
        **(extra or {}),
    }


@dataclass
class DecisionTail:
    """Every decision written to the decisions topic from now on, with its arrival time."""

    config: Mapping[str, Any]
    topic: str = DECISIONS_TOPIC
    decisions: list[tuple[float, QuotaDecision]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> DecisionTail:
        self._thread = threading.Thread(target=self._run, name="decision-tail", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        consumer = Consumer(
            {**self.config, "group.id": "e2e-decision-tail", "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition(self.topic, 0, OFFSET_END)])
        try:
            while not self._stop.is_set():
                message = consumer.poll(0.2)
                value = None if message is None or message.error() is not None else message.value()
                if value is None:
                    continue
                try:
                    decision = QuotaDecision.model_validate_json(value)
                except ValueError:
                    continue
                self.decisions.append((time.monotonic(), decision))
        finally:
            consumer.close()

    def since(self, start: float) -> list[QuotaDecision]:
        return [decision for at, decision in list(self.decisions) if at >= start]

    def latest(self) -> QuotaDecision | None:
        return self.decisions[-1][1] if self.decisions else None

    def first_at(self, state: QuotaState, since: float) -> float | None:
        return next(
            (
                at
                for at, decision in list(self.decisions)
                if at >= since and decision.state is state
            ),
            None,
        )

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
