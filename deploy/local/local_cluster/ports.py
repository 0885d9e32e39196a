"""Pick free loopback ports for the cluster's listeners."""

from __future__ import annotations

import contextlib
import socket


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
