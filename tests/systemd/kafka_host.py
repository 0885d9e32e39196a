"""A plain Kafka host as a user already has it, before volume-quota: a container with systemd as
PID 1 (the image of build-systemd-image.sh) running a single-node KRaft broker as the user's own
``kafka.service``, user ``kafka``, configuration in ``/opt/kafka/config``, data in
``/var/lib/kafka``, and Kafka's launcher scripts in ``/opt/kafka/bin``, as a Kafka distribution
lays them out. deploy/systemd/README.md states these as its assumptions.

The jars are deploy/local's (``ensure_kafka_jars``), mounted read-only as ``/opt/kafka/libs``,
plus the kafka-tools jar (kafka-acls.sh, kafka-topics.sh) fetched with Maven by
``kafka-tools/pom.xml`` in the same cache. The launcher scripts are reduced to what this host
needs; like the distribution's ``kafka-run-class.sh`` they put ``$CLASSPATH`` before the
distribution's jars, which is how the README's drop-in adds the callback jar. TLS is mTLS on
every listener with certificates from local_cluster's PKI (CN = principal), as in deploy/local.

podman flags: see deploy/container/build.sh (runc, ulimits within the hard limits, host
network). ``--privileged`` gives systemd what it has on a real host: the capabilities and the
cgroup and namespace access that the sidecar unit's sandboxing (ProtectSystem=, PrivateTmp=,
SystemCallFilter=, MemoryMax=...) needs.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from local_cluster.broker_config import (
    BrokerFiles,
    BrokerPorts,
    server_properties,
    write_properties,
)
from local_cluster.jars import CACHE_ENV, ensure_kafka_jars, kafka_version
from local_cluster.jvm import new_cluster_id
from local_cluster.pki import ClusterPki, broker_identity
from local_cluster.ports import free_loopback_ports
from volume_quota.maven_cache import cache_root, fetch_dependencies

HERE = Path(__file__).resolve().parent
BUILD_IMAGE_SCRIPT = HERE / "build-systemd-image.sh"
TOOLS_POM = HERE / "kafka-tools" / "pom.xml"
PODMAN = ("podman", "--runtime", "runc")
RUN_FLAGS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "--network", "host")
SETUP_DIR = "/srv/kafka-host"
"""Where the container sees the files that make up the user's Kafka installation."""
ADMIN = "admin"
"""The super user whose client settings are /opt/kafka/config/admin.properties."""
COMMAND_TIMEOUT_S = 120.0
BROKER_START_TIMEOUT_S = 180.0


def run(command: list[str], timeout: float, what: str) -> str:
    """Run ``command``; fail the test with its output when it exits non-zero."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise AssertionError(
            f"{what} exited {result.returncode}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return result.stdout


def systemd_image() -> str:
    """The image's name (build-systemd-image.sh prints it last; built only when missing)."""
    return run(["bash", str(BUILD_IMAGE_SCRIPT)], 1200, "build-systemd-image.sh").split()[-1]


def kafka_tools_jar_dir() -> Path:
    """A directory holding only the kafka-tools jar of deploy/local's Kafka version."""
    version = kafka_version()
    return fetch_dependencies(
        TOOLS_POM,
        cache_root(CACHE_ENV) / f"kafka-{version}" / "tools",
        properties=[("kafka.version", version)],
        include_artifacts=["kafka-tools"],
        expected_globs=["kafka-tools-*.jar"],
    )


@dataclass(frozen=True)
class KafkaHostFiles:
    """The host-side directory mounted at SETUP_DIR, and what it holds."""

    directory: Path
    pki: ClusterPki
    client_port: int
    metrics_port: int

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.client_port}"


def write_kafka_host_files(directory: Path) -> KafkaHostFiles:
    """server.properties, certificates, launcher scripts and kafka.service of the user's host."""
    client, internal, controller, metrics = free_loopback_ports(4)
    pki = ClusterPki.create_or_open(directory / "pki", broker_count=1)
    config = directory / "config"
    tls = config / "tls"
    bin_dir = directory / "bin"
    for folder in (config, tls, bin_dir):
        folder.mkdir(parents=True, exist_ok=True)
    broker = pki.identity(broker_identity(0))
    (tls / "ca.pem").write_bytes(pki.ca_cert.read_bytes())
    (tls / "broker.pem").write_bytes(broker.keystore.read_bytes())
    (tls / "admin.pem").write_bytes(pki.identity(ADMIN).keystore.read_bytes())
    properties = server_properties(
        node_id=0,
        all_ports=[BrokerPorts(client=client, internal=internal, controller=controller)],
        files=BrokerFiles(home=Path("/var/lib/kafka"), data_dirs=(Path("/var/lib/kafka/data"),)),
        keystore=Path("/opt/kafka/config/tls/broker.pem"),
        truststore=Path("/opt/kafka/config/tls/ca.pem"),
        extra={},
    )
    write_properties(config / "server.properties", properties)
    (config / "admin.properties").write_text(
        "security.protocol=SSL\n"
        "ssl.keystore.type=PEM\n"
        "ssl.keystore.location=/opt/kafka/config/tls/admin.pem\n"
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/opt/kafka/config/tls/ca.pem\n"
    )
    (config / "log4j2.xml").write_text(_log4j2("INFO", "SYSTEM_OUT"))
    (config / "tools-log4j2.xml").write_text(_log4j2("WARN", "SYSTEM_ERR"))
    for name, text in _LAUNCHERS.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (directory / "kafka.service").write_text(_KAFKA_UNIT)
    (directory / "install-kafka.sh").write_text(
        _INSTALL_KAFKA.replace("@CLUSTER_ID@", new_cluster_id())
    )
    return KafkaHostFiles(directory, pki, client, metrics)


