"""``volume-quota publish``: measure this broker's log volumes and publish them to Kafka."""

from __future__ import annotations

import argparse
import sys
import threading

from volume_quota.config import PublishSettings, add_settings_arguments, settings_from_arguments
from volume_quota.daemons.publisher import PublisherDaemon, stop_on_signals
from volume_quota.errors import UsageError
from volume_quota.logging_setup import configure_logging, get_logger
from volume_quota.one_shot import PublicationFailedError, print_snapshot, publish_snapshot_once

DESCRIPTION = """\
Measure the filesystems holding this broker's Kafka log dirs (each filesystem once, however many
log dirs it holds) and publish one snapshot message per publication to a compacted topic, keyed
by broker id. Publishes on start, samples every --sample-interval, publishes at once when a
volume's state (OPEN / THROTTLE / PAUSE) changes or its free space moves by more than
--change-threshold-percent of capacity, and otherwise every --heartbeat-interval.

Serves /metrics, /healthz and /readyz on --metrics-host:--metrics-port. Logs JSON lines to
stderr. SIGTERM flushes and exits. Rotated TLS files are picked up without a restart.

Every setting can also come from a VOLUME_QUOTA_* environment variable or a --config TOML file;
flags win over the environment, which wins over the file.
"""

EPILOG = """\
examples:
  volume-quota publish --once --print --broker-id 0 --log-dirs /var/lib/kafka/data-0
  volume-quota publish --server-properties /opt/kafka/config/server.properties \\
      --bootstrap-servers kafka-0.kafka:9091 --tls-ca-file ca.crt --tls-cert-file user.crt \\
      --tls-key-file user.key --soft-limit MinFreePercentage:15 --hard-limit MinFreeBytes:5GiB \\
      --volume-limit /var/lib/kafka/data-1:soft=MinFreePercentage:20

exit status: 0 after a clean stop (or a delivered --once), 1 when --once could not publish,
2 for bad configuration (one line naming the setting).
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "publish",
        help="measure this broker's volumes and publish them (daemon)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--once", action="store_true", help="publish one snapshot and exit (with --print: print it)"
    )
    parser.add_argument(
        "--print",
        action="store_true",
        dest="print_only",
        help="with --once: print the snapshot JSON to stdout instead of publishing (no Kafka)",
    )
    add_settings_arguments(parser, PublishSettings)
    parser.set_defaults(run=run)


def run(arguments: argparse.Namespace) -> int:
    if arguments.print_only and not arguments.once:
        raise UsageError("--print needs --once (it prints one snapshot instead of publishing)")
    settings = settings_from_arguments(PublishSettings, arguments)
    configure_logging(settings.log_level)
    if arguments.once and arguments.print_only:
        print_snapshot(settings, sys.stdout.buffer)
        return 0
    if arguments.once:
        try:
            snapshot = publish_snapshot_once(settings)
        except PublicationFailedError as error:
            print(f"volume-quota: publication failed: {error}", file=sys.stderr)
            return 1
        get_logger("volume_quota.publisher").info(
            "snapshot published", broker_id=snapshot.broker_id, topic=settings.topic
        )
        return 0
    daemon = PublisherDaemon(settings)
    stop = threading.Event()
    with stop_on_signals(stop):
        return daemon.run(stop)
