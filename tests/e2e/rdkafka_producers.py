"""N librdkafka producers of one principal, the twin of ``java-producer/PauseProducers.java``.

``python -m tests.e2e.rdkafka_producers CONFIG.json TOPIC N PREFIX RATE RECORD_BYTES STOP_FILE
[shared-client-id]``:
N ``confluent_kafka.Producer`` instances (one connection and one ``client.id`` each) produce
together RATE bytes/s of RECORD_BYTES records. Every second one JSON line per producer reports
what was acknowledged in that second (same fields as the Java harness; ``throttleMaxMs`` is the
longest ``throttle_time_ms`` the brokers returned within the last statistics interval, from
librdkafka's statistics); once STOP_FILE exists
every producer stops sending and flushes until each record is acked or failed, then prints a
last line with ``"final": true``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Message, Producer


class Window:
    """What one producer's records did within one reporting second."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.bytes = self.acks = self.failed = self.sent = 0
        self.first_ack = self.last_ack = -1
        self.max_latency = self.max_blocked = self.throttle_max = 0
        self.error = ""

    def acked(self, sent_at: float, size: int, error: KafkaError | None) -> None:
        now = int(time.time() * 1000)
        with self.lock:
            if error is not None:
                self.failed += 1
                self.error = str(error)
                return
            self.bytes += size
            self.acks += 1
            self.first_ack = now if self.first_ack < 0 else self.first_ack
            self.last_ack = now
            self.max_latency = max(self.max_latency, now - int(sent_at * 1000))

    def drain(self, producer: int, final: bool) -> str:
        with self.lock:
            line = json.dumps(
                {
                    "p": producer,
                    "t": int(time.time() * 1000),
                    "bytes": self.bytes,
                    "acks": self.acks,
                    "failed": self.failed,
                    "sent": self.sent,
                    "firstAck": self.first_ack,
                    "lastAck": self.last_ack,
                    "maxLatencyMs": self.max_latency,
                    "maxBlockedMs": self.max_blocked,
                    "throttleMaxMs": self.throttle_max,
                    "final": final,
                    "error": self.error,
                }
            )
            self.reset()
            return line

    def statistics(self, text: str) -> None:
        """librdkafka's statistics (every second): each broker's throttle-time window."""
        brokers = json.loads(text).get("brokers", {}).values()
        longest = max((broker.get("throttle", {}).get("max", 0) for broker in brokers), default=0)
        with self.lock:
            self.throttle_max = max(self.throttle_max, int(longest))


def produce(
    producer: Producer, window: Window, topic: str, size: int, *, interval: float, stop: Path
) -> None:
    payload = b"x" * size
    next_at = time.monotonic()
    while not stop.exists():
        now = time.monotonic()
        if next_at > now:
            producer.poll(min(next_at - now, 0.05))
            continue
        next_at = max(next_at + interval, now - 1.0)  # no catch-up beyond one second
        sent_at = time.time()

        def delivered(error: KafkaError | None, _: Message, sent_at: float = sent_at) -> None:
            window.acked(sent_at, size, error)

        while True:
            try:
                producer.produce(topic, value=payload, on_delivery=delivered)
                break
            except BufferError:  # queue full: the application blocks, like Java's send()
                producer.poll(0.05)
        blocked = int((time.time() - sent_at) * 1000)
        with window.lock:
            window.sent += 1
            window.max_blocked = max(window.max_blocked, blocked)
    while len(producer) > 0:
        producer.poll(0.1)


def main(argv: list[str]) -> int:
    config: dict[str, Any] = json.loads(Path(argv[0]).read_text())
    topic, count, prefix = argv[1], int(argv[2]), argv[3]
    rate, size, stop = float(argv[4]), int(argv[5]), Path(argv[6])
    windows = [Window() for _ in range(count)]
    shared = argv[7:] == ["shared-client-id"]
    producers = [
        Producer(
            {
                **config,
                "client.id": prefix if shared else f"{prefix}-{i}",
                "statistics.interval.ms": 1000,
                "stats_cb": windows[i].statistics,
            }
        )
        for i in range(count)
    ]
    threads = [
        threading.Thread(
            target=produce,
            args=(producers[i], windows[i], topic, size),
            kwargs={"interval": size * count / rate, "stop": stop},
            daemon=True,
        )
        for i in range(count)
    ]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        time.sleep(1.0)
        print("\n".join(window.drain(i, False) for i, window in enumerate(windows)), flush=True)
    print("\n".join(window.drain(i, True) for i, window in enumerate(windows)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
