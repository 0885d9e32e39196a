"""``volume-quota sidecar``: publish this broker's volumes and decide for it, in one process."""

from __future__ import annotations

import argparse

from volume_quota.config import SidecarSettings, add_settings_arguments, settings_from_arguments
from volume_quota.daemons.decider import DecideDaemon
from volume_quota.daemons.publisher import PublisherDaemon
from volume_quota.daemons.roles import run_both_roles
from volume_quota.logging_setup import configure_logging

DESCRIPTION = """\
Run both roles next to one broker, so one container per broker suffices: the publisher
(measure this broker's log volumes, publish snapshots; see `volume-quota publish --help`) and
the consumer (read every broker's snapshots, write the cluster decision to --decision-file for
the broker's quota callback; see `volume-quota decide --help`). One /metrics endpoint carries
both roles' metrics; /healthz and /readyz are healthy only when both roles are.
"""

EPILOG = """\
example:
  volume-quota sidecar --broker-id 0 --log-dirs /var/lib/kafka/data-0 \\
      --bootstrap-servers kafka-0.kafka:9091 --tls-ca-file ca.crt --tls-cert-file user.crt \\
      --tls-key-file user.key --soft-limit MinFreePercentage:15 --hard-limit MinFreeBytes:5GiB \\
      --decision-file /var/run/volume-quota/decision.json

exit status: 0 after a clean stop (SIGTERM), 2 for bad configuration (one line naming the setting).
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "sidecar",
        help="publish and decide in one process (one container per broker)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_settings_arguments(parser, SidecarSettings)
    parser.set_defaults(run=run)


def run(arguments: argparse.Namespace) -> int:
    settings = settings_from_arguments(SidecarSettings, arguments)
    configure_logging(settings.log_level)
    publisher = PublisherDaemon(settings, serve_http=False)
    decider = DecideDaemon(settings, registry=publisher.metrics.registry, serve_http=False)
    publisher.attach_cluster_view(decider.cluster_view())
    return run_both_roles(settings, publisher, decider)
