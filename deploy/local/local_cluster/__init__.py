"""Start a real, mTLS-secured Apache Kafka 4 KRaft cluster on loopback for tests and demos.

Typical use::

    with LocalKafkaCluster(tmp_dir, broker_count=3) as cluster:
        grant_volume_quota_acls(cluster)
        producer = confluent_kafka.Producer(cluster.client_config("publisher"))
        issue_client(cluster, "app-a", topics_write=["orders"])  # an ordinary principal

With ``sasl_listener=True`` every node also has a SASL_SSL listener: ``add_scram_user`` makes a
SCRAM user (principal ``User:<name>``) and ``scram_client_config`` connects as it.

Or from a shell: ``python -m local_cluster start --brokers 3 --dir /tmp/vq-cluster``.
"""

import logging

from local_cluster.acls import (
    SNAPSHOT_TOPIC,
    allow,
    grant_sidecar_acls,
    grant_volume_quota_acls,
    sidecar_acl_bindings,
    volume_quota_acl_bindings,
)
from local_cluster.broker_config import BrokerFiles, BrokerPorts
from local_cluster.clients import client_acl_bindings, issue_client
from local_cluster.cluster import ClientConfig, LocalKafkaCluster
from local_cluster.errors import LocalClusterError
from local_cluster.jars import ensure_kafka_jars, kafka_version
from local_cluster.pki import (
    CLIENT_IDENTITIES,
    ROGUE_IDENTITIES,
    ClusterPki,
    IdentityFiles,
    read_certificate,
    subject_of,
)
from local_cluster.processes import broker_pid, die_with_parent, start_child
from local_cluster.quota_callback import callback_cluster, callback_properties
from local_cluster.scram import add_scram_user, scram_client_config
from local_cluster.topics import (
    DECISIONS_TOPIC,
    TOPIC_CONFIGS,
    TOPIC_MAX_MESSAGE_BYTES,
    create_volume_quota_topics,
    topic_config,
)

# A library does not print: without a handler configured by the application, the internal
# clients' librdkafka messages (refused connections while brokers boot) are dropped.
logging.getLogger("local_cluster").addHandler(logging.NullHandler())

__all__ = [
    "CLIENT_IDENTITIES",
    "DECISIONS_TOPIC",
    "ROGUE_IDENTITIES",
    "SNAPSHOT_TOPIC",
    "TOPIC_CONFIGS",
    "TOPIC_MAX_MESSAGE_BYTES",
    "BrokerFiles",
    "BrokerPorts",
    "ClientConfig",
    "ClusterPki",
    "IdentityFiles",
    "LocalClusterError",
    "LocalKafkaCluster",
    "add_scram_user",
    "allow",
    "broker_pid",
    "callback_cluster",
    "callback_properties",
    "client_acl_bindings",
    "create_volume_quota_topics",
    "die_with_parent",
    "ensure_kafka_jars",
    "grant_sidecar_acls",
    "grant_volume_quota_acls",
    "issue_client",
    "kafka_version",
    "read_certificate",
    "scram_client_config",
    "sidecar_acl_bindings",
    "start_child",
    "subject_of",
    "topic_config",
    "volume_quota_acl_bindings",
]
