"""``volume-quota status``: every broker's volumes and the cluster decision, read live; and the
top topics of the volumes that need them (the thin Kafka shell of ``consumer.topic_status``)."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any, Protocol

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry

from consumer.clock import SystemClock
from consumer.cluster_state import ClusterState
from consumer.consumer_metrics import ConsumerMetrics
from consumer.decision_service import DecisionService, LoopTiming
from consumer.incoming_bytes import incoming_moves
from consumer.incoming_status import incoming_status
from consumer.override_follower import OverrideFollower
from consumer.snapshot_topic_reader import (
    SnapshotTopicReader,
    TopicRecord,
    TopicUnavailableError,
)
from consumer.status_report import (
    ClusterStatus,
    cluster_status,
    render_status_table,
    status_as_json,
)
from consumer.topic_status import (
    TopicConfigs,
    UsageCollection,
    topics_to_describe,
    volume_topics,
)
from schemas.decision import QuotaState
from volume_quota.arguments import positive_integer, positive_seconds
from volume_quota.commands.status_incoming import MovesAdmin, describe_moves
from volume_quota.config import StatusSettings, add_settings_arguments, settings_from_arguments
from volume_quota.daemons.agent_usage import KafkaPythonLogDirs
from volume_quota.daemons.decider import KafkaClients, override_policy, signature_policy
from volume_quota.daemons.topic_configs import describe_topic_configs
from volume_quota.kafka_client_config import consumer_config, kafka_python_admin_config
from volume_quota.logging_setup import configure_logging, with_client_logger

DESCRIPTION = """\
Read the snapshot topic from the beginning (as the consumer does), learn the live brokers, and
print a table of brokers x volumes (free space, free %, soft and hard thresholds, state, snapshot
age) followed by the cluster decision and what drove it (an operator's override first, set by
the operator identity that signed it), and the latest override records that were refused and
never took effect (not signed by an operator, setAt too far from their arrival: see
override_signatures). Read-only: writes nothing.

Which topic fills a volume: for every volume in THROTTLE or PAUSE (every volume with --topics),
the largest topics its broker's sidecar measured (the usage topic, --usage-topic, read from the
beginning; records checked like snapshots under snapshot_signatures, refused ones counted), with
the topics' retention configs from one DescribeConfigs call:
  TOPIC       the topic (--top-topics of them, largest first; the rest summed as "other")
  BYTES       its allocated bytes on the volume, as du counts them
  SHARE       BYTES as a percentage of the volume's capacity
  GROWTH 15M  bytes gained (or lost, -) over the last 15 minutes, "/span": the span measured,
  GROWTH 24H  and over the last 24 hours; shorter when the sidecar started more recently
  RETENTION   what retention will do on this volume: "bounded at X" by retention.bytes (per
              partition x partitions + a segment each), "steady at X" (about the growth rate x
              retention.ms + a segment per partition, never less than it holds now),
              "unbounded" (compact only, or retention.ms and retention.bytes both -1); for
              tiered topics the local.retention.* values. "(fits in free space)" when what it
              may still add fits the volume's free space, "(MORE THAN THE FREE SPACE)" when
              not. "retention: unknown (not authorized to describe configs)" when this
              identity may not DescribeConfigs the topic.
  UPLOAD BACKLOG  only on a volume where a tiered topic (remote.storage.enable=true) holds
              bytes beyond what local retention keeps: segments the remote store has not
              taken, which no local retention can free ("?": not known yet); the volume's
              total is printed under the table.
This needs READ on the usage topic and DESCRIBE_CONFIGS on the topics shown; without them the
volume table and the decision still print.

Bytes on their way in (--incoming): partition reassignments (ListPartitionReassignments: the
replicas being added) and log-dir moves (DescribeLogDirs: -future replicas) still to write, per
broker and volume, as committed usage: each adding replica will write the partition's size (its
largest replica not being added) minus what it holds already; a -future replica, its current
replica's size minus its own. The volume's used + incoming bytes are judged against its soft and
hard limits: "WOULD CROSS THE SOFT LIMIT" (or HARD) when the moves alone would take it into
THROTTLE (or PAUSE) once they land. A replica not created yet has no log dir: on a broker with
one volume it lands there; with several it is shown per broker, judged on the volume of the log
dir Kafka picks by default (the one with the fewest partitions). This needs DESCRIBE on the
cluster; without it the rest still prints, with the reason.
"""

EPILOG = """\
examples:
  volume-quota status --bootstrap-servers kafka:9091 --tls-ca-file ca.crt \\
      --tls-cert-file user.crt --tls-key-file user.key
  volume-quota status --json ... | jq '.volumes[] | select(.state != "OPEN")'
  volume-quota status --topics --top-topics 10 ...
  volume-quota status --incoming ...

exit status: 0 when the topic was read and the live brokers learned, 1 when that did not
happen within --timeout (what was read is still printed), 2 for bad configuration.
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "status",
        help="show every broker's volumes and the cluster decision, read live from the topic",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_settings_arguments(parser, StatusSettings)
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="give up catching up with the topic after this long (default: %(default)g)",
    )
    parser.add_argument(
        "--topics",
        action="store_true",
        help="show the top topics of every volume, not only of those in THROTTLE or PAUSE",
    )
    parser.add_argument(
        "--top-topics",
        type=positive_integer,
        default=5,
        metavar="N",
        help="show this many largest topics per volume (default: %(default)s)",
    )
    parser.add_argument(
        "--incoming",
        action="store_true",
        help="show the bytes that reassignments and log-dir moves in flight will still write, "
        "per volume, against its limits (needs DESCRIBE on the cluster)",
    )
    parser.set_defaults(run=run)


