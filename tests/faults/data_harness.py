"""Data, certificate and file faults on a real cluster (issue 14's fault matrix, second half).

Builds on the end-to-end harness (tests/e2e/cluster_harness.py: ``Sidecar``,
``sidecar_environment``, ``read_decision``, ``wait_for``, ``CallbackLog``) and adds what these
faults need:

- ``Daemon``: a ``volume-quota`` process (sidecar, publish or decide) with its own metrics
  port, whose wall clock can be set off by a number of seconds (clock skew);
- ``scrape`` / ``readiness``: what the process says about itself over HTTP;
- ``DecisionTrace``: a decision file sampled in a thread of its own, to tell how long a state
  lasted and whether a fault ever changed it;
- ``TlsDir``: a process's TLS files in a directory of the test's own, swapped the way a
  certificate renewal swaps them;
- signed snapshot records, written straight to the topic (replays, forgeries);
- ``Figures``: the measured figures, printed and merged into ``VOLUME_QUOTA_FAULT_FIGURES``.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    NewTopic,
)
from prometheus_client.parser import text_string_to_metric_families

from local_cluster import IdentityFiles, LocalKafkaCluster, sidecar_acl_bindings
from local_cluster.acls import create_acls
from local_cluster.processes import die_with_parent
from schemas.decision import QuotaDecision, QuotaState, ReasonKind
from tests.e2e.cluster_harness import Sidecar, read_decision, sidecar_environment, wait_for
from tests.real_broker.kafka_helpers import quiet
from tests.snapshot_factory import bytes_limit, snapshot_line, volume
from volume_quota.certificate_files import TlsFiles, load_signer

MIB = 1024 * 1024
CONSUMER_GROUP = "volume-quota-consumer"

# ------------------------------------------------------------------ figures


class Figures:
    """Figures measured by the fault tests: printed (``pytest -s``) and, when the variable
    ``VOLUME_QUOTA_FAULT_FIGURES`` names a file, merged into that JSON file."""

    def __init__(self) -> None:
        self.values: dict[str, float | str] = {}

    def record(self, name: str, value: float | str) -> None:
        rounded = round(value, 2) if isinstance(value, float) else value
        self.values[name] = rounded
        print(f"FIGURE {name} = {rounded}")
        target = os.environ.get("VOLUME_QUOTA_FAULT_FIGURES")
        if target:
            path = Path(target)
            stored = json.loads(path.read_text()) if path.exists() else {}
            stored[name] = rounded
            path.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n")


# ------------------------------------------------------------------ processes


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SKEWED_MAIN = """\
import sys
from datetime import timedelta
import consumer.clock
from volume_quota.cli import main

