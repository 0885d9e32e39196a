"""The PAUSE bound of docs/broker-plugin.md, measured on the real 3-broker cluster per producer.

A scenario runs groups of producers, each group one ordinary principal (WRITE on its own topic
only) with N producer connections, each its own ``client.id``: Kafka's Java producer
(``java-producer/PauseProducers.java``, compiled here against the cluster's kafka-clients jar)
or librdkafka (``rdkafka_producers.py``). Every group produces 0.8 x base together (the
simulation's application rate) in 16 KiB records, batches up to 1 MiB, ``acks=1``, the Java
client's default delivery timeout (120 s) and a buffer of 3.2 s of base (see BASE_RATE).
PAUSE is induced the way the rest of the suite does it: broker 2's tmpfs volume is filled past
the hard limit, the sidecars decide PAUSE, every callback applies it; after ``hold_s`` the
filler is deleted.

Judged per producer, from its own acks: the longest gap between two acks from PAUSE until 30 s
after OPEN ("stall"), the time from OPEN until its rate over 5 s is back to 90 % of its own
rate before the PAUSE, and records that failed delivery.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_cluster import LocalKafkaCluster, ensure_kafka_jars, grant_sidecar_acls
from local_cluster.clients import issue_client
from local_cluster.processes import start_child
from local_cluster.quota_callback import callback_cluster
from schemas.decision import QuotaState
from tests.e2e.cluster_harness import (
    HARD_FREE,
    CallbackLog,
    Sidecar,
    all_decisions,
    create_data_topic,
    require_plugin_jar,
    sidecar_environment,
    wait_for,
)
from tests.real_fs.real_mounts import Mounts, fill, statvfs_sizes

KIB = 1024
MIB = 1024 * KIB
# The simulation (docs/broker-plugin.md) runs base 10 MiB/s with the Java producer's default
# 32 MiB buffer.memory. Three principals at 0.8 x 10 MiB/s saturate this 2-core machine, so the
# real cluster runs base 2 MiB/s with the buffer scaled alike (3.2 s of base): the same
# throttles (they depend on N x r, T_step and T_floor, not on base) and the same record ages.
BASE_RATE = 2 * MIB
PAUSE_RATE = 256 * KIB  # the callback's default floor
DEMAND = 0.8  # x base, per principal: the simulation's buffered application
RECORD_BYTES = 16 * KIB
REQUEST_BYTES = 1 * MIB  # batch.size: requests up to 1 MiB, the bound's worst case


def buffer_bytes(base_rate: int) -> int:
    """buffer.memory (librdkafka: queue.buffering.max.kbytes): 32 MiB per 10 MiB/s of base."""
    return 32 * MIB * base_rate // (10 * MIB)


DELIVERY_TIMEOUT_MS = 120_000  # the Java producer's default delivery.timeout.ms
JAVA_SOURCE = Path(__file__).with_name("java-producer") / "PauseProducers.java"


@dataclass(frozen=True)
class Window:
    """One producer's acks within one reporting second (epoch ms)."""

    t: int
    bytes: int
    acks: int
    failed: int
    sent: int
    first_ack: int
    last_ack: int
    max_latency_ms: int
    max_blocked_ms: int
    throttle_max_ms: int  # the longest throttle_time_ms the broker returned, lately
    final: bool
    error: str

    @classmethod
    def parse(cls, line: dict[str, Any]) -> Window:
        return cls(
            line["t"], line["bytes"], line["acks"], line["failed"], line["sent"],
            line["firstAck"], line["lastAck"], line["maxLatencyMs"], line["maxBlockedMs"],
            line["throttleMaxMs"], line["final"], line["error"],
        )  # fmt: skip


