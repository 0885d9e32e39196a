"""Command line: ``python -m local_cluster start|jars``.

``start`` runs a cluster in the foreground for manual demos and for other tools' tests: it
prints one JSON document (bootstrap servers, certificate paths per identity) on stdout, then
waits until SIGINT/SIGTERM and stops the brokers cleanly.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from local_cluster.acls import SNAPSHOT_TOPIC, grant_volume_quota_acls
from local_cluster.cluster import DEFAULT_HEAP, DEFAULT_START_TIMEOUT_S, LocalKafkaCluster
from local_cluster.errors import LocalClusterError
from local_cluster.jars import CACHE_ENV, ensure_kafka_jars, kafka_version

_WATCH_INTERVAL_S = 1.0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 1 runtime failure, 2 usage error)."""
    try:
        args = _parser().parse_args(argv)
        if args.command == "jars":
            sys.stdout.write(f"{ensure_kafka_jars()}\n")
            return 0
        return _run_cluster(args)
    except LocalClusterError as exc:
        sys.stderr.write(f"local_cluster: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m local_cluster",
        description=(
            f"Run a real Apache Kafka {kafka_version()} KRaft cluster on 127.0.0.1 from Maven "
            "jars, with mTLS on every listener (client certificate required), CN-based "
            "principals and the StandardAuthorizer (deny unless an ACL allows). Jars are "
            f"cached in ~/.cache/volume-quota (override the root with ${CACHE_ENV})."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    start = commands.add_parser(
        "start",
        help="start a cluster, print its addresses and certificates as JSON, run until Ctrl-C",
        description=(
            "Start N combined broker+controller nodes, print JSON with 'bootstrap_servers', "
            "'brokers' (ports, log file) and 'identities' (PEM paths for publisher, consumer, "
            "admin, intruder, rogue-publisher and the brokers), then keep running until "
            "SIGINT or SIGTERM, and stop the brokers cleanly. Reusing --dir reuses "
            "certificates and data."
        ),
    )
    start.add_argument("--brokers", type=int, default=1, help="number of nodes (default 1)")
    start.add_argument("--dir", type=Path, required=True, help="directory for all cluster files")
    start.add_argument("--heap", default=DEFAULT_HEAP, help=f"JVM -Xmx per node ({DEFAULT_HEAP})")
    start.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra broker property for every node (repeatable)",
    )
    start.add_argument(
        "--classpath",
        action="append",
        default=[],
        type=Path,
        metavar="JAR",
        help="extra jar for the broker classpath, e.g. a quota plugin (repeatable)",
    )
    start.add_argument(
        "--grant-volume-quota-acls",
        action="store_true",
        help=f"let publisher write and consumer read {SNAPSHOT_TOPIC} once started",
    )
    start.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_START_TIMEOUT_S,
        help=f"seconds to wait for the nodes to serve (default {DEFAULT_START_TIMEOUT_S:.0f})",
    )
    commands.add_parser("jars", help="download the Kafka jars (if needed) and print their folder")
    return parser


def _run_cluster(args: argparse.Namespace) -> int:
    cluster = LocalKafkaCluster(
        args.dir,
        args.brokers,
        broker_properties=_parse_properties(args.property),
        extra_classpath=args.classpath,
        heap=args.heap,
        start_timeout_s=args.timeout,
    )
    _stop_on_sigint_and_sigterm()
    try:
        cluster.start()
        if args.grant_volume_quota_acls:
            grant_volume_quota_acls(cluster)
        sys.stdout.write(json.dumps(_describe(cluster), indent=2) + "\n")
        sys.stdout.flush()
        sys.stderr.write("local_cluster: running; stop with Ctrl-C or SIGTERM\n")
        return _watch(cluster)
    except KeyboardInterrupt:
        return 0
    finally:
        # A second Ctrl-C must not abort the shutdown half-way and orphan brokers.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cluster.stop()


def _watch(cluster: LocalKafkaCluster) -> int:
    """Wait for a stop signal (KeyboardInterrupt); fail if a broker dies on its own."""
    while True:
        time.sleep(_WATCH_INTERVAL_S)
        dead = [i for i in range(cluster.broker_count) if not cluster.is_running(i)]
        if dead:
            sys.stderr.write(
                f"local_cluster: error: broker(s) {dead} exited; see "
                + ", ".join(str(cluster.broker_log(i)) for i in dead)
                + "\n"
            )
            return 1


def _describe(cluster: LocalKafkaCluster) -> dict[str, Any]:
    return {
        "kafka_version": kafka_version(),
        "bootstrap_servers": cluster.bootstrap_servers,
        "cluster_dir": str(cluster.base_dir),
        "ca_cert": str(cluster.pki.ca_cert),
        "brokers": [
            {
                "id": i,
                "client_port": cluster.broker_ports(i).client,
                "internal_port": cluster.broker_ports(i).internal,
                "controller_port": cluster.broker_ports(i).controller,
                "log": str(cluster.broker_log(i)),
            }
            for i in range(cluster.broker_count)
        ],
        "identities": {
            name: cluster.identity_files(name).as_json() for name in cluster.pki.issued_identities()
        },
    }


def _parse_properties(pairs: Sequence[str]) -> dict[str, str]:
    properties = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key.strip():
            raise LocalClusterError(f"--property needs KEY=VALUE, got {pair!r}")
        properties[key.strip()] = value
    return properties


def _stop_on_sigint_and_sigterm() -> None:
    """Make SIGINT and SIGTERM raise KeyboardInterrupt, so both stop the brokers cleanly.

    SIGINT is set explicitly because a shell starts background jobs with SIGINT ignored,
    and Python then never installs its own Ctrl-C handler.
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