offset = timedelta(seconds=float(sys.argv.pop(1)))
true_wall = consumer.clock.SystemClock.wall
consumer.clock.SystemClock.wall = lambda self: true_wall(self) + offset
sys.exit(main(sys.argv[1:]))
"""
"""``volume-quota`` with its wall clock ``offset`` seconds off: what a host whose clock is wrong
gives the daemons (``snapshotAt``, ``decidedAt``). librdkafka's clocks are left alone; TLS is
unaffected by minutes since the test certificates start an hour in the past."""


@dataclass
class Daemon(Sidecar):
    """A ``volume-quota`` process with its own metrics port and, optionally, a wrong clock."""

    metrics_port: int = 0
    clock_offset_s: float = 0.0

    def start(self) -> None:
        self.stop()
        if self.clock_offset_s:
            command = [sys.executable, "-c", SKEWED_MAIN, str(self.clock_offset_s), self.command]
        else:
            command = [sys.executable, "-m", "volume_quota", self.command]
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(  # SIGTERM when the test process dies
                die_with_parent(command),
                env={**self.environment, "VOLUME_QUOTA_METRICS_PORT": str(self.metrics_port)},
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=Path(__file__).resolve().parents[2],
            )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def events(self) -> list[dict[str, Any]]:
        """The JSON log lines the process wrote (its structured log)."""
        found = []
        for line in self.log_text().splitlines():
            if line.startswith("{"):
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
        return found

    def metric(self, name: str, **labels: str) -> float | None:
        return scrape(self.metrics_port).get((name, tuple(sorted(labels.items()))))

    def ready(self) -> tuple[bool, str]:
        return readiness(self.metrics_port)


def daemon(
    cluster: LocalKafkaCluster,
    *,
    command: str,
    broker_id: int,
    log_dirs: Sequence[Path],
    decision_file: Path,
    log_file: Path,
    topic: str,
    tls: TlsFiles | IdentityFiles | None = None,
    extra: Mapping[str, str] | None = None,
    clock_offset_s: float = 0.0,
) -> Daemon:
    """A process configured like the end-to-end sidecars (10 s stale-after and validity, 2 s
    heartbeat, 1 s sampling), on ``topic``, as ``tls`` (default: the ``publisher`` identity)."""
    environment = sidecar_environment(cluster, broker_id, log_dirs[0], decision_file)
    environment["VOLUME_QUOTA_LOG_DIRS"] = ",".join(str(path) for path in log_dirs)
    environment["VOLUME_QUOTA_TOPIC"] = topic
    if tls is not None:
        files = tls_files(tls)
        environment["VOLUME_QUOTA_TLS_CA_FILE"] = str(files.ca_file)
        environment["VOLUME_QUOTA_TLS_CERT_FILE"] = str(files.certificate_file)
        environment["VOLUME_QUOTA_TLS_KEY_FILE"] = str(files.key_file)
    environment.update(extra or {})
    return Daemon(
        broker_id,
        decision_file,
        environment,
        log_file,
        command=command,
        metrics_port=free_port(),
        clock_offset_s=clock_offset_s,
    )


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``, keyed by (name, sorted labels); empty if unreachable."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = float(sample.value)
    return samples


def readiness(port: int) -> tuple[bool, str]:
    """(ready, body) of ``/readyz``; (False, why) when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as response:
            return response.status == 200, response.read().decode()
    except urllib.error.HTTPError as error:
        return False, error.read().decode()
    except OSError as error:
        return False, f"no answer: {error}"


# ------------------------------------------------------------------ ACLs and topics


def grant_sidecar_acls_to(
    cluster: LocalKafkaCluster, principal: str, topics: Sequence[str], group: str = CONSUMER_GROUP
) -> None:
    """What ``local_cluster.grant_sidecar_acls`` grants ``User:publisher``, for ``principal``
    (e.g. ``User:kafka-0``) on each of ``topics``."""
    bindings = []
    for topic in topics:
        bindings += sidecar_acl_bindings(principal, topic, consumer_group=group)
    create_acls(cluster, bindings)


def create_topic(
    cluster: LocalKafkaCluster, name: str, config: Mapping[str, str] | None = None
) -> None:
    """One partition, one replica, created as admin."""
    admin = AdminClient(quiet(cluster.client_config("admin")))
    topic = NewTopic(name, 1, 1, config=dict(config or {}))
    admin.create_topics([topic], request_timeout=30)[name].result(timeout=30)


def compacted_topic(cluster: LocalKafkaCluster, name: str) -> None:
    create_topic(cluster, name, {"cleanup.policy": "compact"})


# ------------------------------------------------------------------ TLS files


def tls_files(files: TlsFiles | IdentityFiles) -> TlsFiles:
    """The CA bundle, certificate and key, whichever way they are given."""
    if isinstance(files, TlsFiles):
        return files
    return TlsFiles(files.ca, files.cert, files.key)


