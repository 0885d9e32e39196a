"""Issue 12, section 2: cheap measurements of the two ways a callback can learn the decision
from Kafka itself, on the project's real 3-node local cluster (combined KRaft nodes, mTLS).

- config route: an incremental alter of a cluster-default broker config, applied through the
  KRaft metadata log; time until every broker's DescribeConfigs shows it (the broker updates
  its dynamic config and calls reconfigure() on its Reconfigurables in the same step);
- topic route: a record on a compacted 1-partition topic (acks=all); time until a consumer
  assigned to the partition, one per broker as bootstrap, sees it;
- the bytes the config route adds to the metadata log (node 0's segment growth, minus idle);
- both routes while the active controller (the raft leader) is stopped.

Run: python deploy/broker-plugin/measurements/decision_routes.py [rounds [part,...]]
(about 3 minutes; the config route through ConfigRoute.java, Kafka's own Java Admin, in this
directory; parts: config_route, topic_route, metadata_log_node_0, controller_failover)
Prints one JSON document with the figures.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from local_cluster import LocalKafkaCluster
from local_cluster.jars import ensure_kafka_jars

KEY = "volume.quota.decision.json"
TOPIC = "__volume_quota_decisions"


def decision(counter: int) -> str:
    """About the size of a real decision (one reason)."""
    return json.dumps(
        {
            "schemaVersion": 1,
            "decidedAt": "2026-11-23T08:00:00Z",
            "validUntil": "2026-11-23T08:00:30Z",
            "state": "THROTTLE",
            "throttleFactor": 0.5,
            "counter": counter,
            "reasons": [{"kind": "limit", "brokerId": 2, "detail": "x" * 300}],
        }
    )


HERE = Path(__file__).resolve().parent


def java_tool(kafka: LocalKafkaCluster, properties: Path, *args: str, timeout: float = 300) -> Any:
    """Runs ConfigRoute.java (Kafka's Java Admin; librdkafka refuses the default resource "")."""
    classpath = str(ensure_kafka_jars() / "*")
    result = subprocess.run(
        ["java", "-cp", classpath, str(HERE / "ConfigRoute.java"), str(properties), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-2000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def admin_properties(
    kafka: LocalKafkaCluster, directory: Path, bootstrap: str | None = None
) -> Path:
    config = kafka.java_client_config("admin")
    if bootstrap is not None:
        config["bootstrap.servers"] = bootstrap
    path = directory / f"admin-{len(list(directory.glob('admin-*')))}.properties"
    path.write_text("".join(f"{key}={value}\n" for key, value in config.items()))
    return path


def config_route(kafka: LocalKafkaCluster, directory: Path, rounds: int) -> dict[str, object]:
    figures = java_tool(kafka, admin_properties(kafka, directory), "propagation", str(rounds))
    acks, everywhere = figures["ack_ms"], figures["everywhere_ms"]
    return {
        "custom_key_accepted": True,
        "cluster_default_lists_custom_key": figures["default_resource_has_key"],
        "alter_acked_ms_median": round(statistics.median(acks), 1),
        "every_broker_sees_it_ms_median": round(statistics.median(everywhere), 1),
        "every_broker_sees_it_ms_max": round(max(everywhere), 1),
        "rounds": rounds,
    }


def topic_route(kafka: LocalKafkaCluster, rounds: int) -> dict[str, object]:
    admin = AdminClient(kafka.client_config("admin"))
    topic = NewTopic(
        TOPIC, num_partitions=1, replication_factor=3, config={"cleanup.policy": "compact"}
    )
    admin.create_topics([topic], request_timeout=30)[TOPIC].result(timeout=30)
    producer = Producer({**kafka.client_config("admin"), "acks": "all", "linger.ms": 0})
    consumers = []
    for index in range(3):
        consumer = Consumer(
            {
                **kafka.client_config(
                    "admin", bootstrap=f"127.0.0.1:{kafka.broker_ports(index).client}"
                ),
                "group.id": f"unused-{index}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 500,
            }
        )
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_END)])
        consumer.poll(1.0)
        consumers.append(consumer)
    acked, everywhere = [], []
    for counter in range(rounds):
        value = decision(counter).encode()
        start = time.monotonic()
        producer.produce(TOPIC, key=b"cluster", value=value)
        producer.flush(10)
        acked.append(time.monotonic() - start)
        pending = {0, 1, 2}
        while pending:
            for index in list(pending):
                message = consumers[index].poll(0.01)
                if message is not None and message.error() is None and message.value() == value:
                    pending.discard(index)
            if time.monotonic() - start > 30:
                raise AssertionError(f"consumers {pending} never saw round {counter}")
        everywhere.append(time.monotonic() - start)
        time.sleep(0.2)
    for consumer in consumers:
        consumer.close()
    return {
        "produce_acked_ms_median": round(1000 * statistics.median(acked), 1),
        "every_consumer_sees_it_ms_median": round(1000 * statistics.median(everywhere), 1),
        "every_consumer_sees_it_ms_max": round(1000 * max(everywhere), 1),
        "rounds": rounds,
    }


