"""Pick free loopback ports for the cluster's listeners."""

from __future__ import annotations

import contextlib
import socket

from local_cluster.broker_config import BrokerPorts


def free_loopback_ports(count: int) -> list[int]:
    """Return ``count`` distinct ports that were free on 127.0.0.1 a moment ago.

    All sockets stay bound until every port is chosen, so the kernel cannot hand out the same
    port twice; they are then released for the brokers. Another process could grab one in
    between, which the broker reports as a bind failure in its log.
    """
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def allocate_broker_ports(broker_count: int, *, sasl: bool = False) -> list[BrokerPorts]:
    """Free ports for every node: client, internal and controller, and with ``sasl`` the
    SASL_SSL client listener's as well."""
    per_node = 4 if sasl else 3
    numbers = free_loopback_ports(per_node * broker_count)
    return [BrokerPorts(*numbers[per_node * i : per_node * (i + 1)]) for i in range(broker_count)]
