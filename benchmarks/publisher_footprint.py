"""Footprint of the publisher daemon: ``python -m benchmarks.publisher_footprint`` (about 3 min).

Starts a real 1-node mTLS Kafka cluster (``deploy/local/local_cluster``), runs
``volume-quota publish`` against it at a 1 s sampling interval, and measures the daemon's resident
memory (RSS) and CPU share over ``--seconds`` (60 by default), after a warm-up. In the same run,
with the same method, it measures two baselines:

- ``python -c 'sleep'``: a bare idle interpreter;
- ``python -c 'import ...; sleep'``: an idle interpreter that imported everything the daemon
  imports (pydantic, confluent-kafka, prometheus-client, structlog, psutil, cryptography...).

So the figures separate what the daemon costs from what Python and its libraries cost. CPU share
is (user + system CPU seconds) / wall seconds, in percent of one core; librdkafka's threads are
part of the daemon process and counted. ``--write-docs`` records the result under "Publisher
footprint" in docs/benchmarks.md (the rest of that file is kept).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.machine import describe_machine

REPOSITORY = Path(__file__).resolve().parents[1]
DOCS = REPOSITORY / "docs" / "benchmarks.md"
SECTION = "## Publisher footprint"
WARM_UP_SECONDS = 10.0

DAEMON_IMPORTS = (
    "import volume_quota.commands.publish, volume_quota.daemons.publisher, confluent_kafka, "
    "prometheus_client, structlog, psutil, cryptography.x509, pydantic_settings"
)


@dataclass(frozen=True)
class Footprint:
    name: str
    rss_mib: float
    peak_rss_mib: float
    cpu_percent: float
    seconds: float


def measure(process: psutil.Process, seconds: float, name: str) -> Footprint:
    """RSS sampled every second over ``seconds``; CPU share over the same window."""
    start_cpu = process.cpu_times()
    start = time.monotonic()
    samples = []
    while time.monotonic() - start < seconds:
        samples.append(process.memory_info().rss)
        time.sleep(1.0)
    end_cpu = process.cpu_times()
    wall = time.monotonic() - start
    cpu = (end_cpu.user - start_cpu.user) + (end_cpu.system - start_cpu.system)
    return Footprint(
        name=name,
        rss_mib=samples[-1] / 2**20,
        peak_rss_mib=max(samples) / 2**20,
        cpu_percent=100.0 * cpu / wall,
        seconds=wall,
    )


def measure_command(command: Sequence[str], seconds: float, name: str) -> Footprint:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(WARM_UP_SECONDS)
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited early with status {process.returncode}")
        return measure(psutil.Process(process.pid), seconds, name)
    finally:
        process.kill()
        process.wait(timeout=10)


def publications(port: int) -> tuple[float, float]:
    """(snapshots delivered, publication errors) from the daemon's own /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        body = response.read().decode()
    delivered = errors = 0.0
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == "volume_quota_publications_total":
                delivered += sample.value
            elif sample.name == "volume_quota_publication_errors_total":
                errors += sample.value
    return delivered, errors


def measure_daemon(seconds: float, work: Path) -> tuple[Footprint, float, float]:
    sys.path.insert(0, str(REPOSITORY / "deploy" / "local"))
    local_cluster = importlib.import_module("local_cluster")  # deploy/local is not installed

    log_dir = work / "log-dir"
    log_dir.mkdir()
    daemon_log = work / "port"
    with local_cluster.LocalKafkaCluster(work / "cluster", broker_count=1) as cluster:
        local_cluster.grant_volume_quota_acls(cluster)
        files = cluster.identity_files("publisher")
        command = [
            sys.executable, "-m", "volume_quota", "publish",
            "--broker-id", "0",
            "--log-dirs", str(log_dir),
            "--bootstrap-servers", cluster.bootstrap_servers,
            "--tls-ca-file", str(cluster.pki.ca_cert),
            "--tls-cert-file", str(files.cert),
            "--tls-key-file", str(files.key),
            "--sample-interval", "1s",
            "--metrics-host", "127.0.0.1",
            "--metrics-port", "0",
        ]  # fmt: skip
        with daemon_log.open("wb") as log:
            daemon = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=log, env=_environment()
            )
        try:
            time.sleep(WARM_UP_SECONDS)
            if daemon.poll() is not None:
                raise RuntimeError("the daemon exited early: " + daemon_log.read_text()[-2000:])
            port = _http_port(daemon_log)
            before = publications(port)
            footprint = measure(psutil.Process(daemon.pid), seconds, "publisher daemon")
            after = publications(port)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
    return footprint, after[0] - before[0], after[1] - before[1]