def metadata_growth(kafka: LocalKafkaCluster, directory: Path) -> dict[str, object]:
    """Bytes node 0's metadata log grows by per config alter (minus the idle NoOpRecords)."""
    log_dir = kafka.broker_files(0).metadata_dir / "__cluster_metadata-0"
    figures = java_tool(
        kafka, admin_properties(kafka, directory), "growth", "20", "500", str(log_dir)
    )
    minutes = figures["period_ms"] / 60_000
    return {
        "idle_bytes_per_minute": round(figures["idle_bytes"] / minutes),
        "bytes_per_alter": round(
            (figures["busy_bytes"] - figures["idle_bytes"]) / figures["alters"]
        ),
        "alters": figures["alters"],
    }


def raft_leader(kafka: LocalKafkaCluster) -> int:
    state = kafka.broker_files(0).metadata_dir / "__cluster_metadata-0" / "quorum-state"
    return int(json.loads(state.read_text())["leaderId"])


def longest_gap_ms(attempts: list[list[int]]) -> float | None:
    """Longest time from a failed write to the next acknowledged one; None if none failed,
    inf if writes never came back."""
    longest: float | None = None
    failed_since: int | None = None
    for at, ok in attempts:
        if not ok and failed_since is None:
            failed_since = at
        elif ok and failed_since is not None:
            longest = max(longest or 0.0, at - failed_since)
            failed_since = None
    if failed_since is not None:
        return float("inf")
    return longest


def controller_failover(kafka: LocalKafkaCluster, directory: Path) -> dict[str, object]:
    """Stop the raft leader (the active controller) while both routes write every 200 ms
    through the other two nodes; the longest stretch of failed writes of each route."""
    leader = raft_leader(kafka)
    others = [i for i in range(3) if i != leader]
    bootstrap = ",".join(f"127.0.0.1:{kafka.broker_ports(i).client}" for i in others)
    properties = admin_properties(kafka, directory, bootstrap)
    topic_attempts: list[list[int]] = []
    stop = threading.Event()

    def write_topic() -> None:
        producer = Producer(
            {
                **kafka.client_config("admin", bootstrap=bootstrap),
                "acks": "all",
                "message.timeout.ms": 2000,
                "linger.ms": 0,
            }
        )
        counter = 20000
        while not stop.is_set():
            at = int(time.time() * 1000)
            delivered: list[bool] = []
            counter += 1

            def report(error: Any, _message: Any, sink: list[bool] = delivered) -> None:
                sink.append(error is None)

            producer.produce(
                TOPIC, key=b"cluster", value=decision(counter).encode(), on_delivery=report
            )
            producer.flush(3)
            topic_attempts.append([at, int(bool(delivered and delivered[0]))])
            time.sleep(max(0.0, at / 1000 + 0.2 - time.time()))

    writer = threading.Thread(target=write_topic, daemon=True)
    results: dict[str, Any] = {"stopped_node": leader}
    with ThreadPoolExecutor(1) as pool:
        probe = pool.submit(java_tool, kafka, properties, "probe", "45000")
        writer.start()
        time.sleep(8)  # the JVM starts and writes a while before the stop
        stopped = time.monotonic()
        kafka.stop_broker(leader)
        results["clean_stop_took_s"] = round(time.monotonic() - stopped, 1)
        config_attempts = probe.result()["attempts"]
    stop.set()
    writer.join(10)
    results["config_route_longest_failed_ms"] = longest_gap_ms(config_attempts)
    results["topic_route_longest_failed_ms"] = longest_gap_ms(topic_attempts)
    results["config_route_failed_writes"] = sum(1 for _, ok in config_attempts if not ok)
    results["topic_route_failed_writes"] = sum(1 for _, ok in topic_attempts if not ok)
    results["new_raft_leader"] = raft_leader_from(kafka, others[0])
    kafka.start_broker(leader)
    return results


def raft_leader_from(kafka: LocalKafkaCluster, node: int) -> int:
    state = kafka.broker_files(node).metadata_dir / "__cluster_metadata-0" / "quorum-state"
    return int(json.loads(state.read_text())["leaderId"])


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    parts = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory(prefix="vq-routes-") as name:
        directory = Path(name)
        with LocalKafkaCluster(directory / "kafka", broker_count=3) as kafka:
            figures: dict[str, object] = {}
            measures: list[tuple[str, Callable[[], dict[str, object]]]] = [
                ("config_route", lambda: config_route(kafka, directory, rounds)),
                ("topic_route", lambda: topic_route(kafka, rounds)),
                ("metadata_log_node_0", lambda: metadata_growth(kafka, directory)),
                ("controller_failover", lambda: controller_failover(kafka, directory)),
            ]
            for part, measure in measures:
                if parts is not None and part not in parts:
                    continue
                try:
                    figures[part] = measure()
                except Exception as exc:
                    figures[part] = {"error": str(exc)[-1500:]}
                print(json.dumps({part: figures[part]}), flush=True)
            print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
