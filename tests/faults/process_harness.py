"""Process, network and topic faults on a real 3-broker cluster (issue 14's fault matrix).

Builds on the end-to-end harness (tests/e2e/cluster_harness.py): real Kafka with the quota
callback, one `volume-quota sidecar` per broker, each broker's log dir on its own tmpfs. Adds
what faults need:

- every broker JVM and every sidecar runs in a cgroup (v2) of its own, so that a packet filter
  rule can cut one process off (``iptables -m cgroup``) without touching any other cluster on
  the machine;
- ``PacketFilter``: DROP rules in a chain of this test run's own, removed at the end;
- ``DecisionWatch``: samples every decision file ten times a second, so a test can measure how
  long a fail-safe lasted and prove that no reader ever saw a torn file;
- ``Figures`` (from ``data_harness``): the measured figures, printed and written to
  ``VOLUME_QUOTA_FAULT_FIGURES``.

Needs root (tmpfs, cgroups, iptables).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AdminClient,
)

from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, broker_pid, grant_sidecar_acls
from local_cluster.acls import exact_filter
from local_cluster.processes import die_with_parent
from schemas.decision import QuotaDecision, QuotaState, ReasonKind
from tests.e2e.cluster_harness import (
    HARD_FREE,
    STALE_AFTER_S,
    CallbackLog,
    Sidecar,
    callback_properties,
    read_decision,
    require_plugin_jar,
    sidecar_environment,
    wait_for,
)
from tests.faults.data_harness import Figures
from tests.real_broker.kafka_helpers import quiet
from tests.real_fs.real_mounts import Mounts, fill, statvfs_sizes

BROKERS = 3
VOLUME_SIZE = "256m"
RUN_TAG = f"vqf{os.getpid()}"
"""Names this run's cgroups and iptables chain, so that parallel runs do not collide."""


# ------------------------------------------------------------------ cgroups


def cgroup2_root() -> Path:
    """Where the unified (v2) cgroup hierarchy is mounted; iptables' cgroup match reads it."""
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            return Path(fields[1])
    raise AssertionError("no cgroup2 hierarchy is mounted: the network faults need one")


@dataclass
class Cgroups:
    """cgroups ``<root>/<RUN_TAG>-<name>``, removed on ``close`` once their processes left."""

    root: Path = field(default_factory=cgroup2_root)

    def path(self, name: str) -> Path:
        return self.root / f"{RUN_TAG}-{name}"

    def relative(self, name: str) -> str:
        """The path iptables' ``--path`` wants: relative to the hierarchy's root."""
        return f"{RUN_TAG}-{name}"

    def create(self, name: str) -> Path:
        path = self.path(name)
        path.mkdir(exist_ok=True)
        return path

    def close(self) -> None:
        for path in self.root.glob(f"{RUN_TAG}-*"):
            deadline = time.monotonic() + 10
            while True:
                try:
                    path.rmdir()
                    break
                except OSError:  # a process that is still exiting keeps it busy
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)


def java_in_cgroups(directory: Path, cgroups: Cgroups) -> Path:
    """A ``java`` that puts each broker JVM in the cgroup ``broker-<i>`` before it starts.

    LocalKafkaCluster launches ``java ... kafka.Kafka <home>/broker-<i>/server.properties``
    through its ``java`` parameter; the storage tool (``format``) passes through unchanged.
    """
    java = shutil.which("java")
    if java is None:
        raise AssertionError("java is not on PATH")
    for index in range(BROKERS):
        cgroups.create(f"broker-{index}")
    script = directory / "java-in-cgroup"
    script.write_text(
        "#!/bin/sh\n"
        'for last in "$@"; do :; done\n'
        'case "$last" in\n'
        "  */server.properties)\n"
        '    node=$(basename "$(dirname "$last")")\n'
        f'    echo $$ > "{cgroups.root}/{RUN_TAG}-$node/cgroup.procs" || exit 97\n'
        "    ;;\n"
        "esac\n"
        f'exec "{java}" "$@"\n'
    )
    script.chmod(0o755)
    return script


# ------------------------------------------------------------------ packet filter


