"""Render each node's ``server.properties`` and log4j2 configuration.

Every node is a combined broker+controller (``process.roles=broker,controller``) with a static
controller quorum, so a 3-node cluster keeps its quorum while one node restarts. All three
listeners are SSL with required client certificates: there is no port where a client without
a certificate from the cluster CA can even complete a handshake, so no listener can grant an
anonymous principal anything.

Optionally (a ``sasl`` port in :class:`BrokerPorts`) a fourth listener, ``SASL_CLIENT``, speaks
SASL_SSL with SCRAM-SHA-512 or SCRAM-SHA-256: TLS without a client certificate, the principal
is the SCRAM user name (``User:<name>``), and only users created with
:func:`local_cluster.scram.add_scram_user` can authenticate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

from local_cluster.errors import LocalClusterError
from local_cluster.pki import broker_identity

CLIENT_LISTENER = "CLIENT"
INTERNAL_LISTENER = "INTERNAL"
CONTROLLER_LISTENER = "CONTROLLER"
SASL_LISTENER = "SASL_CLIENT"
SCRAM_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
LOOPBACK = "127.0.0.1"
ADMIN_PRINCIPAL = "User:admin"

# The certificate subject is "CN=<name>,O=..." (RFC 2253 order); the principal is the CN only.
# Anything else (a subject without a leading CN) keeps its full DN, which matches no ACL.
PRINCIPAL_MAPPING_RULES = "RULE:^CN=([^,]+)(,.*)?$/$1/,DEFAULT"
AUTHORIZER_CLASS = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True)
class BrokerPorts:
    """Loopback ports of one node: clients, replication between brokers, and the KRaft quorum;
    ``sasl``, when set, is the port of the optional SASL_SSL (SCRAM) client listener."""

    client: int
    internal: int
    controller: int
    sasl: int | None = None


@dataclass(frozen=True)
class BrokerFiles:
    """Where one node keeps its configuration, logs and data."""

    home: Path
    data_dirs: tuple[Path, ...]

    @property
    def server_properties(self) -> Path:
        return self.home / "server.properties"

    @property
    def log4j_config(self) -> Path:
        return self.home / "log4j2.xml"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def server_log(self) -> Path:
        """The broker's own log (log4j2 file appender)."""
        return self.logs_dir / "server.log"

    @property
    def console_log(self) -> Path:
        """JVM stdout/stderr: where a crash before logging starts (bad classpath, OOM) shows."""
        return self.home / "console.log"

    @property
    def metadata_dir(self) -> Path:
        """KRaft metadata log, kept off the data dirs so that filling a data volume (which
        the volume-quota tests do on purpose) cannot take the controller quorum down."""
        return self.home / "metadata"


def server_properties(
    *,
    node_id: int,
    all_ports: Sequence[BrokerPorts],
    files: BrokerFiles,
    keystore: Path,
    truststore: Path,
    extra: Mapping[str, str],
) -> dict[str, str]:
    """All properties of node ``node_id``; ``extra`` overrides any default."""
    ports = all_ports[node_id]
    node_count = len(all_ports)
    replication = str(min(3, node_count))
    min_isr = str(min(2, node_count))
    voters = ",".join(f"{i}@{LOOPBACK}:{p.controller}" for i, p in enumerate(all_ports))
    super_users = [f"User:{broker_identity(i)}" for i in range(node_count)] + [ADMIN_PRINCIPAL]
    properties = {
        "node.id": str(node_id),
        "process.roles": "broker,controller",
        "controller.quorum.voters": voters,
        "controller.listener.names": CONTROLLER_LISTENER,
        "inter.broker.listener.name": INTERNAL_LISTENER,
        **_listener_properties(ports),
        # TLS on every listener, client certificate required on every SSL listener.
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(truststore),
        "ssl.client.auth": "required",
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.principal.mapping.rules": PRINCIPAL_MAPPING_RULES,
        "authorizer.class.name": AUTHORIZER_CLASS,
        "allow.everyone.if.no.acl.found": "false",
        "super.users": ";".join(super_users),
        # Production-like: topics are created explicitly (the publisher needs CREATE).
        "auto.create.topics.enable": "false",
        "log.dirs": ",".join(str(d) for d in files.data_dirs),
        "metadata.log.dir": str(files.metadata_dir),
        "default.replication.factor": replication,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": replication,
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": replication,
        "share.coordinator.state.topic.min.isr": min_isr,
        # Small internal topics and few threads: the test machine has 2 shared cores.
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.replica.fetchers": "1",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.threads": "1",
        "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
    }
    properties.update(extra)
    return properties