def compile_java_producers(out_dir: Path, jars_dir: Path | None = None) -> Path:
    """javac PauseProducers.java against the cluster's jars; returns the classes directory."""
    jars = jars_dir if jars_dir is not None else ensure_kafka_jars()
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-d", str(out_dir), "-cp", f"{jars}/*", str(JAVA_SOURCE)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out_dir


@dataclass
class ProducerGroup:
    """N producer connections of one principal, run as one child process."""

    client: str  # "java" or "rdkafka"
    connections: int
    principal: str
    topic: str
    leader: int
    directory: Path
    shared_client_id: bool = False  # every connection the same client.id (assumption (a) off)
    properties: Mapping[str, str] = field(default_factory=dict)  # over the client's config
    process: subprocess.Popen[bytes] | None = None

    @property
    def output(self) -> Path:
        return self.directory / f"{self.principal}.jsonl"

    @property
    def stop_file(self) -> Path:
        return self.directory / f"{self.principal}.stop"

    def start(
        self, cluster: LocalKafkaCluster, java_classes: Path | None, base_rate: int = BASE_RATE
    ) -> None:
        create_data_topic(cluster, self.topic, self.leader)
        issue_client(cluster, self.principal, topics_write=[self.topic])
        args = [
            self.topic, str(self.connections), self.principal,
            str(DEMAND * base_rate), str(RECORD_BYTES), str(self.stop_file),
        ] + (["shared-client-id"] if self.shared_client_id else [])  # fmt: skip
        if self.client == "java":
            if java_classes is None:
                raise ValueError("Java producers need compile_java_producers() first")
            config = self.directory / f"{self.principal}.properties"
            properties = _java_config(cluster, self, base_rate)
            config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
            classpath = f"{java_classes}:{ensure_kafka_jars()}/*"
            heap = f"-Xmx{256 + 40 * self.connections}m"
            command = ["java", heap, "-XX:+UseSerialGC", "-cp", classpath, "PauseProducers"]
        else:
            config = self.directory / f"{self.principal}.json"
            config.write_text(json.dumps(_rdkafka_config(cluster, self, base_rate)))
            command = [sys.executable, "-m", "tests.e2e.rdkafka_producers"]
        self.process = start_child(
            [*command, str(config), *args], log_file=self.output, cwd=Path.cwd()
        )

    def stop(self, timeout_s: float = 200.0) -> None:
        """Stop sending; wait until every record is acked or failed (delivery timeout 120 s)."""
        self.stop_file.touch()
        if self.process is not None:
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def all_acked(self) -> bool:
        """Whether every producer has had a record acknowledged (the JVM may start slowly)."""
        return self.output.exists() and all(
            any(window.acks for window in windows) for windows in self.windows().values()
        )

    def windows(self) -> dict[int, list[Window]]:
        per_producer: dict[int, list[Window]] = {i: [] for i in range(self.connections)}
        for text in self.output.read_text().splitlines():
            if text.startswith("{"):
                line = json.loads(text)
                per_producer[line["p"]].append(Window.parse(line))
        return per_producer


def _java_config(
    cluster: LocalKafkaCluster, group: ProducerGroup, base_rate: int
) -> dict[str, str]:
    return {
        **cluster.java_client_config(group.principal),
        "acks": "1",  # one replica per topic; min.insync.replicas=2 refuses acks=all
        "batch.size": str(REQUEST_BYTES),
        "buffer.memory": str(buffer_bytes(base_rate)),
        "key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
        "value.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
        **group.properties,
    }


def _rdkafka_config(
    cluster: LocalKafkaCluster, group: ProducerGroup, base_rate: int
) -> dict[str, Any]:
    return {
        **cluster.client_config(group.principal),
        "acks": 1,
        "linger.ms": 5,  # the Java producer's default in Kafka 4
        "batch.size": 1_000_000,  # librdkafka's default and maximum useful: message.max.bytes
        "queue.buffering.max.kbytes": buffer_bytes(base_rate) // KIB,
        "message.timeout.ms": DELIVERY_TIMEOUT_MS,
        **group.properties,
    }


@dataclass
class PauseBoundCluster:
    """3 brokers with the callback, tmpfs volumes, one sidecar per broker."""

    kafka: LocalKafkaCluster
    volumes: list[Path]
    sidecars: list[Sidecar]
    callback_logs: list[CallbackLog]
    base_rate: int

    def all_applied(self, state: QuotaState) -> bool:
        return all(log.applied(state) for log in self.callback_logs)

    def pause(self, hold_s: float) -> tuple[float, float]:
        """Fill broker 2 past the hard limit until every callback applies PAUSE, hold it
        ``hold_s``, free the volume until every callback applies OPEN: (PAUSE, OPEN) epoch s."""
        for log in self.callback_logs:
            log.mark()
        filler = self.volumes[2] / "filler.bin"
        _, free = statvfs_sizes(self.volumes[2])
        fill(self.volumes[2], filler.name, max(0, free - HARD_FREE // 2))
        wait_for("every callback applying PAUSE", lambda: self.all_applied(QuotaState.PAUSE), 30)
        paused_at = time.time()
        time.sleep(max(0.0, paused_at + hold_s - time.time()))
        for log in self.callback_logs:
            log.mark()
        filler.unlink()
        wait_for("every callback applying OPEN", lambda: self.all_applied(QuotaState.OPEN), 30)
        return paused_at, time.time()


CEILING_OFF = {
    "volume.quota.pause.principal.max.bytes.per.second": str(1 << 40),
    "volume.quota.pause.broker.max.bytes.per.second": str(1 << 40),
}
"""These scenarios measure the 30 s throttle bound alone. With the PAUSE ceiling's defaults,
32 x 1 MiB requests of one principal are past where the ceiling allows that bound (N r above
about half the ceiling x 30 s: the disk wins, docs/broker-plugin.md "The PAUSE ceiling");
the ceiling's own figures on the real cluster are in docs/benchmarks.md."""


@contextmanager
def pause_bound_cluster(
    base: Path,
    base_rate: int = BASE_RATE,
    volume_size: str = "512m",
    callback_extra: Mapping[str, str] | None = CEILING_OFF,
) -> Iterator[PauseBoundCluster]:
    """Start everything under ``base``; stop it all on exit (needs root for tmpfs).
    ``callback_extra``: callback properties over the defaults (None: the shipped defaults)."""
    decision_files = [base / f"decision-{index}.json" for index in range(3)]
    with Mounts() as mounts:
        volumes = [mounts.tmpfs(base / f"volume-{i}", size=volume_size) for i in range(3)]
        log_dirs = [volume / "kafka-logs" for volume in volumes]
        kafka = callback_cluster(
            base / "kafka",
            decision_files,
            require_plugin_jar(),
            base_bytes_per_second=base_rate,
            pause_bytes_per_second=PAUSE_RATE,
            callback_extra=callback_extra,
            log_dirs=[[log_dir] for log_dir in log_dirs],
        )
        with kafka:
            grant_sidecar_acls(kafka)
            sidecars = [
                Sidecar(
                    index,
                    decision_files[index],
                    sidecar_environment(kafka, index, log_dirs[index], decision_files[index]),
                    base / f"sidecar-{index}.log",
                )
                for index in range(3)
            ]
            try:
                for sidecar in sidecars:
                    sidecar.start()
                wait_for("every broker OPEN", all_decisions(decision_files, QuotaState.OPEN), 90)
                logs = [CallbackLog(kafka.broker_log(index)) for index in range(3)]
                yield PauseBoundCluster(kafka, volumes, sidecars, logs, base_rate)
            finally:
                for sidecar in sidecars:
                    sidecar.stop()


@dataclass(frozen=True)
class PauseRun:
    groups: list[ProducerGroup]
    paused_at: float
    opened_at: float
    stopped_at: float


def run_pause(
    cluster: PauseBoundCluster,
    groups: Sequence[ProducerGroup],
    java_classes: Path | None,
    *,
    warmup_s: float = 25.0,
    hold_s: float = 60.0,
    after_open_s: float = 40.0,
) -> PauseRun:
    """Start every group, PAUSE for ``hold_s`` once they have run ``warmup_s``, keep them
    running ``after_open_s`` after OPEN, then stop them (each waits for its last acks)."""
    started = []
    try:
        for group in groups:
            group.start(cluster.kafka, java_classes, cluster.base_rate)
            started.append(group)
        wait_for("every producer's first ack", lambda: all(g.all_acked() for g in groups), 120)
        time.sleep(warmup_s)
        paused_at, opened_at = cluster.pause(hold_s)
        time.sleep(max(0.0, opened_at + after_open_s - time.time()))
    finally:
        stopped_at = time.time()
        for group in started:
            group.stop_file.touch()
        for group in started:
            group.stop()
    return PauseRun(list(groups), paused_at, opened_at, stopped_at)