class PacketFilter:
    """DROP rules on the loopback interface, in a chain of this run's own.

    DROP, not REJECT: a partition is silence, not a refused connection. Rules match ports that
    belong to this run's cluster or processes in this run's cgroups, so other clusters on the
    machine are not touched.
    """

    def __init__(self, cgroups: Cgroups) -> None:
        self._cgroups = cgroups
        self.chain = RUN_TAG.upper()
        self._iptables("-N", self.chain)
        self._iptables("-I", "OUTPUT", "1", "-j", self.chain)

    @staticmethod
    def _iptables(*arguments: str) -> None:
        result = subprocess.run(
            ["iptables", "-w", "10", *arguments],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(f"iptables {' '.join(arguments)}: {result.stderr.strip()}")

    def drop(self, *, dport: int | None = None, sport: int | None = None, cgroup: str = "") -> None:
        """Drop TCP packets on lo to ``dport`` / from ``sport``, sent by ``cgroup`` if given."""
        rule = ["-A", self.chain, "-o", "lo", "-p", "tcp"]
        if dport is not None:
            rule += ["--dport", str(dport)]
        if sport is not None:
            rule += ["--sport", str(sport)]
        if cgroup:
            rule += ["-m", "cgroup", "--path", self._cgroups.relative(cgroup)]
        self._iptables(*rule, "-j", "DROP")

    def heal(self) -> None:
        self._iptables("-F", self.chain)

    def close(self) -> None:
        self._iptables("-D", "OUTPUT", "-j", self.chain)
        self._iptables("-F", self.chain)
        self._iptables("-X", self.chain)


def cut_broker_off_from_its_peers(
    packets: PacketFilter, kafka: LocalKafkaCluster, victim: int
) -> None:
    """Replication and the KRaft quorum between ``victim`` and the other nodes stop both ways;
    clients (sidecars, producers) still reach every broker's client listener."""
    own = kafka.broker_ports(victim)
    for port in (own.internal, own.controller):
        packets.drop(dport=port)  # the peers' requests to the victim
        packets.drop(sport=port)  # the victim's answers on connections the peers opened
    for peer in range(BROKERS):
        if peer != victim:
            ports = kafka.broker_ports(peer)
            for port in (ports.internal, ports.controller):
                packets.drop(dport=port, cgroup=f"broker-{victim}")  # the victim's requests


def cut_process_off_from_kafka(packets: PacketFilter, kafka: LocalKafkaCluster, name: str) -> None:
    """Every packet the processes of cgroup ``name`` send to any broker's client listener."""
    for index in range(BROKERS):
        packets.drop(dport=kafka.broker_ports(index).client, cgroup=name)


# ------------------------------------------------------------------ processes


@dataclass
class FaultSidecar(Sidecar):
    """A sidecar that starts inside its own cgroup and can be killed or frozen."""

    cgroup: Path | None = None

    def start(self) -> None:
        self.stop()
        assert self.cgroup is not None
        command = die_with_parent([sys.executable, "-m", "volume_quota", self.command])
        procs = self.cgroup / "cgroup.procs"
        with self.log_file.open("ab") as log:
            # The shell joins the cgroup, then becomes the sidecar (same pid): every socket the
            # sidecar ever opens belongs to the cgroup.
            self.process = subprocess.Popen(
                ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs), *command],
                env=self.environment,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def kill(self) -> None:
        """SIGKILL: no flush, no clean shutdown."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)
        self.process = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def signal_broker(kafka: LocalKafkaCluster, index: int, signum: signal.Signals) -> int:
    pid = broker_pid(kafka, index)
    assert pid is not None, f"broker {index} is not running"
    os.kill(pid, signum)
    return pid


def kill_broker(kafka: LocalKafkaCluster, index: int) -> None:
    """SIGKILL broker ``index``'s JVM and wait until it is gone."""
    pid = signal_broker(kafka, index, signal.SIGKILL)
    wait_for(f"broker {index} (pid {pid}) to die", lambda: not kafka.is_running(index), 30)


def snapshot_leader(kafka: LocalKafkaCluster, timeout_s: float = 60) -> int:
    """The broker that leads the snapshot topic's partition 0."""
    admin = AdminClient(quiet(kafka.client_config("admin")))
    found: list[int] = []

    def leader_known() -> bool:
        metadata = admin.list_topics(SNAPSHOT_TOPIC, timeout=5)
        partitions = metadata.topics[SNAPSHOT_TOPIC].partitions
        leader = partitions[0].leader if 0 in partitions else -1
        if leader >= 0:
            found.append(int(leader))
        return leader >= 0

    wait_for("the snapshot topic's leader", leader_known, timeout_s, interval_s=0.5)
    return found[-1]


def revoke_acls(kafka: LocalKafkaCluster, bindings: Sequence[AclBinding]) -> None:
    """Delete exactly these bindings, as admin, and wait for the brokers to confirm."""
    admin = AdminClient(quiet(kafka.client_config("admin")))
    filters = [exact_filter(binding) for binding in bindings]
    for future in admin.delete_acls(filters, request_timeout=30).values():
        deleted = future.result(timeout=30)
        assert deleted, "an ACL binding to revoke was not there"


# ------------------------------------------------------------------ observing decisions


@dataclass(frozen=True)
class Sample:
    at: float
    decision: QuotaDecision | None
    """None: the file was missing or could not be parsed (a torn write would show here)."""