def _listener_properties(ports: BrokerPorts) -> dict[str, str]:
    """The listeners of one node: CLIENT, INTERNAL and CONTROLLER (SSL, client certificate
    required), and SASL_CLIENT (SASL_SSL) when ``ports.sasl`` is set."""
    listeners = [
        (CLIENT_LISTENER, ports.client, "SSL"),
        (INTERNAL_LISTENER, ports.internal, "SSL"),
        (CONTROLLER_LISTENER, ports.controller, "SSL"),
    ]
    if ports.sasl is not None:
        listeners.append((SASL_LISTENER, ports.sasl, "SASL_SSL"))
    addresses = {name: f"{name}://{LOOPBACK}:{port}" for name, port, _ in listeners}
    properties = {
        "listeners": ",".join(addresses.values()),
        "advertised.listeners": ",".join(
            address for name, address in addresses.items() if name != CONTROLLER_LISTENER
        ),
        "listener.security.protocol.map": ",".join(
            f"{name}:{protocol}" for name, _, protocol in listeners
        ),
    }
    if ports.sasl is not None:
        prefix = f"listener.name.{SASL_LISTENER.lower()}."
        properties[prefix + "sasl.enabled.mechanisms"] = ",".join(SCRAM_MECHANISMS)
        # ssl.client.auth reaches a SASL_SSL listener only with the listener prefix (KIP-684);
        # said explicitly: the SCRAM password is the one credential on this listener.
        properties[prefix + "ssl.client.auth"] = "none"
        for mechanism in SCRAM_MECHANISMS:
            properties[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = SCRAM_LOGIN_MODULE
    return properties


def node_files(
    base_dir: Path, broker_count: int, log_dirs: Sequence[Sequence[Path]] | None
) -> list[BrokerFiles]:
    """Each node's home ``broker-<i>`` and its data dirs (``log_dirs[i]``, default
    ``broker-<i>/data``)."""
    return [
        BrokerFiles(
            home=base_dir / f"broker-{i}",
            data_dirs=tuple(
                Path(d).resolve()
                for d in (log_dirs[i] if log_dirs else [base_dir / f"broker-{i}" / "data"])
            ),
        )
        for i in range(broker_count)
    ]


def check_node_layout(
    broker_count: int,
    log_dirs: Sequence[Sequence[Path]] | None,
    per_broker_properties: Sequence[Mapping[str, str]] | None,
    ports: Sequence[BrokerPorts] | None,
    sasl_listener: bool = False,
) -> None:
    """Raise :class:`LocalClusterError` for per-node arguments that do not fit ``broker_count``
    (or fixed ``ports`` without the SASL port a ``sasl_listener`` needs)."""
    if broker_count < 1:
        raise LocalClusterError(f"broker_count must be at least 1, got {broker_count}")
    if log_dirs is not None and len(log_dirs) != broker_count:
        raise LocalClusterError(
            f"log_dirs has {len(log_dirs)} entries but there are {broker_count} brokers"
        )
    if log_dirs is not None and any(len(dirs) == 0 for dirs in log_dirs):
        raise LocalClusterError("every broker needs at least one log dir")
    if per_broker_properties is not None and len(per_broker_properties) != broker_count:
        raise LocalClusterError("per_broker_properties needs one mapping per broker")
    if ports is not None and len(ports) != broker_count:
        raise LocalClusterError("ports needs one BrokerPorts per broker")
    if sasl_listener and ports is not None and any(p.sasl is None for p in ports):
        raise LocalClusterError("sasl_listener needs a sasl port in every BrokerPorts")


def write_properties(path: Path, properties: Mapping[str, str]) -> None:
    """Write a Java ``.properties`` file (escaping backslashes and line breaks)."""
    lines = ["# Generated by local_cluster; rewritten on every start."]
    lines += [f"{_escape(key)}={_escape(value)}" for key, value in properties.items()]
    path.write_text("\n".join(lines) + "\n")


def write_log4j_config(files: BrokerFiles) -> None:
    """Send every broker log line to ``logs/server.log`` (no console noise, no rotation)."""
    files.logs_dir.mkdir(parents=True, exist_ok=True)
    files.log4j_config.write_text(
        f"""<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN" shutdownHook="disable">
  <Appenders>
    <File name="server" fileName={quoteattr(str(files.server_log))}>
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="org.apache.kafka.controller" level="INFO"/>
    <Root level="INFO">
      <AppenderRef ref="server"/>
    </Root>
  </Loggers>
</Configuration>
"""
    )


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
