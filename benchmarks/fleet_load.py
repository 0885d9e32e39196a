"""Load at fleet scale on a real broker: ``python -m benchmarks.fleet_load ACTION``.

ACTION is ``fanout``, ``cold-start`` or ``soak``:

- ``fanout``: bytes each consumer reads per second. Every consumer reads every snapshot, so the
  traffic grows with the square of the cluster. Measured: the bytes one 8-volume snapshot takes
  in the log (record batch on disk = on the wire), signed and unsigned, uncompressed and with
  zstd, from the partition size Kafka reports; then modelled for 100, 1,000 and 10,000 brokers
  with a heartbeat every 10 s (a snapshot at least every 10 s per broker, plus changes).
- ``cold-start``: a compacted topic holding one snapshot for each of 10,000 brokers; the time
  from starting the consumer's loop to ready (read to the end offsets seen at start, live
  brokers known, decision written).
- ``soak``: 1,000 simulated brokers x 8 volumes publishing 1 snapshot per second each for
  ``--seconds`` (default 120) while a decider follows; its lag, resident memory and CPU sampled
  every 10 s.

Each run starts its own one-node mTLS cluster on loopback (local_cluster) and prints a table
with the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import psutil
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from benchmarks.machine import describe_machine
from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, grant_volume_quota_acls
from publisher.signing import SnapshotSigner
from volume_quota.certificate_files import TlsFiles, load_signer
from volume_quota.config import load_settings
from volume_quota.daemons.decider import DecideDaemon

VOLUMES = 8
HEARTBEAT_SECONDS = 10.0
GIB = 1024**3


def snapshot_value(broker_id: int, at: datetime, used_percent: float = 40.0) -> bytes:
    volumes = [
        {
            "volumeName": f"/dev/nvme{index}n1",
            "path": f"/var/lib/kafka/data-{index}",
            "capacity": 4000 * GIB,
            "consumed": int(4000 * GIB * (used_percent + index) / 100),
        }
        for index in range(VOLUMES)
    ]
    document = {
        "schemaVersion": 1,
        "brokerId": broker_id,
        "snapshotAt": at.isoformat().replace("+00:00", "Z"),
        "softLimit": {"type": "MinFreePercentage", "level": 15},
        "hardLimit": {"type": "MinFreeBytes", "level": 5 * GIB},
        "volumes": volumes,
    }
    return json.dumps(document, separators=(",", ":")).encode()


@contextmanager
def cluster() -> Iterator[LocalKafkaCluster]:
    with (
        tempfile.TemporaryDirectory(prefix="vq-fleet-") as directory,
        LocalKafkaCluster(Path(directory), broker_count=1) as started,
    ):
        grant_volume_quota_acls(started, consumer_group="volume-quota-consumer")
        yield started


def create_topic(started: LocalKafkaCluster, name: str) -> None:
    admin = AdminClient(started.client_config("admin"))
    topic = NewTopic(name, 1, 1, config={"cleanup.policy": "compact"})
    admin.create_topics([topic])[name].result(30)


def partition_bytes(started: LocalKafkaCluster, topic: str) -> int:
    data_dir = started.broker_files(0).data_dirs[0]
    return sum(path.stat().st_size for path in data_dir.glob(f"{topic}-0/*.log"))


def signer(started: LocalKafkaCluster) -> SnapshotSigner:
    files = started.identity_files("publisher")
    return load_signer(TlsFiles(files.ca, files.cert, files.key))


def bytes_per_snapshot(started: LocalKafkaCluster, *, signed: bool, compression: str) -> float:
    topic = f"fanout-{'signed' if signed else 'plain'}-{compression}"
    create_topic(started, topic)
    producer = Producer(
        {**started.client_config("admin"), "compression.type": compression, "linger.ms": 0}
    )
    sign = signer(started)
    count = 2000
    for index in range(count):
        key = str(index % 100).encode()
        value = snapshot_value(index % 100, datetime.now(UTC))
        headers: list[tuple[str, str | bytes | None]] = (
            list(sign.headers(key, value)) if signed else []
        )
        producer.produce(topic, key=key, value=value, headers=headers)
        producer.poll(0)
        producer.flush(10)  # one snapshot per batch, as a publisher sends them
    return partition_bytes(started, topic) / count


def fanout(_arguments: argparse.Namespace) -> None:
    with cluster() as started:
        raw = len(snapshot_value(1, datetime.now(UTC)))
        rows = [
            (
                signed,
                compression,
                bytes_per_snapshot(started, signed=signed, compression=compression),
            )
            for signed in (False, True)
            for compression in ("none", "zstd")
        ]
    print(f"machine: {describe_machine()}")
    print(f"snapshot value, {VOLUMES} volumes: {raw} bytes of JSON")
    print(
        "| signed | compression | bytes per snapshot in the log "
        "| per consumer, 100 / 1,000 / 10,000 brokers (heartbeat 10 s) |"
    )
    print("|---|---|---|---|")
    for signed, compression, size in rows:
        rates = [
            f"{brokers * size / HEARTBEAT_SECONDS / 1024:,.0f} KiB/s"
            for brokers in (100, 1000, 10000)
        ]
        print(
            f"| {'yes' if signed else 'no'} | {compression} | {size:,.0f} | {' / '.join(rates)} |"
        )


def cold_start(arguments: argparse.Namespace) -> None:
    brokers = arguments.brokers
    with cluster() as started:
        create_topic(started, SNAPSHOT_TOPIC)
        producer = Producer({**started.client_config("publisher"), "linger.ms": 50})
        now = datetime.now(UTC)
        for broker_id in range(brokers):
            producer.produce(
                SNAPSHOT_TOPIC, key=str(broker_id).encode(), value=snapshot_value(broker_id, now)
            )
            if broker_id % 1000 == 0:
                producer.poll(0)
        producer.flush(60)
        with tempfile.TemporaryDirectory() as directory:
            daemon = decider(started, Path(directory))
            process = psutil.Process()
            cpu_before = sum(process.cpu_times()[:2])
            started_at = time.monotonic()
            stop = threading.Event()
            thread = threading.Thread(target=daemon.run, args=(stop,), daemon=True)
            thread.start()
            while not daemon.service.ready and time.monotonic() - started_at < 60:
                time.sleep(0.01)
            ready_after = time.monotonic() - started_at
            cpu_seconds = sum(process.cpu_times()[:2]) - cpu_before
            known = len(daemon.state.assessments())
            stop.set()
            thread.join(timeout=10)
    print(f"machine: {describe_machine()}")
    print("| brokers on the topic | snapshots applied | ready after | CPU used | target |")
    print("|---|---|---|---|---|")
    print(f"| {brokers:,} | {known:,} | {ready_after:.2f} s | {cpu_seconds:.2f} s | under 2 s |")


def decider(started: LocalKafkaCluster, directory: Path) -> DecideDaemon:
    files = started.identity_files("consumer")
    settings = load_settings(
        {
            "bootstrap_servers": started.bootstrap_servers,
            "tls_ca_file": str(files.ca),
            "tls_cert_file": str(files.cert),
            "tls_key_file": str(files.key),
            "tls_verify_hostname": False,
            "decision_file": str(directory / "decision.json"),
            "stale_after": "1h",
        }
    )
    return DecideDaemon(settings, serve_http=False)


def soak(arguments: argparse.Namespace) -> None:
    brokers, seconds = arguments.brokers, arguments.seconds
    with cluster() as started:
        create_topic(started, SNAPSHOT_TOPIC)
        stop = threading.Event()
        sent = [0]

        def publish() -> None:
            producer = Producer({**started.client_config("publisher"), "linger.ms": 20})
            while not stop.is_set():
                second = time.monotonic()
                now = datetime.now(UTC)
                for broker_id in range(brokers):
                    producer.produce(
                        SNAPSHOT_TOPIC,
                        key=str(broker_id).encode(),
                        value=snapshot_value(broker_id, now),
                    )
                    producer.poll(0)
                sent[0] += brokers
                stop.wait(max(0.0, 1.0 - (time.monotonic() - second)))
            producer.flush(30)

        with tempfile.TemporaryDirectory() as directory:
            daemon = decider(started, Path(directory))
            process = psutil.Process()
            runner = threading.Thread(target=daemon.run, args=(stop,), daemon=True)
            publisher = threading.Thread(target=publish, daemon=True)
            runner.start()
            publisher.start()
            samples = []
            begin = time.monotonic()
            cpu_before = process.cpu_times()
            while time.monotonic() - begin < seconds:
                time.sleep(10)
                newest = max((t for _, t in daemon.state.snapshot_times()), default=0.0)
                lag = time.time() - newest if newest else float("nan")
                cpu = process.cpu_times()
                used = (cpu.user + cpu.system) - (cpu_before.user + cpu_before.system)
                cpu_before = cpu
                samples.append(
                    (
                        time.monotonic() - begin,
                        lag,
                        process.memory_info().rss / 2**20,
                        used / 10 * 100,
                    )
                )
            stop.set()
            runner.join(timeout=10)
            publisher.join(timeout=30)
    print(f"machine: {describe_machine()}")
    print(
        f"{brokers:,} brokers x {VOLUMES} volumes, 1 snapshot/s each, {sent[0]:,} sent; "
        "the decider and the simulated publishers share this process"
    )
    print("| t (s) | newest snapshot age (s) | RSS (MiB) | CPU of the process (% of one core) |")
    print("|---|---|---|---|")
    for elapsed, lag, rss, busy in samples:
        print(f"| {elapsed:.0f} | {lag:.2f} | {rss:.0f} | {busy:.0f} |")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fleet_load",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("fanout", help="bytes per snapshot and per consumer").set_defaults(
        run=fanout
    )
    cold = actions.add_parser("cold-start", help="a consumer reading 10,000 brokers' snapshots")
    cold.add_argument("--brokers", type=int, default=10_000)
    cold.set_defaults(run=cold_start)
    soaking = actions.add_parser("soak", help="1,000 brokers at 1 snapshot/s")
    soaking.add_argument("--brokers", type=int, default=1000)
    soaking.add_argument("--seconds", type=int, default=120)
    soaking.set_defaults(run=soak)
    arguments = parser.parse_args(argv)
    arguments.run(arguments)
    return 0


if __name__ == "__main__":
    sys.exit(main())
