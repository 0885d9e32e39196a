"""A real Kafka 4 KRaft cluster on loopback, started from Maven jars, secured with mTLS + ACLs.

Why not a container or a mock: the volume-quota components (publisher, consumer, the broker
quota-callback plugin, the Spark job) must be tested against the real broker, with the same
security model as production: SSL listeners that require client certificates, CN-based
principals, and the StandardAuthorizer denying everything not granted.
"""

from __future__ import annotations

import atexit
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from local_cluster.broker_config import (
    LOOPBACK,
    BrokerFiles,
    BrokerPorts,
    check_node_layout,
    node_files,
    server_properties,
    write_log4j_config,
    write_properties,
)
from local_cluster.errors import LocalClusterError
from local_cluster.jars import ensure_kafka_jars
from local_cluster.jvm import (
    JvmSettings,
    check_launch_settings,
    format_storage,
    launch_broker,
    new_cluster_id,
    tail,
    terminate,
    wait_or_kill,
)
from local_cluster.pki import ClusterPki, IdentityFiles, broker_identity
from local_cluster.ports import allocate_broker_ports
from local_cluster.probe import broker_serves
from local_cluster.tiered_storage import with_tiered_storage

ClientConfig = dict[str, str | int | float | bool]
"""A librdkafka (confluent-kafka) configuration; the type AdminClient's stubs accept."""

DEFAULT_HEAP = "384m"
DEFAULT_START_TIMEOUT_S = 120.0
DEFAULT_STOP_TIMEOUT_S = 30.0
_PROBE_TIMEOUT_S = 3.0
_PROBE_INTERVAL_S = 0.5
_QUORUMLESS_GRACE_S = 3.0

# Strong references on purpose: a running cluster nobody references any more must still be
# stopped at exit rather than garbage-collected with its JVMs left running.
_running_clusters: set[LocalKafkaCluster] = set()
_running_lock = threading.Lock()


