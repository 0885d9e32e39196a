"""``volume-quota decide``: the consumer sidecar that writes the cluster decision for the broker."""

from __future__ import annotations

import argparse
import threading

from volume_quota.config import DecideSettings, add_settings_arguments, settings_from_arguments
from volume_quota.daemons.decider import DecideDaemon
from volume_quota.daemons.publisher import stop_on_signals
from volume_quota.logging_setup import configure_logging

DESCRIPTION = """\
Read every broker's newest snapshot from the compacted topic (from the beginning, then follow
it), learn the live brokers from the Admin client, and keep the cluster decision up to date:
OPEN, THROTTLE (factor between the soft and hard limits) or PAUSE, with the on-missing action
when a live broker's state is unknown. Every decision is written atomically (temporary file +
rename) to --decision-file, where the broker's quota callback reads it; it carries a
validUntil after which the callback applies its own on-missing action.

Until it has read the topic to the end offsets seen at start and learned the live brokers, it
applies the on-missing action and /readyz says why. Serves /metrics, /healthz, /readyz.
Every setting can also come from a VOLUME_QUOTA_* environment variable or a --config TOML file.
"""

EPILOG = """\
example:
  volume-quota decide --bootstrap-servers kafka-0.kafka:9091 --tls-ca-file ca.crt \\
      --tls-cert-file user.crt --tls-key-file user.key \\
      --decision-file /var/run/volume-quota/decision.json --stale-after 30s --on-missing PAUSE

exit status: 0 after a clean stop (SIGTERM), 2 for bad configuration (one line naming the setting).
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "decide",
        help="keep the cluster decision up to date for this broker's quota callback (daemon)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_settings_arguments(parser, DecideSettings)
    parser.set_defaults(run=run)


def run(arguments: argparse.Namespace) -> int:
    settings = settings_from_arguments(DecideSettings, arguments)
    configure_logging(settings.log_level)
    daemon = DecideDaemon(settings)
    stop = threading.Event()
    with stop_on_signals(stop):
        return daemon.run(stop)