class TlsDir:
    """A process's CA bundle, certificate and key, copied into a directory of the test's own and
    replaced there atomically, file by file, as a renewal (or a botched one) would."""

    def __init__(self, directory: Path, identity: IdentityFiles) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.files = TlsFiles(directory / "ca.pem", directory / "cert.pem", directory / "key.pem")
        self.install(identity)

    def install(self, identity: IdentityFiles, *, ca: Path | None = None) -> None:
        """Key first, then certificate, then CA bundle (``ca`` instead of the identity's)."""
        for source, target in (
            (identity.key, self.files.key_file),
            (identity.cert, self.files.certificate_file),
            (ca or identity.ca, self.files.ca_file),
        ):
            temporary = target.with_name(f".{target.name}.new")
            shutil.copyfile(source, temporary)
            os.replace(temporary, target)


def snapshot_copy(identity: IdentityFiles, directory: Path) -> IdentityFiles:
    """The identity's files as they are now, kept when the PKI re-issues that identity."""
    directory.mkdir(parents=True, exist_ok=True)
    copies = {}
    for field in ("key", "cert", "ca", "keystore"):
        target = directory / f"{field}.pem"
        shutil.copyfile(getattr(identity, field), target)
        copies[field] = target
    return IdentityFiles(name=identity.name, **copies)


# ------------------------------------------------------------------ records on the topic


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]


def signed_snapshot(
    signer: TlsFiles | IdentityFiles,
    broker_id: int,
    *,
    at: datetime,
    capacity: int,
    free: int,
    soft_free: int,
    hard_free: int,
    volume_name: str = "/data",
) -> Record:
    """A snapshot for ``broker_id`` signed with ``signer``'s key, as its publisher would sign it."""
    files = tls_files(signer)
    key = str(broker_id).encode()
    value = snapshot_line(
        broker_id=broker_id,
        volumes=[volume(volume_name, capacity, capacity - free)],
        at=at,
        soft=bytes_limit(soft_free),
        hard=bytes_limit(hard_free),
    )
    headers = [(name, bytes(data)) for name, data in load_signer(files).headers(key, value)]
    return Record(key, value, headers)


def produce_records(
    config: Mapping[str, Any], topic: str, records: Sequence[Record], timeout_s: float = 30
) -> None:
    """Write ``records`` (key, value and headers as given) and require every delivery."""
    producer = Producer(
        {**quiet(config), "acks": "all", "message.timeout.ms": int(timeout_s * 1000)}
    )
    outcomes: list[KafkaError | None] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        outcomes.append(error)

    for record in records:
        producer.produce(
            topic,
            key=record.key,
            value=record.value,
            headers=list(record.headers),
            on_delivery=delivered,
        )
    assert producer.flush(timeout_s + 5) == 0, "records without a delivery report"
    assert outcomes == [None] * len(records), outcomes


def read_topic(config: Mapping[str, Any], topic: str, timeout_s: float = 30) -> list[Record]:
    """Every record of partition 0 of ``topic`` up to its current end, headers included."""
    consumer = Consumer(
        {**quiet(config), "group.id": "fault-tests-reader", "enable.auto.commit": False}
    )
    try:
        _low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=timeout_s, cached=False
        )
        consumer.assign([TopicPartition(topic, 0, 0)])
        records: list[Record] = []
        last = -1
        deadline = time.monotonic() + timeout_s
        while last < high - 1:
            if time.monotonic() > deadline:
                raise AssertionError(f"read {topic} up to offset {last}, its end is {high}")
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            raw = message.headers() or []
            pairs = list(raw.items()) if isinstance(raw, dict) else list(raw)
            headers = [
                (name, data if isinstance(data, bytes) else (data or "").encode())
                for name, data in pairs
            ]
            records.append(Record(message.key(), message.value(), headers))
            last = message.offset() or 0
        return records
    finally:
        consumer.close()


# ------------------------------------------------------------------ decisions


@dataclass(frozen=True)
class Sample:
    at: float
    wall: datetime
    decision: QuotaDecision | None


