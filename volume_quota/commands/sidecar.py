"""``volume-quota sidecar``: publish this broker's volumes and decide for it, in one process."""

from __future__ import annotations

import argparse
import threading

from publisher.health import HealthVerdict
from volume_quota.config import SidecarSettings, add_settings_arguments, settings_from_arguments
from volume_quota.daemons.decider import DecideDaemon
from volume_quota.daemons.publisher import PublisherDaemon, serve_endpoints, stop_on_signals
from volume_quota.logging_setup import configure_logging, get_logger

log = get_logger("volume_quota.sidecar")

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


def both(*verdicts: HealthVerdict) -> HealthVerdict:
    problems = tuple(problem for verdict in verdicts for problem in verdict.problems)
    return HealthVerdict(all(verdict.healthy for verdict in verdicts), problems)


def run(arguments: argparse.Namespace) -> int:
    settings = settings_from_arguments(SidecarSettings, arguments)
    configure_logging(settings.log_level)
    publisher = PublisherDaemon(settings, serve_http=False)
    decider = DecideDaemon(settings, registry=publisher.metrics.registry, serve_http=False)
    server = serve_endpoints(
        settings,
        publisher.metrics.registry,
        lambda: both(publisher.liveness(), decider.liveness()),
        lambda: both(publisher.readiness(), decider.readiness()),
    )
    stop = threading.Event()
    outcome: dict[str, int | BaseException] = {}

    def run_role(name: str, role: PublisherDaemon | DecideDaemon) -> None:
        try:
            outcome[name] = role.run(stop)
        except BaseException as error:  # one role failing stops the other: no half sidecar
            outcome[name] = error
        finally:
            stop.set()

    threads = [
        threading.Thread(target=run_role, args=(name, role), name=f"volume-quota-{name}")
        for name, role in (("publisher", publisher), ("consumer", decider))
    ]
    server.start()
    try:
        with stop_on_signals(stop):
            for thread in threads:
                thread.start()
            while any(thread.is_alive() for thread in threads):
                stop.wait(0.5)
                for thread in threads:
                    thread.join(timeout=0.1)
    finally:
        server.stop()
    for result in outcome.values():
        if isinstance(result, BaseException):
            raise result
    return max((result for result in outcome.values() if isinstance(result, int)), default=0)