class KafkaHost:
    """The running container; removed by :meth:`remove` (the fixture's teardown)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def start(self, image: str, files: KafkaHostFiles, checkout: Path, mount_at: str) -> None:
        libs = ensure_kafka_jars()
        mounts = {
            libs: "/opt/kafka/libs",
            kafka_tools_jar_dir(): "/opt/kafka/tools-libs",
            files.directory: SETUP_DIR,
            checkout: mount_at,
        }
        volumes = [f"--volume={source}:{target}:ro" for source, target in mounts.items()]
        command = [*PODMAN, "run", "--detach", "--name", self.name, "--systemd=always"]
        command += ["--privileged", *RUN_FLAGS, "--hostname", "kafka-host", *volumes, image]
        run(command, COMMAND_TIMEOUT_S, "podman run")
        self._wait_for_systemd()
        self.shell(f"bash {SETUP_DIR}/install-kafka.sh", timeout=BROKER_START_TIMEOUT_S)

    def _wait_for_systemd(self) -> None:
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        state = ""
        while time.monotonic() < deadline:
            result = subprocess.run(
                [*PODMAN, "exec", self.name, "systemctl", "is-system-running"],
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
            state = result.stdout.strip()
            if state in ("running", "degraded"):
                return
            time.sleep(0.5)
        raise AssertionError(f"systemd in the container did not finish booting: {state!r}")

    def shell(self, script: str, *, workdir: str = "/", timeout: float = COMMAND_TIMEOUT_S) -> str:
        """Run ``script`` with bash (errexit, pipefail) as root in the container."""
        command = [*PODMAN, "exec", "--workdir", workdir, self.name]
        return run(
            [*command, "bash", "-euo", "pipefail", "-c", script],
            timeout,
            f"in the container: {script[:200]!r}",
        )

    def journal(self, unit: str) -> str:
        return self.shell(f"journalctl --no-pager -o cat -u {unit}")

    def remove(self) -> None:
        subprocess.run(
            [*PODMAN, "rm", "--force", "--time", "10", self.name],
            capture_output=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )


def _log4j2(level: str, target: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="console" target="{target}">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Root level="{level}">
      <AppenderRef ref="console"/>
    </Root>
  </Loggers>
</Configuration>
"""


_RUN_CLASS = """#!/bin/sh
# Kafka's launcher, reduced: $CLASSPATH first, then the distribution's jars, as the real
# kafka-run-class.sh orders them; tools log warnings to stderr unless KAFKA_LOG4J_OPTS says.
home=/opt/kafka
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \\
    ${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$home/config/tools-log4j2.xml} \\
    -cp "${CLASSPATH:+$CLASSPATH:}$home/libs/*:$home/tools-libs/*" "$@"
"""


def _tool(main_class: str) -> str:
    return f'#!/bin/sh\nexec /opt/kafka/bin/kafka-run-class.sh {main_class} "$@"\n'


_LAUNCHERS = {
    "kafka-run-class.sh": _RUN_CLASS,
    "kafka-server-start.sh": (
        "#!/bin/sh\n"
        'export KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx512m -Xms64m}"\n'
        'export KAFKA_LOG4J_OPTS="-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.xml"\n'
        'exec /opt/kafka/bin/kafka-run-class.sh kafka.Kafka "$@"\n'
    ),
    "kafka-storage.sh": _tool("kafka.tools.StorageTool"),
    "kafka-topics.sh": _tool("org.apache.kafka.tools.TopicCommand"),
    "kafka-acls.sh": _tool("org.apache.kafka.tools.AclCommand"),
}

_KAFKA_UNIT = """[Unit]
Description=Apache Kafka broker (KRaft, combined broker and controller)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=kafka
Group=kafka
ExecStart=/opt/kafka/bin/kafka-server-start.sh /opt/kafka/config/server.properties
Restart=on-failure
TimeoutStopSec=60
SuccessExitStatus=143

[Install]
WantedBy=multi-user.target
"""

_INSTALL_KAFKA = f"""set -euo pipefail
src={SETUP_DIR}
useradd --system --user-group --home-dir /var/lib/kafka --no-create-home \\
    --shell /usr/sbin/nologin kafka
install -d -o kafka -g kafka -m 0750 /var/lib/kafka /var/lib/kafka/data /var/lib/kafka/metadata
install -d -m 0755 /opt/kafka/bin /opt/kafka/config
install -m 0755 "$src"/bin/* /opt/kafka/bin/
install -m 0640 -g kafka "$src"/config/server.properties /opt/kafka/config/
install -m 0644 "$src"/config/log4j2.xml "$src"/config/tools-log4j2.xml /opt/kafka/config/
install -m 0600 "$src"/config/admin.properties /opt/kafka/config/
install -d -m 0750 -g kafka /opt/kafka/config/tls
install -m 0640 -g kafka "$src"/config/tls/ca.pem "$src"/config/tls/broker.pem \\
    /opt/kafka/config/tls/
install -m 0600 "$src"/config/tls/admin.pem /opt/kafka/config/tls/
install -m 0644 "$src"/kafka.service /etc/systemd/system/kafka.service
runuser -u kafka -- /opt/kafka/bin/kafka-storage.sh format -t @CLUSTER_ID@ \\
    -c /opt/kafka/config/server.properties
systemctl daemon-reload
systemctl enable --now kafka.service
"""
