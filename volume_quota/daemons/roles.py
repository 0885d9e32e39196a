"""Running the publisher and the decider together in one process, behind one HTTP endpoint.

Used by ``volume-quota sidecar`` (one broker's volumes, the decision file) and
``volume-quota cluster-agent`` (every broker through the Admin API, the decisions topic). One
role failing stops the other: never half a sidecar. /healthz and /readyz are healthy only when
both roles are.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from publisher.health import HealthVerdict
from publisher.topic_setup import TopicGuard
from volume_quota.config.concerns import HttpSettings
from volume_quota.daemons.decider import DecideDaemon
from volume_quota.daemons.publisher import PublisherDaemon, serve_endpoints, stop_on_signals
from volume_quota.errors import UsageError
from volume_quota.logging_setup import get_logger

log = get_logger("volume_quota.roles")


def both(*verdicts: HealthVerdict) -> HealthVerdict:
    problems = tuple(problem for verdict in verdicts for problem in verdict.problems)
    return HealthVerdict(all(verdict.healthy for verdict in verdicts), problems)


def guarded_topics(guards: Sequence[TopicGuard]) -> HealthVerdict:
    """Ready while every guarded topic is verified (and, once running, still right)."""
    problems = tuple(guard.problem for guard in guards if guard.problem is not None)
    return HealthVerdict(not problems, problems)


def run_both_roles(
    settings: HttpSettings,
    publisher: PublisherDaemon,
    decider: DecideDaemon,
    topic_guards: Sequence[TopicGuard] = (),
) -> int:
    """Run both until SIGTERM/SIGINT or until one stops; re-raise what stopped it.

    ``topic_guards`` check topics of the process's own (the decisions topic): a topic found
    misconfigured before its first verification stops both roles with that one line (exit 2),
    as the publisher does for the snapshot topic; found so later, it fails /readyz.
    """
    server = serve_endpoints(
        settings,
        publisher.metrics.registry,
        lambda: both(publisher.liveness(), decider.liveness()),
        lambda: both(publisher.readiness(), decider.readiness(), guarded_topics(topic_guards)),
    )
    stop = threading.Event()
    outcome: dict[str, int | BaseException] = {}

    def run_role(name: str, role: PublisherDaemon | DecideDaemon) -> None:
        try:
            outcome[name] = role.run(stop)
        except BaseException as error:  # one role failing stops the other
            outcome[name] = error
        finally:
            stop.set()

    threads = [
        threading.Thread(target=run_role, args=(name, role), name=f"volume-quota-{name}")
        for name, role in (("publisher", publisher), ("consumer", decider))
    ]
    server.start()
    log.info("http endpoints serving", host=settings.metrics_host, port=server.port)
    try:
        with stop_on_signals(stop):
            for thread in threads:
                thread.start()
            while any(thread.is_alive() for thread in threads):
                stop.wait(0.5)
                for guard in topic_guards:
                    if guard.misconfiguration is not None and "topic" not in outcome:
                        outcome["topic"] = UsageError(guard.misconfiguration)
                        stop.set()
                for thread in threads:
                    thread.join(timeout=0.1)
    finally:
        server.stop()
    for result in outcome.values():
        if isinstance(result, BaseException):
            raise result
    return max((result for result in outcome.values() if isinstance(result, int)), default=0)
