"""The broker callback's decisions-topic reader when the topic's leader is cut off (topic mode).

Three brokers whose quota callbacks read the decision from ``__volume_quota_decisions``
(``volume.quota.decision.source=topic``, as ``User:consumer``) and one ``volume-quota
cluster-agent`` that writes it (stale-after and decision validity 10 s, a survey every second),
every broker JVM and the agent in a cgroup of their own (tests/faults/process_harness.py).

The decisions topic's leader is cut off from its peers (replication and the KRaft quorum) and
from the agent, while the other brokers' clients still reach it: it keeps answering with its
stale metadata ("I lead"), so a consumer that stays on it fetches nothing. The controller fences
it after the broker session timeout and moves the leadership; the agent writes to the new
leader. The two other brokers' callbacks must then apply a fresh decision again within the
partition the fault matrix allows (docs/reliability.md: stale-after 10 s + the broker session
timeout 9 s + room for the election, ``RECOVERY_BOUND_S``), not after the consumer's
``metadata.max.age.ms`` (5 min). Fresh means written after the cut, whatever its state: the agent
cannot measure the cut-off broker either, so it may decide the fail-safe PAUSE for a while.

Needs root (cgroups, iptables).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from local_cluster import BrokerPorts, ClusterPki, LocalKafkaCluster, grant_sidecar_acls
from local_cluster.acls import create_acls
from local_cluster.ports import free_loopback_ports
from schemas.decision import QuotaState
from tests.e2e.cluster_harness import (
    DECISIONS_TOPIC,
    STALE_AFTER_S,
    CallbackLog,
    agent_acl_bindings,
    agent_environment,
    require_plugin_jar,
    topic_callback_properties,
    wait_for,
)
from tests.faults.process_harness import (
    BROKERS,
    Cgroups,
    FaultSidecar,
    Figures,
    PacketFilter,
    cut_broker_off_from_its_peers,
    java_in_cgroups,
)
from tests.real_broker.kafka_helpers import quiet

pytestmark = [pytest.mark.e2e, pytest.mark.real_broker, pytest.mark.timeout(600)]

RECOVERY_BOUND_S = 25.0
"""The fault matrix's partition (docs/reliability.md, a broker cut off from its peers): the
majority must be OPEN again by then. Stale-after (10 s) plus the broker session timeout (9 s),
with room for a new leader to be elected and the decisions to flow again."""

RENEWED_AFTER_S = STALE_AFTER_S + 2.0
"""A decision received before the cut has expired by then (validity 10 s from its arrival): a
broker that never logged the on-missing action has applied decisions written after the cut."""

STATE_LINE = re.compile(
    rb"volume-quota engine #\d+: (?:decision (OPEN|THROTTLE|PAUSE)|(no valid decision))"
)
REBUILD_LINE = b"rebuilding the decisions consumer"
AGENT_EVENTS = ("decision changed", "decision not written", "the decision is written again")


@dataclass
class TopicModeCluster:
    kafka: LocalKafkaCluster
    packets: PacketFilter
    agent: FaultSidecar
    callback_logs: list[CallbackLog]
    agent_log: Path
    figures: Figures


@contextmanager
def topic_mode_cluster(base: Path) -> Iterator[TopicModeCluster]:
    """Three brokers reading the decisions topic, one agent, every callback OPEN."""
    jar = require_plugin_jar()
    # The callbacks' consumer names the cluster's own listeners and certificate files in the
    # broker properties: choose the ports and issue the certificates before the start.
    numbers = free_loopback_ports(3 * BROKERS)
    ports = [BrokerPorts(*numbers[3 * index : 3 * index + 3]) for index in range(BROKERS)]
    bootstrap = ",".join(f"127.0.0.1:{port.client}" for port in ports)
    reader = ClusterPki.create_or_open(base / "kafka" / "pki", BROKERS).identity("consumer")
    with ExitStack() as stack:
        cgroups = Cgroups()
        stack.callback(cgroups.close)
        java = java_in_cgroups(base, cgroups)
        kafka = LocalKafkaCluster(
            base / "kafka",
            broker_count=BROKERS,
            broker_properties=topic_callback_properties(bootstrap, reader),
            extra_classpath=[jar],
            java=str(java),
            ports=ports,
        )
        stack.enter_context(kafka)
        packets = PacketFilter(cgroups)
        stack.callback(packets.close)
        grant_sidecar_acls(kafka)
        create_acls(kafka, agent_acl_bindings())
        logs = [CallbackLog(kafka.broker_log(index)) for index in range(BROKERS)]
        for log in logs:
            log.offset = 0  # from the start: the first decision after the brokers started
        agent = FaultSidecar(
            0,
            base / "unused",
            agent_environment(
                kafka,
                {
                    "VOLUME_QUOTA_SURVEY_INTERVAL": "1s",
                    # As the fault sidecars: a write gives up before stale-after and is retried.
                    "VOLUME_QUOTA_DELIVERY_TIMEOUT": "5s",
                },
            ),
            base / "agent.log",
            command="cluster-agent",
            cgroup=cgroups.create("agent"),
        )
        stack.callback(agent.stop)
        agent.start()
        wait_for(
            "every broker's callback applying the agent's first OPEN",
            lambda: all(log.applied(QuotaState.OPEN) for log in logs),
            120,
        )
        yield TopicModeCluster(kafka, packets, agent, logs, agent.log_file, Figures())


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[TopicModeCluster]:
    with topic_mode_cluster(tmp_path) as running:
        yield running


def decisions_leader(kafka: LocalKafkaCluster, timeout_s: float = 60) -> int:
    """The broker that leads the decisions topic's partition 0."""
    admin = AdminClient(quiet(kafka.client_config("admin")))
    found: list[int] = []

    def leader_known() -> bool:
        metadata = admin.list_topics(DECISIONS_TOPIC, timeout=5)
        partitions = metadata.topics[DECISIONS_TOPIC].partitions
        leader = partitions[0].leader if 0 in partitions else -1
        if leader >= 0:
            found.append(int(leader))
        return leader >= 0

    wait_for("the decisions topic's leader", leader_known, timeout_s, interval_s=0.5)
    return found[-1]


