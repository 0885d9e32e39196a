"""Ask a broker, over mTLS with a real client request, whether it is serving.

Why a client request and not "port is open" or a log line: the TCP port opens before the
broker has joined the quorum and registered, and log lines change between Kafka versions. A
metadata response from the broker itself that lists the broker as alive is what clients need.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

CLIENT_LOG = logging.getLogger("local_cluster.librdkafka")
"""Logger for the internal clients' librdkafka messages: a booting broker refuses connections
and librdkafka reports each refusal; that belongs in DEBUG logging, not on stderr."""


def broker_serves(client_config: Mapping[str, Any], node_id: int, timeout_s: float) -> bool:
    """True if the broker at ``client_config['bootstrap.servers']`` answers a metadata request
    within ``timeout_s`` and reports node ``node_id`` among the live brokers."""
    config: dict[str, Any] = dict(client_config)
    config["logger"] = CLIENT_LOG
    config["socket.connection.setup.timeout.ms"] = max(1000, int(timeout_s * 1000))
    admin = AdminClient(config)
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException:
        return False
    return node_id in metadata.brokers
