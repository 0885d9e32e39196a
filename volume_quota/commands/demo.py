"""``volume-quota demo``: a local Kafka cluster with a sidecar per broker, no Kafka of your own.

Starts real Kafka brokers on loopback (mTLS, ACLs; jars fetched once with Maven), loads the quota
callback into them when its jar is built, runs one sidecar (publisher + consumer) per broker in
this process, and prints the brokers x volumes table and the cluster decision as it changes.
"""

# ruff: noqa: PLC0415 - local_cluster (a checkout's test cluster) is imported only when run

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from consumer.status_report import cluster_status, render_status_table
from volume_quota.arguments import positive_seconds
from volume_quota.daemons.decider import DecideDaemon, utc_now
from volume_quota.daemons.publisher import PublisherDaemon, stop_on_signals
from volume_quota.errors import UsageError
from volume_quota.logging_setup import configure_logging
from volume_quota.settings import PublisherSettings, load_settings

REPOSITORY = Path(__file__).resolve().parents[2]
PLUGIN_JAR = REPOSITORY / "deploy/broker-plugin/target/volume-quota-broker-plugin-0.1.0.jar"

if TYPE_CHECKING:
    from local_cluster import LocalKafkaCluster

DESCRIPTION = """\
Try volume-quota with no Kafka of your own: start a local Kafka cluster (real brokers from
Maven Central jars, KRaft, mTLS with a test CA, ACLs) on 127.0.0.1, run one sidecar per broker
(publishing its volumes, deciding for it), and print every broker's volumes and the cluster
decision every few seconds. When the quota callback jar is built (mvn -q package in
deploy/broker-plugin) the brokers load it and apply the decision to producers.
Stops (and stops the brokers) on Ctrl-C or after --duration.
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "demo",
        help="start a local Kafka cluster with a sidecar per broker and watch the decision",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--brokers", type=int, default=1, help="number of brokers (default: 1)")
    parser.add_argument(
        "--dir", type=Path, help="where the cluster lives (default: a temporary directory)"
    )
    parser.add_argument(
        "--duration", type=positive_seconds, help="stop after this many seconds (default: never)"
    )
    parser.add_argument(
        "--every", type=positive_seconds, default=5.0, help="print every N seconds (default: 5)"
    )
    parser.add_argument("--soft-limit", default="MinFreePercentage:15", help="soft limit")
    parser.add_argument("--hard-limit", default="MinFreePercentage:5", help="hard limit")
    parser.set_defaults(run=run)


def run(arguments: argparse.Namespace) -> int:
    if not 1 <= arguments.brokers <= 5:
        raise UsageError("--brokers must be between 1 and 5")
    try:
        from local_cluster import LocalClusterError, LocalKafkaCluster, grant_sidecar_acls
    except ImportError:
        raise UsageError(
            "the demo needs the local Kafka cluster of a volume-quota checkout: "
            "pip install -e deploy/local (README.md's first command does it)"
        ) from None
    configure_logging("warning")
    with tempfile.TemporaryDirectory(prefix="volume-quota-demo-") as scratch:
        base = (arguments.dir or Path(scratch)).resolve()
        decisions = base / "decisions"
        decisions.mkdir(parents=True, exist_ok=True)
        jar = [PLUGIN_JAR] if PLUGIN_JAR.exists() else []
        properties = [
            _callback_properties(decisions / f"broker-{index}.json") if jar else {}
            for index in range(arguments.brokers)
        ]
        print(f"starting {arguments.brokers} Kafka broker(s) under {base} ...", flush=True)
        cluster = LocalKafkaCluster(
            base / "kafka",
            broker_count=arguments.brokers,
            per_broker_properties=properties,
            extra_classpath=jar,
        )
        try:
            with cluster:
                grant_sidecar_acls(cluster)
                return _run_sidecars(arguments, cluster, decisions, bool(jar))
        except LocalClusterError as error:
            raise UsageError(str(error)) from None


def _callback_properties(decision_file: Path) -> dict[str, str]:
    return {
        "client.quota.callback.class": "io.volumequota.broker.VolumeQuotaCallback",
        "volume.quota.decision.path": str(decision_file),
        "volume.quota.produce.base.bytes.per.second": str(10 * 1024 * 1024),
        "volume.quota.excluded.principals": "User:publisher;User:consumer;User:admin",
    }


def _sidecar_settings(
    arguments: argparse.Namespace, cluster: LocalKafkaCluster, index: int, decision_file: Path
) -> PublisherSettings:
    identity = cluster.identity_files("publisher")
    return load_settings(
        {
            "broker_id": index,
            "log_dirs": [str(path) for path in cluster.broker_files(index).data_dirs],
            "bootstrap_servers": cluster.bootstrap_servers,
            "tls_ca_file": str(identity.ca),
            "tls_cert_file": str(identity.cert),
            "tls_key_file": str(identity.key),
            "tls_verify_hostname": False,
            "soft_limit": arguments.soft_limit,
            "hard_limit": arguments.hard_limit,
            "decision_file": str(decision_file),
            "metrics_host": "127.0.0.1",
            "metrics_port": 0,
        }
    )


def _run_sidecars(
    arguments: argparse.Namespace,
    cluster: LocalKafkaCluster,
    decisions: Path,
    callback_loaded: bool,
) -> int:
    stop = threading.Event()
    roles: list[PublisherDaemon | DecideDaemon] = []
    deciders: list[DecideDaemon] = []
    for index in range(arguments.brokers):
        settings = _sidecar_settings(arguments, cluster, index, decisions / f"broker-{index}.json")
        roles.append(PublisherDaemon(settings, serve_http=False))
        decider = DecideDaemon(settings)
        deciders.append(decider)
        roles.append(decider)
    threads = [threading.Thread(target=role.run, args=(stop,), daemon=True) for role in roles]
    for thread in threads:
        thread.start()
    print(
        f"sidecars running; metrics of broker 0 on http://127.0.0.1:{deciders[0].http_port}/metrics"
        f"; decision files in {decisions}; quota callback "
        + ("loaded" if callback_loaded else "not built (mvn -q package in deploy/broker-plugin)"),
        flush=True,
    )
    waited = 0.0
    with stop_on_signals(stop):
        while not stop.wait(arguments.every):
            waited += arguments.every
            decider = deciders[0]
            now = utc_now()
            status = cluster_status(decider.state, decider.decision, now)
            sys.stdout.write(f"\n{now:%H:%M:%S}\n{render_status_table(status)}")
            sys.stdout.flush()
            if arguments.duration is not None and waited >= arguments.duration:
                stop.set()
    for thread in threads:
        thread.join(timeout=10)
    return 0
