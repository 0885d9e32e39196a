"""``volume-quota status``: every broker's volumes and the cluster decision, read live."""

from __future__ import annotations

import argparse
import json
import sys
import threading

from prometheus_client import CollectorRegistry

from consumer.clock import SystemClock
from consumer.cluster_state import ClusterState
from consumer.consumer_metrics import ConsumerMetrics
from consumer.decision_service import DecisionService, LoopTiming
from consumer.override_follower import OverrideFollower
from consumer.status_report import cluster_status, render_status_table, status_as_json
from volume_quota.arguments import positive_seconds
from volume_quota.config import StatusSettings, add_settings_arguments, settings_from_arguments
from volume_quota.daemons.decider import KafkaClients, override_policy, signature_policy
from volume_quota.logging_setup import configure_logging

DESCRIPTION = """\
Read the snapshot topic from the beginning (as the consumer does), learn the live brokers, and
print a table of brokers x volumes (free space, free %, soft and hard thresholds, state, snapshot
age) followed by the cluster decision and what drove it (an operator's override first, set by
the operator identity that signed it), and the latest override records that were refused and
never took effect (not signed by an operator, setAt too far from their arrival: see
override_signatures). Read-only: writes nothing.
"""

EPILOG = """\
examples:
  volume-quota status --bootstrap-servers kafka:9091 --tls-ca-file ca.crt \\
      --tls-cert-file user.crt --tls-key-file user.key
  volume-quota status --json ... | jq '.volumes[] | select(.state != "OPEN")'

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
    parser.set_defaults(run=run)


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