def agent_events_since(path: Path, offset: int) -> list[str]:
    """What the agent logged about its decisions since ``offset``: changes, failed writes and
    the first write after them."""
    with path.open("rb") as stream:
        stream.seek(offset)
        lines = stream.read().decode(errors="replace").splitlines()
    return [line[:200] for line in lines if any(event in line for event in AGENT_EVENTS)]


def last_state(log: CallbackLog) -> str | None:
    """The last decision state the callback logged since the mark: OPEN, THROTTLE, PAUSE,
    ``none`` (no valid decision: on-missing applies) or None (no change logged)."""
    with log.path.open("rb") as stream:
        stream.seek(log.offset)
        found = STATE_LINE.findall(stream.read())
    if not found:
        return None
    state, missing = found[-1]
    return "none" if missing else state.decode()


def rebuilds_logged(log: CallbackLog) -> int:
    with log.path.open("rb") as stream:
        stream.seek(log.offset)
        return stream.read().count(REBUILD_LINE)


def test_the_brokers_left_apply_fresh_decisions_while_the_decisions_leader_is_cut_off(
    cluster: TopicModeCluster,
) -> None:
    """The decisions topic's leader loses its peers and the agent; the two other brokers'
    callbacks must apply decisions written after the cut within ``RECOVERY_BOUND_S``: either
    they never run out of a valid decision, or the on-missing PAUSE they fell into ends with a
    fresh decision."""
    victim = decisions_leader(cluster.kafka)
    others = [index for index in range(BROKERS) if index != victim]
    for log in cluster.callback_logs:
        log.mark()
    agent_offset = cluster.agent_log.stat().st_size
    lost_at: dict[int, float] = {}
    back_at: dict[int, float] = {}
    start = time.monotonic()
    cut_broker_off_from_its_peers(cluster.packets, cluster.kafka, victim)
    cluster.packets.drop(dport=cluster.kafka.broker_ports(victim).client, cgroup="agent")
    try:

        def fresh_everywhere_else() -> bool:
            elapsed = time.monotonic() - start
            for index in others:
                state = last_state(cluster.callback_logs[index])
                if state == "none":
                    lost_at.setdefault(index, elapsed)
                    back_at.pop(index, None)
                elif state is not None and index in lost_at:
                    back_at.setdefault(index, elapsed)  # a decision after the on-missing one
            return all(
                index in back_at or (index not in lost_at and elapsed >= RENEWED_AFTER_S)
                for index in others
            )

        try:
            wait_for(
                "a fresh decision applied by the brokers that are not cut off",
                fresh_everywhere_else,
                RECOVERY_BOUND_S,
                interval_s=0.1,
            )
        except AssertionError as error:
            states = {index: last_state(cluster.callback_logs[index]) for index in others}
            raise AssertionError(
                f"{error}: broker {victim} (leader of {DECISIONS_TOPIC}) cut off; last state"
                f" logged by the others {states}, lost their decision at {lost_at} s;"
                f" the agent since the cut: {agent_events_since(cluster.agent_log, agent_offset)}"
            ) from None
        figures = cluster.figures
        for index in others:
            name = f"callback_reader_cut_off.broker_{index}"
            figures.record(f"{name}.lost_decision_at_seconds", lost_at.get(index, -1.0))
            figures.record(f"{name}.fresh_decision_at_seconds", back_at.get(index, -1.0))
            figures.record(f"{name}.state", str(last_state(cluster.callback_logs[index])))
            figures.record(f"{name}.rebuilds", rebuilds_logged(cluster.callback_logs[index]))
        figures.record(
            f"callback_reader_cut_off.victim_{victim}.rebuilds",
            rebuilds_logged(cluster.callback_logs[victim]),
        )
        assert cluster.agent.running, "the agent must keep running"
    finally:
        cluster.packets.heal()
    cluster.figures.record(
        "callback_reader_cut_off.seconds_to_every_callback_open_after_heal",
        wait_for(
            "every callback OPEN after the heal",
            lambda: all(last_state(log) in (None, "OPEN") for log in cluster.callback_logs),
            120,
        ),
    )