class DecisionWatch:
    """Reads every decision file every ``interval_s`` in a thread of its own."""

    def __init__(self, files: Sequence[Path], interval_s: float = 0.1) -> None:
        self.files = list(files)
        self.samples: list[list[Sample]] = [[] for _ in self.files]
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="decision-watch", daemon=True)

    def start(self) -> DecisionWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            now = time.monotonic()
            for index, path in enumerate(self.files):
                self.samples[index].append(Sample(now, read_decision(path)))

    def since(self, index: int, start: float) -> list[Sample]:
        return [sample for sample in list(self.samples[index]) if sample.at >= start]

    def unreadable(self, index: int, start: float) -> int:
        return sum(sample.decision is None for sample in self.since(index, start))

    def first(
        self, index: int, start: float, condition: Callable[[QuotaDecision], bool]
    ) -> float | None:
        """Seconds from ``start`` to the first sample meeting ``condition``."""
        for sample in self.since(index, start):
            if sample.decision is not None and condition(sample.decision):
                return sample.at - start
        return None

    def seconds_in(self, index: int, start: float, end: float, state: QuotaState) -> float:
        """How long, between ``start`` and ``end``, file ``index`` said ``state``."""
        total = 0.0
        samples = [s for s in self.since(index, start) if s.at <= end]
        for sample, following in itertools.pairwise(samples):
            if sample.decision is not None and sample.decision.state is state:
                total += following.at - sample.at
        return total

    def states(self, index: int, start: float) -> list[str]:
        """The distinct states in order (``PAUSE(missing)`` for a fail-safe), for messages."""
        seen: list[str] = []
        for sample in self.since(index, start):
            label = describe(sample.decision)
            if not seen or seen[-1] != label:
                seen.append(label)
        return seen


def describe(decision: QuotaDecision | None) -> str:
    if decision is None:
        return "unreadable"
    kinds = sorted({reason.kind.value for reason in decision.reasons})
    return f"{decision.state.value}({','.join(kinds)})" if kinds else decision.state.value


def is_fail_safe(decision: QuotaDecision) -> bool:
    """PAUSE because data is missing (unknown brokers or not ready), not because of a limit."""
    return decision.state is QuotaState.PAUSE and decision.caused_by_missing_data


def limit_reasons(decision: QuotaDecision, broker: int) -> list[bool | None]:
    """``brokerLive`` of each limit reason that names ``broker``."""
    return [
        reason.broker_live
        for reason in decision.reasons
        if reason.kind is ReasonKind.LIMIT and reason.broker_id == broker
    ]


def in_force(decision: QuotaDecision | None, state: QuotaState) -> bool:
    """``decision`` says ``state`` and its validUntil has not passed: what the broker's callback
    applies. A decider that is stuck leaves an old decision in its file, which expires."""
    if decision is None or decision.state is not state:
        return False
    return decision.valid_until > datetime.now(UTC)


# ------------------------------------------------------------------ the cluster


@dataclass
class FaultCluster:
    kafka: LocalKafkaCluster
    base: Path
    volumes: list[Path]
    sidecars: list[FaultSidecar]
    cgroups: Cgroups
    packets: PacketFilter
    watch: DecisionWatch
    callback_logs: list[CallbackLog]
    figures: Figures = field(default_factory=Figures)

    @property
    def decision_files(self) -> list[Path]:
        return [sidecar.decision_file for sidecar in self.sidecars]

    def decisions(self) -> list[QuotaDecision | None]:
        return [read_decision(path) for path in self.decision_files]

    def all_in(self, state: QuotaState, indexes: Sequence[int] = range(BROKERS)) -> bool:
        decisions = self.decisions()
        return all(
            (decision := decisions[index]) is not None and decision.state is state
            for index in indexes
        )

    def wait_all_open(self, what: str, timeout_s: float = 90) -> float:
        """Seconds until every decision file says OPEN, in force, with nobody unknown."""

        def open_everywhere() -> bool:
            return all(
                in_force(decision, QuotaState.OPEN)
                and decision is not None
                and decision.unknown_brokers == []
                for decision in self.decisions()
            )

        try:
            return wait_for(what, open_everywhere, timeout_s)
        except AssertionError as error:
            raise AssertionError(f"{error}; decisions: {self.summary()}") from None

    def summary(self) -> str:
        return "; ".join(
            f"broker {index}: {describe(decision)}"
            for index, decision in enumerate(self.decisions())
        )

    def restore_health(self) -> FaultCluster:
        """Heal the network, restart any stopped sidecar, and wait for every broker OPEN: each
        test starts from a healthy cluster whatever the previous one left behind."""
        self.packets.heal()
        for sidecar in self.sidecars:
            if not sidecar.running:
                sidecar.start()
        self.wait_all_open("every broker OPEN before the fault", timeout_s=120)
        return self

    def all_fail_safe(self, unknown: Sequence[int] = range(BROKERS)) -> bool:
        """Every decision file holds the fail-safe PAUSE, naming ``unknown`` as unknown."""
        return all(
            decision is not None
            and is_fail_safe(decision)
            and decision.unknown_brokers == list(unknown)
            for decision in self.decisions()
        )

    def assert_only_open_or_fail_safe(self, indexes: Sequence[int], since: float) -> None:
        """No limit drove any decision since ``since``: with every volume far from its limits,
        anything but OPEN must be the fail-safe (missing data), never a throttle or a limit's
        pause, and every file must have been readable at every sample."""
        for index in indexes:
            for sample in self.watch.since(index, since):
                decision = sample.decision
                assert decision is not None, f"broker {index}'s decision file was unreadable"
                assert decision.state is QuotaState.OPEN or is_fail_safe(decision), (
                    f"broker {index}: {describe(decision)} {decision.reasons[:3]}"
                )

    def fill_to_free(self, index: int, free: int) -> None:
        """Leave about ``free`` bytes on broker ``index``'s volume (a filler file)."""
        filler = self.volumes[index] / "filler.bin"
        filler.unlink(missing_ok=True)
        _, now_free = statvfs_sizes(self.volumes[index])
        fill(self.volumes[index], "filler.bin", max(0, now_free - free))

    def free_space(self, index: int) -> None:
        (self.volumes[index] / "filler.bin").unlink(missing_ok=True)

    def mark_callback_logs(self) -> None:
        for log in self.callback_logs:
            log.mark()