def _environment() -> dict[str, str]:
    """This environment without VOLUME_QUOTA_* settings, so only the flags configure the daemon."""
    return {key: value for key, value in os.environ.items() if not key.startswith("VOLUME_QUOTA_")}


def _http_port(log_file: Path) -> int:
    for line in log_file.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "publisher started":
            return int(event["http_port"])
    raise RuntimeError("no 'publisher started' line in the daemon's log")


def render(
    results: Sequence[Footprint], delivered: float, errors: float, machine: str, seconds: float
) -> str:
    daemon, bare, imported = results
    lines = [
        SECTION,
        "",
        f"`python -m benchmarks.publisher_footprint` on {machine}; "
        f"{seconds:g} s per process after a {WARM_UP_SECONDS:g} s warm-up, RSS sampled every "
        "second. The daemon ran at a 1 s sampling interval and 10 s heartbeat against a real "
        "1-node mTLS Kafka 4 cluster (the broker's own JVM is not counted); the baselines ran "
        "in the same run.",
        "",
        "| Process | RSS at end (MiB) | Peak RSS (MiB) | CPU (% of one core) |",
        "|---|---|---|---|",
    ]
    for result in results:
        lines.append(
            f"| {result.name} | {result.rss_mib:.1f} | {result.peak_rss_mib:.1f} | "
            f"{result.cpu_percent:.2f} |"
        )
    lines += [
        "",
        f"The daemon cost {daemon.rss_mib - imported.rss_mib:+.1f} MiB over an idle interpreter "
        f"with the same imports ({daemon.rss_mib - bare.rss_mib:+.1f} MiB over a bare one) and "
        f"{daemon.cpu_percent - imported.cpu_percent:.2f} percentage points of one core. It "
        f"delivered {delivered:.0f} snapshots in the window ({errors:.0f} publication errors).",
        "",
    ]
    return "\n".join(lines)


def write_section(text: str, path: Path = DOCS) -> None:
    """Replace (or append) the "Publisher footprint" section, leaving the rest of the file."""
    existing = path.read_text() if path.exists() else "# Benchmarks\n"
    start = existing.find(SECTION)
    if start == -1:
        updated = existing.rstrip("\n") + "\n\n" + text
    else:
        following = existing.find("\n## ", start + len(SECTION))
        tail = existing[following + 1 :] if following != -1 else ""
        updated = existing[:start] + text + ("\n" + tail if tail else "")
    path.write_text(updated)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measurement window")
    parser.add_argument(
        "--write-docs", action="store_true", help="record the result in docs/benchmarks.md"
    )
    arguments = parser.parse_args(argv)
    machine = describe_machine()
    with tempfile.TemporaryDirectory(prefix="vq-footprint-") as directory:
        daemon, delivered, errors = measure_daemon(arguments.seconds, Path(directory))
    bare = measure_command(
        [sys.executable, "-c", "import time; time.sleep(3600)"],
        arguments.seconds,
        "bare `python -c` (idle)",
    )
    imported = measure_command(
        [sys.executable, "-c", f"{DAEMON_IMPORTS}; import time; time.sleep(3600)"],
        arguments.seconds,
        "`python -c` with the daemon's imports (idle)",
    )
    text = render([daemon, bare, imported], delivered, errors, machine, arguments.seconds)
    print(text)
    if arguments.write_docs:
        write_section(text)
        print(f"recorded in {DOCS.relative_to(REPOSITORY)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
