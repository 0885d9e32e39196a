"""Run Kafka's JVM entry points: the storage formatter and the broker itself."""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from local_cluster.broker_config import BrokerFiles
from local_cluster.errors import LocalClusterError

BROKER_MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL_CLASS = "kafka.tools.StorageTool"
_FORMAT_TIMEOUT_S = 180.0
_HEAP = re.compile(r"^\d+[kKmMgG]$")


@dataclass(frozen=True)
class JvmSettings:
    """How to launch a broker JVM.

    ``heap`` is the -Xmx value; brokers use the serial GC and a small initial heap because the
    test machines have two shared cores. With ``die_with_parent`` the broker gets SIGTERM when
    the thread that launched it exits, so a killed test run cannot leave brokers behind
    (needs util-linux ``setpriv``; skipped if absent).
    """

    java: str
    jars_dir: Path
    extra_classpath: tuple[Path, ...] = ()
    heap: str = "384m"
    extra_options: tuple[str, ...] = ()
    die_with_parent: bool = True

    @property
    def classpath(self) -> str:
        # Java expands "dir/*" to every jar in dir.
        entries = [str(self.jars_dir / "*"), *(str(p) for p in self.extra_classpath)]
        return os.pathsep.join(entries)

    def command(self, main_class: str, args: Sequence[str], files: BrokerFiles) -> list[str]:
        prefix = []
        setpriv = shutil.which("setpriv")
        if self.die_with_parent and setpriv is not None:
            prefix = [setpriv, "--pdeathsig", "TERM"]
        return [
            *prefix,
            self.java,
            f"-Xmx{self.heap}",
            "-Xms64m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={files.log4j_config}",
            f"-Dkafka.logs.dir={files.logs_dir}",
            *self.extra_options,
            "-cp",
            self.classpath,
            main_class,
            *args,
        ]


def check_launch_settings(java: str, heap: str, extra_classpath: Sequence[Path]) -> None:
    """Raise a one-line error for settings that would make every broker fail to start.

    Runs before the (possibly slow) jar download, so a missing java is reported at once.
    """
    if not _HEAP.match(heap):
        raise LocalClusterError(f"invalid JVM heap {heap!r}: use e.g. 384m or 1g")
    if shutil.which(java) is None:
        raise LocalClusterError(
            f"java executable {java!r} not found; install a JDK 17+ "
            "(Kafka 4 needs Java 17) or put java on PATH"
        )
    missing = [str(p) for p in extra_classpath if not p.exists()]
    if missing:
        raise LocalClusterError("extra classpath entries do not exist: " + ", ".join(missing))


def new_cluster_id() -> str:
    """A random cluster id in Kafka's Uuid text form (URL-safe base64 of 16 bytes)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):  # Kafka avoids ids that look like command-line options
            return text


def format_storage(jvm: JvmSettings, nodes: Sequence[BrokerFiles], cluster_id: str) -> None:
    """Format every node's metadata and data dirs, in parallel; formatted dirs are kept.

    The static ``controller.quorum.voters`` in server.properties defines the quorum, so no
    ``--initial-controllers`` is needed (that flag is for dynamic quorums).
    """
    running = []
    for files in nodes:
        for folder in (files.metadata_dir, *files.data_dirs):
            folder.mkdir(parents=True, exist_ok=True)
        log_path = files.home / "format.log"
        args = ["format", "-t", cluster_id, "-c", str(files.server_properties), "-g"]
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                jvm.command(STORAGE_TOOL_CLASS, args, files),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        running.append((process, log_path))
    failures = []
    for process, log_path in running:
        try:
            code = process.wait(timeout=_FORMAT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = -1
        if code != 0:
            failures.append(f"exit {code}; {log_path}:\n{tail(log_path)}")
    if failures:
        raise LocalClusterError("formatting Kafka storage failed: " + "\n".join(failures))


def launch_broker(
    jvm: JvmSettings, files: BrokerFiles, extra_environment: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``kafka.Kafka server.properties``; JVM stdout/stderr go to the console log.

    ``extra_environment`` is added to this process's environment for the broker only.
    """
    files.logs_dir.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, **extra_environment} if extra_environment else None
    with files.console_log.open("ab") as console:
        return subprocess.Popen(
            jvm.command(BROKER_MAIN_CLASS, [str(files.server_properties)], files),
            env=environment,
            stdout=console,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=files.home,
            # Own process group: a Ctrl-C in the terminal reaches only the CLI, which then
            # stops the brokers in order instead of all of them dying at once.
            start_new_session=True,
        )


def terminate(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM (Kafka's clean shutdown), then SIGKILL if it is still alive after ``timeout_s``."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    wait_or_kill(process, timeout_s)


def wait_or_kill(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Wait for an already signalled process; SIGKILL it if it outlives ``timeout_s``."""
    try:
        process.wait(timeout=max(timeout_s, 0.001))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def tail(path: Path, lines: int = 40) -> str:
    """Last lines of a log file, for error messages; empty if the file does not exist."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