TOPIC_RECHECK_S = 5.0
"""The sidecars' topic_recheck_interval."""


def sidecar_settings(
    kafka: LocalKafkaCluster, index: int, log_dir: Path, decision: Path
) -> dict[str, str]:
    return sidecar_environment(
        kafka,
        index,
        log_dir,
        decision,
        {
            # Give up on a snapshot before stale-after, so a retry can still arrive in time.
            "VOLUME_QUOTA_DELIVERY_TIMEOUT": "5s",
            # Check the topic again this often (30 s by default), so topic faults show in time.
            "VOLUME_QUOTA_TOPIC_RECHECK_INTERVAL": f"{TOPIC_RECHECK_S:g}s",
        },
    )


@contextmanager
def fault_cluster(base: Path) -> Iterator[FaultCluster]:
    """A 3-broker cluster with the callback, tmpfs volumes and one sidecar per broker, every
    process in a cgroup of its own; every sidecar OPEN before it is handed over."""
    jar = require_plugin_jar()
    decisions = base / "decisions"
    decisions.mkdir()
    decision_files = [decisions / f"broker-{index}.json" for index in range(BROKERS)]
    with ExitStack() as stack:
        cgroups = Cgroups()
        stack.callback(cgroups.close)
        java = java_in_cgroups(base, cgroups)
        mounts = stack.enter_context(Mounts())
        volumes = [mounts.tmpfs(base / f"volume-{i}", size=VOLUME_SIZE) for i in range(BROKERS)]
        log_dirs = [volume / "kafka-logs" for volume in volumes]
        kafka = LocalKafkaCluster(
            base / "kafka",
            broker_count=BROKERS,
            log_dirs=[[log_dir] for log_dir in log_dirs],
            per_broker_properties=[callback_properties(path) for path in decision_files],
            extra_classpath=[jar],
            java=str(java),
        )
        stack.enter_context(kafka)
        packets = PacketFilter(cgroups)
        stack.callback(packets.close)
        grant_sidecar_acls(kafka)
        sidecars = [
            FaultSidecar(
                index,
                decision_files[index],
                sidecar_settings(kafka, index, log_dirs[index], decision_files[index]),
                base / f"sidecar-{index}.log",
                cgroup=cgroups.create(f"sidecar-{index}"),
            )
            for index in range(BROKERS)
        ]
        for sidecar in sidecars:
            stack.callback(sidecar.stop)
            sidecar.start()
        watch = DecisionWatch(decision_files).start()
        stack.callback(watch.stop)
        cluster = FaultCluster(
            kafka,
            base,
            volumes,
            sidecars,
            cgroups,
            packets,
            watch,
            [CallbackLog(kafka.broker_log(index)) for index in range(BROKERS)],
        )
        cluster.wait_all_open("every broker OPEN at start", timeout_s=120)
        yield cluster


__all__ = [
    "BROKERS",
    "HARD_FREE",
    "STALE_AFTER_S",
    "TOPIC_RECHECK_S",
    "DecisionWatch",
    "FaultCluster",
    "FaultSidecar",
    "Figures",
    "PacketFilter",
    "cut_broker_off_from_its_peers",
    "cut_process_off_from_kafka",
    "describe",
    "fault_cluster",
    "in_force",
    "is_fail_safe",
    "kill_broker",
    "limit_reasons",
    "revoke_acls",
    "signal_broker",
    "snapshot_leader",
]
