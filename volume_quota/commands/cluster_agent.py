"""``volume-quota cluster-agent``: volume-quota without sidecars, one process per cluster."""

from __future__ import annotations

import argparse

from consumer.decision_topic import DecisionTopicWriter
from publisher.topic_requirements import TopicRequirements
from publisher.topic_setup import TopicGuard, new_admin_client
from volume_quota.config import settings_from_arguments
from volume_quota.config.commands import AGENT_ONLY_LOCAL, ClusterAgentSettings
from volume_quota.config.flags import add_config_flag, add_setting_flags
from volume_quota.daemons.decider import DecideDaemon
from volume_quota.daemons.publisher import PublisherDaemon
from volume_quota.daemons.roles import run_both_roles
from volume_quota.kafka_client_config import admin_config, producer_config
from volume_quota.logging_setup import configure_logging, with_client_logger

DESCRIPTION = """\
For clusters whose broker pods cannot have a sidecar (Strimzi): one process measures every
live broker's log dirs through the Admin API (DescribeLogDirs, every --survey-interval) and
publishes one snapshot per broker, reads every snapshot as a decider does, and writes each
decision to the compacted --decisions-topic (key 'cluster'), where the brokers' quota
callbacks read it (volume.quota.decision.source=topic). Every --usage-interval it publishes
each broker's largest topics per volume on --usage-topic, as a sidecar does (from
DescribeLogDirs: no active segment bytes, oldest segment time or unattributed bytes). Two
agents may run at once: they measure and decide alike. Serves /metrics, /healthz, /readyz like
the sidecar.
"""

EPILOG = """\
example:
  volume-quota cluster-agent --bootstrap-servers kafka-kafka-bootstrap:9093 \\
      --tls-ca-file /certs/ca.crt --tls-cert-file /user/user.crt --tls-key-file /user/user.key \\
      --soft-limit MinFreePercentage:15 --hard-limit MinFreeBytes:5GiB

The principal needs, on the snapshot topic and on the usage topic: Read, Write, Create,
Describe, DescribeConfigs; on the decisions topic: Write, Create, Describe, DescribeConfigs; on
the override topic: Read, Describe; Read on the group --consumer-group; Describe on the cluster
(DescribeLogDirs); for the retention column of `status --topics`, DescribeConfigs on the
topics shown.

exit status: 0 after a clean stop (SIGTERM), 2 for bad configuration (one line per problem).
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "cluster-agent",
        help="measure every broker and decide for all, no sidecar (one per cluster)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_flag(parser)
    add_setting_flags(parser, ClusterAgentSettings, without=AGENT_ONLY_LOCAL)
    parser.set_defaults(run=run, source="admin")


def run(arguments: argparse.Namespace) -> int:
    settings = settings_from_arguments(ClusterAgentSettings, arguments)
    configure_logging(settings.log_level)
    publisher = PublisherDaemon(settings, serve_http=False)
    connection = settings.required_kafka_connection()
    writer = DecisionTopicWriter(
        with_client_logger(producer_config(connection, "decider", settings.delivery_timeout)),
        settings.decisions_topic,
        settings.delivery_timeout,
    )
    decider = DecideDaemon(
        settings, registry=publisher.metrics.registry, serve_http=False, sink=writer.write
    )
    # The callbacks read partition 0 only: the topic is created (compacted, one partition) when
    # missing, refused with more partitions, and checked in the background so that an
    # unreachable cluster at start is only a retry.
    requirements = TopicRequirements(
        name=settings.decisions_topic,
        partitions=1,
        min_compaction_lag_seconds=3600.0,
        single_partition=True,
    )
    guard = TopicGuard(
        lambda: new_admin_client(with_client_logger(admin_config(connection, "decider"))),
        requirements,
        create=settings.create_topic,
        timeout_seconds=min(10.0, settings.delivery_timeout),
    ).start()
    try:
        return run_both_roles(settings, publisher, decider, topic_guards=(guard,))
    finally:
        guard.stop()
        writer.close()