class UsageReader(Protocol):
    def assign_from_beginning(self, timeout_seconds: float = ...) -> None: ...
    @property
    def caught_up(self) -> bool: ...
    def poll(self, timeout_seconds: float, max_records: int = ...) -> Iterator[TopicRecord]: ...


def read_usage(
    reader: UsageReader,
    usage: UsageCollection,
    now: Callable[[], datetime],
    timeout_seconds: float,
) -> str | None:
    """Read the usage topic from the beginning to the end it had, into ``usage``; None when
    done, else why not (the documents read so far are kept)."""
    clock = SystemClock()
    deadline = clock.monotonic() + timeout_seconds
    try:
        reader.assign_from_beginning(timeout_seconds)
        while not reader.caught_up:
            if clock.monotonic() >= deadline:
                return f"the usage topic was not read to its end within {timeout_seconds:g}s"
            for record in reader.poll(0.2):
                usage.apply(record.key, record.value, record.headers, now())
    except TopicUnavailableError as error:
        return str(error)
    return None


def _new_consumer(config: Mapping[str, Any]) -> Consumer:
    return Consumer(dict(config))


def _with_topics(
    status: ClusterStatus, settings: StatusSettings, arguments: argparse.Namespace
) -> ClusterStatus:
    """``status`` with the top topics of the volumes shown: reads the usage topic and the
    topics' configs (nothing when no volume is shown)."""
    every = bool(arguments.topics)
    if not every and all(row.state is QuotaState.OPEN for row in status.volumes):
        return status
    clock = SystemClock()
    connection = settings.required_kafka_connection()
    config: Mapping[str, Any] = with_client_logger(
        consumer_config(connection, settings.broker_id, settings.consumer_group)
    )
    signatures = signature_policy(settings)
    usage = UsageCollection(signatures.mode, signatures.trust)
    reader = SnapshotTopicReader(_new_consumer, config, settings.usage_topic)
    try:
        problem = read_usage(reader, usage, clock.wall, arguments.timeout)
    finally:
        reader.close()
    top = arguments.top_topics
    names = topics_to_describe(status.volumes, usage.documents, every_volume=every, top=top)
    configs: TopicConfigs = {}
    if names:
        admin = AdminClient({key: value for key, value in config.items() if key != "group.id"})
        configs = describe_topic_configs(admin, names, min(arguments.timeout, 15.0))
    shown = volume_topics(
        status.volumes, usage.documents, configs, clock.wall(), every_volume=every, top=top
    )
    return status.model_copy(
        update={
            "topics": shown,
            "usage_refused": dict(usage.refused),
            "usage_problem": problem,
        }
    )


def _kafka_python_admin(settings: StatusSettings) -> MovesAdmin:
    # Imported here: kafka-python loads its protocol tables when imported.
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415

    config = kafka_python_admin_config(
        settings.required_kafka_connection(), f"volume-quota-status-{settings.broker_id}"
    )
    admin: MovesAdmin = KafkaAdminClient(**config)
    return admin


def _with_incoming(
    status: ClusterStatus, settings: StatusSettings, arguments: argparse.Namespace
) -> ClusterStatus:
    """``status`` with the bytes that moves in flight will still write, per volume."""
    if not arguments.incoming:
        return status
    moves = describe_moves(
        lambda: _kafka_python_admin(settings),
        KafkaPythonLogDirs,
        min(arguments.timeout, 15.0),
    )
    if isinstance(moves, str):
        return status.model_copy(update={"incoming": [], "incoming_problem": moves})
    found = incoming_moves(moves.reassignments, moves.replicas, moves.log_dirs)
    return status.model_copy(update={"incoming": incoming_status(found, status.volumes)})


def run(arguments: argparse.Namespace) -> int:
    settings = settings_from_arguments(StatusSettings, arguments)
    configure_logging("error")
    clients = KafkaClients(settings)
    clock = SystemClock()
    state = ClusterState(settings.decision_policy())
    service = DecisionService(
        state,
        source=clients.reader,
        live_brokers=clients.live_brokers,
        clock=clock,
        sink=lambda decision: None,
        metrics=ConsumerMetrics(CollectorRegistry()),
        timing=LoopTiming(poll_timeout_seconds=0.2, retry_seconds=1.0),
        signatures=signature_policy(settings),
        overrides=(
            overrides := OverrideFollower(
                clients.override_reader, CollectorRegistry(), policy=override_policy(settings)
            )
        ),
    )
    try:
        service.run(threading.Event(), until_ready=True, timeout_seconds=arguments.timeout)
    finally:
        clients.close()
    status = cluster_status(state, service.current.decision, clock.wall(), overrides.refused)
    status = _with_topics(status, settings, arguments)
    status = _with_incoming(status, settings, arguments)
    if arguments.json:
        print(json.dumps(status_as_json(status), indent=2))
    else:
        sys.stdout.write(render_status_table(status))
    waiting = overrides.dormant(clock.wall())
    if waiting is not None:
        print(
            f"volume-quota: an override waits to force {waiting.state.value} from "
            f"{waiting.set_at.isoformat()} until {waiting.expires_at.isoformat()} "
            f"(set by {waiting.set_by}: {waiting.reason})",
            file=sys.stderr,
        )
    if not service.ready:
        reason = service.not_ready_reason() or service.override_problem
        print(f"volume-quota: incomplete view: {reason}", file=sys.stderr)
        return 1
    return 0