class LocalKafkaCluster:
    """N combined broker+controller nodes on 127.0.0.1, each a ``java kafka.Kafka`` process.

    Everything lives under ``base_dir``: ``pki/`` (certificates, see :mod:`local_cluster.pki`),
    ``cluster-id`` and ``broker-<i>/`` (server.properties, logs, metadata log, and the data dirs
    unless ``log_dirs`` puts them elsewhere, e.g. on tmpfs mounts). Starting again on the same
    directory reuses certificates, cluster id and data. Ports are picked when :meth:`start`
    first runs and kept for the object's lifetime, so single nodes can restart in place.

    Brokers are stopped by :meth:`stop`, by leaving the ``with`` block, at interpreter exit,
    and (via ``setpriv --pdeathsig``) when the launching thread dies.
    """

    def __init__(
        self,
        base_dir: Path,
        broker_count: int = 1,
        *,
        log_dirs: Sequence[Sequence[Path]] | None = None,
        broker_properties: Mapping[str, str] | None = None,
        per_broker_properties: Sequence[Mapping[str, str]] | None = None,
        extra_classpath: Sequence[Path] = (),
        heap: str = DEFAULT_HEAP,
        extra_jvm_options: Sequence[str] = (),
        jars_dir: Path | None = None,
        java: str = "java",
        die_with_parent: bool = True,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
        ports: Sequence[BrokerPorts] | None = None,
        sasl_listener: bool = False,
        per_broker_environment: Sequence[Mapping[str, str]] | None = None,
        tiered_storage_dir: Path | None = None,
    ) -> None:
        """``log_dirs[i]`` lists broker i's data dirs (default ``broker-<i>/data``).

        ``broker_properties`` apply to every broker and ``per_broker_properties[i]`` to broker
        i only; both override the defaults (e.g. ``client.quota.callback.class``). Jars in
        ``extra_classpath`` (e.g. the quota plugin) are appended to the broker classpath.
        ``jars_dir`` skips :func:`ensure_kafka_jars` and uses that directory's jars.
        ``ports`` fixes every node's ports up front (default: free ports chosen at the first
        start), for properties that must name the cluster's own addresses (e.g. a broker plugin's
        client bootstrap). ``sasl_listener`` adds a SASL_SSL (SCRAM) client listener on every
        node, for users made with :func:`local_cluster.scram.add_scram_user` (off by default).
        ``per_broker_environment[i]`` adds variables to broker i's JVM environment (on top of
        this process's), e.g. ``LD_PRELOAD`` of libfaketime to run one broker with its wall
        clock off; by default every broker inherits this process's environment unchanged.
        ``tiered_storage_dir`` turns tiered storage on: Kafka's ``LocalTieredStorage`` keeps the
        remote segments there (:mod:`local_cluster.tiered_storage`).
        """
        check_node_layout(broker_count, log_dirs, per_broker_properties, ports, sasl_listener)
        if per_broker_environment is not None and len(per_broker_environment) != broker_count:
            raise LocalClusterError("per_broker_environment needs one mapping per broker")
        self.base_dir = base_dir.resolve()
        self.broker_count = broker_count
        self._files = node_files(self.base_dir, broker_count, log_dirs)
        self._shared_properties = dict(broker_properties or {})
        self._own_properties = [dict(p) for p in per_broker_properties or [{}] * broker_count]
        self._extra_classpath = tuple(Path(p).resolve() for p in extra_classpath)
        self._heap = heap
        self._extra_jvm_options = tuple(extra_jvm_options)
        self._jars_dir = jars_dir
        self._java = java
        self._die_with_parent = die_with_parent
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self._jvm: JvmSettings | None = None
        self._pki: ClusterPki | None = None
        self._ports: list[BrokerPorts] | None = list(ports) if ports is not None else None
        self.sasl_listener = sasl_listener
        self._environments = [dict(e) for e in per_broker_environment or [{}] * broker_count]
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self._tiered_dir = tiered_storage_dir

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Format storage (first time only) and start every node; return once all serve.

        Raises :class:`LocalClusterError` (with the tail of the broker log) if a node exits
        or does not answer an mTLS metadata request within ``start_timeout_s``; nodes already
        started are stopped again in that case.
        """
        if self._processes:
            raise LocalClusterError("cluster is already running; stop() it first")
        check_launch_settings(self._java, self._heap, self._extra_classpath)
        self._jvm = JvmSettings(
            java=self._java,
            jars_dir=self._jars_dir if self._jars_dir is not None else ensure_kafka_jars(),
            extra_classpath=self._extra_classpath,
            heap=self._heap,
            extra_options=self._extra_jvm_options,
            die_with_parent=self._die_with_parent,
        )
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self._pki = ClusterPki.create_or_open(self.base_dir / "pki", self.broker_count)
        if self._tiered_dir is not None:
            tiered = with_tiered_storage(self._own_properties, self._pki, self._tiered_dir)
            self._own_properties = tiered
        if self._ports is None:
            self._ports = allocate_broker_ports(self.broker_count, sasl=self.sasl_listener)
        for index in range(self.broker_count):
            self._write_node_config(index)
        format_storage(self._jvm, self._files, self._cluster_id())
        with _running_lock:
            _running_clusters.add(self)
        try:
            for index in range(self.broker_count):
                self._processes[index] = launch_broker(
                    self._jvm, self._files[index], self._environments[index]
                )
            self._wait_until_serving(range(self.broker_count))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every node: SIGTERM to all at once (clean shutdown), SIGKILL after the timeout.

        A broker's clean shutdown waits for the controller quorum to approve it. Once most
        nodes have exited, the quorum is gone and the remaining nodes would wait for it (up
        to 5 minutes) in vain, so they get a short grace period and are then killed; Kafka
        recovers their logs on the next start.
        """
        processes, self._processes = self._processes, {}
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
        majority = self.broker_count // 2 + 1
        deadline = time.monotonic() + self.stop_timeout_s
        quorum_lost_at: float | None = None
        while time.monotonic() < deadline:
            running = [p for p in processes.values() if p.poll() is None]
            if not running:
                break
            if len(running) < majority:
                quorum_lost_at = quorum_lost_at or time.monotonic()
                if time.monotonic() - quorum_lost_at > _QUORUMLESS_GRACE_S:
                    break
            time.sleep(0.1)
        for process in processes.values():
            wait_or_kill(process, 0.0)
        with _running_lock:
            _running_clusters.discard(self)

    def stop_broker(self, index: int) -> None:
        """Stop one node (SIGTERM, SIGKILL after ``stop_timeout_s``); no-op if not running."""
        self._check_index(index)
        process = self._processes.pop(index, None)
        if process is not None:
            terminate(process, self.stop_timeout_s)

    def start_broker(self, index: int) -> None:
        """Start one stopped node on its old ports and data; return once it serves."""
        self._check_index(index)
        if self._jvm is None:
            raise LocalClusterError("start() the cluster before starting single brokers")
        if index in self._processes and self._processes[index].poll() is None:
            raise LocalClusterError(f"broker {index} is already running")
        self._processes[index] = launch_broker(
            self._jvm, self._files[index], self._environments[index]
        )
        self._wait_until_serving([index])

    def restart_broker(self, index: int) -> None:
        """Stop and start one node, e.g. to test that clients ride out a broker restart."""
        self.stop_broker(index)
        self.start_broker(index)

    def is_running(self, index: int) -> bool:
        """Whether node ``index``'s JVM process is alive (not whether it serves)."""
        process = self._processes.get(index)
        return process is not None and process.poll() is None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # ----------------------------------------------------------------- addresses & identities

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated client (SSL) listener addresses of all nodes."""
        return ",".join(f"{LOOPBACK}:{p.client}" for p in self._started_ports())

    @property
    def sasl_bootstrap_servers(self) -> str:
        """Comma-separated SASL_SSL (SCRAM) listener addresses; needs ``sasl_listener=True``."""
        if not self.sasl_listener:
            raise LocalClusterError("this cluster has no SASL listener: pass sasl_listener=True")
        return ",".join(f"{LOOPBACK}:{p.sasl}" for p in self._started_ports())

    def broker_ports(self, index: int) -> BrokerPorts:
        """Client, inter-broker and controller ports of node ``index``."""
        self._check_index(index)
        return self._started_ports()[index]

    @property
    def pki(self) -> ClusterPki:
        """The cluster's certificates; use ``pki.issue(...)`` to rotate one."""
        if self._pki is None:
            raise LocalClusterError("the cluster has no certificates before start()")
        return self._pki

    def identity_files(self, identity: str) -> IdentityFiles:
        """PEM file paths of a client or broker identity (see :mod:`local_cluster.pki`)."""
        return self.pki.identity(identity)

    def client_config(self, identity: str | None, *, bootstrap: str | None = None) -> ClientConfig:
        """librdkafka config for mTLS as ``identity`` (certificate CN = principal name).

        ``identity=None`` gives a TLS client with no certificate, which the brokers must
        refuse. ``bootstrap`` overrides the address list (e.g. a single node's listener).
        """
        config: ClientConfig = {
            "bootstrap.servers": bootstrap if bootstrap is not None else self.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.pki.ca_cert),
            "ssl.endpoint.identification.algorithm": "https",
        }
        if identity is not None:
            files = self.pki.identity(identity)
            config["ssl.certificate.location"] = str(files.cert)
            config["ssl.key.location"] = str(files.key)
        return config

    def java_client_config(self, identity: str) -> dict[str, str]:
        """Java Kafka client config for mTLS as ``identity`` (e.g. Spark's ``kafka.*`` options):
        Java clients read the same PEM files through a PEM keystore and truststore."""
        files = self.pki.identity(identity)
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(files.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(files.ca),
        }

    def broker_log(self, index: int) -> Path:
        """Path of node ``index``'s broker log (``broker-<i>/logs/server.log``)."""
        self._check_index(index)
        return self._files[index].server_log

    def broker_files(self, index: int) -> BrokerFiles:
        """Config, log and data paths of node ``index``."""
        self._check_index(index)
        return self._files[index]

    # ----------------------------------------------------------------- internals

    def _cluster_id(self) -> str:
        path = self.base_dir / "cluster-id"
        if path.exists():
            return path.read_text().strip()
        cluster_id = new_cluster_id()
        path.write_text(cluster_id + "\n")
        return cluster_id

    def _write_node_config(self, index: int) -> None:
        files = self._files[index]
        files.home.mkdir(parents=True, exist_ok=True)
        identity = self.pki.identity(broker_identity(index))
        properties = server_properties(
            node_id=index,
            all_ports=self._started_ports(),
            files=files,
            keystore=identity.keystore,
            truststore=identity.ca,
            extra={**self._shared_properties, **self._own_properties[index]},
        )
        write_properties(files.server_properties, properties)
        write_log4j_config(files)

    def _wait_until_serving(self, indexes: Sequence[int] | range) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        pending = list(indexes)
        while pending:
            for index in list(pending):
                process = self._processes[index]
                if process.poll() is not None:
                    raise LocalClusterError(
                        f"broker {index} exited with code {process.returncode} while starting"
                        + self._log_tails(index)
                    )
                probe_timeout = min(_PROBE_TIMEOUT_S, max(0.5, deadline - time.monotonic()))
                if broker_serves(self._probe_config(index), index, probe_timeout):
                    pending.remove(index)
            if not pending:
                return
            if time.monotonic() >= deadline:
                raise LocalClusterError(
                    f"broker(s) {pending} did not serve within {self.start_timeout_s:.0f}s"
                    + "".join(self._log_tails(i) for i in pending)
                )
            time.sleep(_PROBE_INTERVAL_S)

    def _probe_config(self, index: int) -> ClientConfig:
        address = f"{LOOPBACK}:{self._started_ports()[index].client}"
        return self.client_config("admin", bootstrap=address)

    def _log_tails(self, index: int) -> str:
        files = self._files[index]
        parts = [f"\n--- last lines of {files.server_log}:\n{tail(files.server_log)}"]
        console = tail(files.console_log, lines=20)
        if console:
            parts.append(f"\n--- last lines of {files.console_log}:\n{console}")
        return "".join(parts)

    def _started_ports(self) -> list[BrokerPorts]:
        if self._ports is None:
            raise LocalClusterError("the cluster has no ports before start()")
        return self._ports

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.broker_count:
            raise LocalClusterError(
                f"no broker {index}: this cluster has brokers 0..{self.broker_count - 1}"
            )


@atexit.register
def _stop_clusters_left_running() -> None:
    """Last line of defence against stray JVMs: stop clusters nobody stopped."""
    with _running_lock:
        leftovers = list(_running_clusters)
    for cluster in leftovers:
        cluster.stop_timeout_s = min(cluster.stop_timeout_s, 10.0)
        cluster.stop()