class DecisionTrace:
    """Reads one decision file every ``interval_s`` in a thread of its own."""

    def __init__(self, path: Path, interval_s: float = 0.05) -> None:
        self.path = path
        self.samples: list[Sample] = []
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"trace-{path.name}", daemon=True)

    def start(self) -> DecisionTrace:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            now, wall = time.monotonic(), datetime.now(UTC)
            self.samples.append(Sample(now, wall, read_decision(self.path)))

    def since(self, start: float) -> list[Sample]:
        return [sample for sample in list(self.samples) if sample.at >= start]

    def first(self, start: float, condition: Callable[[QuotaDecision], bool]) -> float | None:
        """Seconds from ``start`` to the first sample meeting ``condition``."""
        for sample in self.since(start):
            if sample.decision is not None and condition(sample.decision):
                return sample.at - start
        return None

    def expired_seconds(self, start: float) -> float:
        """How long since ``start`` the file held a decision past its ``validUntil`` (or none)."""
        total = 0.0
        samples = self.since(start)
        for sample, following in itertools.pairwise(samples):
            if sample.decision is None or sample.decision.valid_until < sample.wall:
                total += following.at - sample.at
        return total

    def longest_write_gap(self, start: float) -> float:
        """The longest time since ``start`` between two decisions with another ``decidedAt``."""
        changes = []
        last = None
        for sample in self.since(start):
            decided = None if sample.decision is None else sample.decision.decided_at
            if decided != last:
                changes.append(sample.at)
                last = decided
        return max((b - a for a, b in itertools.pairwise(changes)), default=0.0)

    def labels(self, start: float) -> list[str]:
        """The distinct decisions in order since ``start`` (for failure messages and figures)."""
        seen: list[str] = []
        for sample in self.since(start):
            label = describe(sample.decision, sample.wall)
            if not seen or seen[-1] != label:
                seen.append(label)
        return seen


def describe(decision: QuotaDecision | None, wall: datetime | None = None) -> str:
    """``PAUSE(stale)``, ``OPEN``, ``expired OPEN`` (past its validUntil at ``wall``)..."""
    if decision is None:
        return "unreadable"
    if wall is not None and decision.valid_until < wall:
        return f"expired {describe(decision)}"
    kinds = sorted({reason.kind.value for reason in decision.reasons})
    return f"{decision.state.value}({','.join(kinds)})" if kinds else decision.state.value


def unknown_because(decision: QuotaDecision | None, broker: int) -> ReasonKind | None:
    """Why ``broker`` is unknown in ``decision`` (missing, stale, future), or None."""
    if decision is None or broker not in decision.unknown_brokers:
        return None
    for reason in decision.reasons:
        if reason.broker_id == broker and reason.kind is not ReasonKind.LIMIT:
            return reason.kind
    return None


def is_valid(decision: QuotaDecision | None) -> bool:
    """Not past its validUntil: what the callback would still apply."""
    return decision is not None and decision.valid_until >= datetime.now(UTC)


def is_open(decision: QuotaDecision | None) -> bool:
    """A valid OPEN with every broker known."""
    return (
        decision is not None
        and is_valid(decision)
        and decision.state is QuotaState.OPEN
        and not decision.unknown_brokers
    )


def wait_for_decision(
    path: Path, description: str, condition: Callable[[QuotaDecision], bool], timeout_s: float
) -> float:
    """Seconds until the decision file meets ``condition``; the last decision in the failure."""

    def met() -> bool:
        decision = read_decision(path)
        return decision is not None and condition(decision)

    try:
        return wait_for(description, met, timeout_s, interval_s=0.05)
    except AssertionError as error:
        raise AssertionError(f"{error}; last decision: {describe(read_decision(path))}") from None


__all__ = [
    "CONSUMER_GROUP",
    "MIB",
    "Daemon",
    "DecisionTrace",
    "Figures",
    "Record",
    "TlsDir",
    "compacted_topic",
    "create_topic",
    "daemon",
    "describe",
    "free_port",
    "grant_sidecar_acls_to",
    "is_open",
    "is_valid",
    "produce_records",
    "read_topic",
    "readiness",
    "scrape",
    "signed_snapshot",
    "snapshot_copy",
    "tls_files",
    "unknown_because",
    "wait_for_decision",
]
