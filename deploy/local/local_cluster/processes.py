"""Child processes that cannot outlive the process that started them."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from local_cluster.cluster import LocalKafkaCluster


def die_with_parent(command: Sequence[str]) -> list[str]:
    """``command`` prefixed with ``setpriv --pdeathsig TERM`` (util-linux), as the brokers are.

    The kernel then sends SIGTERM to the child when the thread that started it exits, so a
    test run killed with SIGKILL leaves no sidecar or producer behind. Without ``setpriv``
    the command is returned unchanged.
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", *command] if setpriv else list(command)


def start_child(
    command: Sequence[str],
    *,
    log_file: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``command`` with :func:`die_with_parent`, stdout and stderr appended to
    ``log_file``. Call it from a thread that lives as long as the child should."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as log:
        return subprocess.Popen(
            die_with_parent(command),
            env=dict(env) if env is not None else dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
        )


def broker_pid(cluster: LocalKafkaCluster, index: int) -> int | None:
    """Process id of node ``index``'s JVM, or None if it is not running (e.g. to signal,
    pause or inspect it). Raises :class:`LocalClusterError` for an index the cluster lacks."""
    cluster.broker_files(index)  # validates the index
    process = cluster._processes.get(index)  # the package's own internals
    if process is None or process.poll() is not None:
        return None
    return process.pid
