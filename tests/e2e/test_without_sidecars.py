"""Issue 12, section 5: volume-quota without sidecars, end to end.

Real parts only: a 3-node Kafka 4.3.1 cluster (mTLS, ACLs) whose quota callbacks read the
decision from the compacted decisions topic (``volume.quota.decision.source=topic``, as
``User:consumer``), each broker's log dir on its own 256 MiB tmpfs, and ONE
``volume-quota cluster-agent`` process (as ``User:publisher``) that measures every broker
through DescribeLogDirs and writes the decisions. No sidecar, no decision file.

The figures land in ``VOLUME_QUOTA_E2E_TIMINGS`` (if set) and in docs/benchmarks.md.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from local_cluster import BrokerPorts, ClusterPki, LocalKafkaCluster, grant_sidecar_acls
from local_cluster.acls import create_acls
from local_cluster.ports import free_loopback_ports
from schemas.decision import QuotaState, ReasonKind
from tests.e2e.cluster_harness import (
    BASE_RATE,
    HARD_FREE,
    PAUSE_RATE,
    SOFT_FREE,
    STALE_AFTER_S,
    CallbackLog,
    DecisionTail,
    RateProbe,
    Sidecar,
    agent_acl_bindings,
    agent_environment,
    create_data_topic,
    probe_status,
    require_plugin_jar,
    topic_callback_properties,
    wait_for,
    wait_for_each_recovery,
    write_timings,
)
from tests.real_fs.real_mounts import Mounts, fill, statvfs_sizes

pytestmark = [pytest.mark.e2e, pytest.mark.real_broker, pytest.mark.real_fs]

ON_MISSING_LINE = "applying on-missing PAUSE"
TIMINGS: dict[str, float] = {}


@dataclass
class AgentCluster:
    kafka: LocalKafkaCluster
    volumes: list[Path]
    agent: Sidecar
    second_agent: Sidecar
    probes: list[RateProbe]
    callback_logs: list[CallbackLog]
    tail: DecisionTail

    def fill_broker_2_to_free(self, free: int) -> None:
        """Add or shrink a filler file on broker 2's volume so that about ``free`` bytes remain."""
        filler = self.volumes[2] / "filler.bin"
        filler.unlink(missing_ok=True)
        _, now_free = statvfs_sizes(self.volumes[2])
        fill(self.volumes[2], "filler.bin", max(0, now_free - free))

    def mark_logs(self) -> None:
        for log in self.callback_logs:
            log.mark()

    def every_callback(self, text: str, brokers: range | list[int] = range(3)) -> bool:
        return all(self.callback_logs[index].seen(text) for index in brokers)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentCluster]:
    jar = require_plugin_jar()
    base = tmp_path_factory.mktemp("e2e-agent")
    # The callbacks' consumer must name the cluster's own listeners and certificate files in
    # the broker properties: choose the ports and issue the certificates before the start.
    numbers = free_loopback_ports(9)
    ports = [BrokerPorts(*numbers[3 * index : 3 * index + 3]) for index in range(3)]
    bootstrap = ",".join(f"127.0.0.1:{port.client}" for port in ports)
    reader = ClusterPki.create_or_open(base / "kafka" / "pki", 3).identity("consumer")
    with Mounts() as mounts:
        volumes = [mounts.tmpfs(base / f"volume-{index}", size="256m") for index in range(3)]
        log_dirs = [volume / "kafka-logs" for volume in volumes]
        kafka = LocalKafkaCluster(
            base / "kafka",
            broker_count=3,
            log_dirs=[[log_dir] for log_dir in log_dirs],
            broker_properties=topic_callback_properties(bootstrap, reader),
            extra_classpath=[jar],
            ports=ports,
        )
        with kafka:
            logs = [CallbackLog(kafka.broker_log(index)) for index in range(3)]
            for log in logs:
                log.offset = 0  # from the start: the first decision after the brokers started
            grant_sidecar_acls(kafka)
            create_acls(kafka, agent_acl_bindings())
            # A survey every second, like the sidecars' sampling, so that the reactions compare.
            environment = agent_environment(kafka, {"VOLUME_QUOTA_SURVEY_INTERVAL": "1s"})
            agent = Sidecar(
                0, base / "unused", environment, base / "agent-1.log", command="cluster-agent"
            )
            second_agent = Sidecar(
                0, base / "unused", environment, base / "agent-2.log", command="cluster-agent"
            )
            tail = DecisionTail(kafka.client_config("admin"))
            probes: list[RateProbe] = []
            try:
                started = time.monotonic()
                agent.start()
                TIMINGS["first_decision_applied_seconds"] = wait_for(
                    "every broker's callback applying the agent's first OPEN",
                    lambda: all(log.applied(QuotaState.OPEN) for log in logs),
                    90,
                )
                assert time.monotonic() - started < 90
                tail.start()
                for leader in (0, 1):
                    create_data_topic(kafka, f"data-on-broker-{leader}", leader)
                probes = [
                    RateProbe(kafka.client_config("admin"), f"data-on-broker-{leader}").start()
                    for leader in (0, 1)
                ]
                yield AgentCluster(kafka, volumes, agent, second_agent, probes, logs, tail)
            finally:
                for probe in probes:
                    probe.stop()
                tail.stop()
                for process in (agent, second_agent):
                    process.stop()


def test_1_no_sidecar_no_file_the_callbacks_read_the_topic(cluster: AgentCluster) -> None:
    for log in cluster.callback_logs:
        assert log.seen("decision source decisions topic __volume_quota_decisions")
        assert log.seen("reading __volume_quota_decisions-0 from offset")
        assert not log.seen("decision file")
        log.mark()
    time.sleep(20)  # past the broker's 11 s quota window and the producers' first burst
    for log in cluster.callback_logs:
        assert not log.seen("no valid decision"), "the first OPEN is renewed in time"
        assert not log.applied(QuotaState.PAUSE)
        assert not log.applied(QuotaState.THROTTLE)
    rate = cluster.probes[0].rate(11)
    assert 0.75 * BASE_RATE <= rate <= 1.5 * BASE_RATE, f"{rate / 1024:.0f} KiB/s"


def test_2_two_agents_at_once_write_the_same_decisions_without_flapping(
    cluster: AgentCluster,
) -> None:
    cluster.fill_broker_2_to_free((SOFT_FREE + HARD_FREE) // 2)  # factor about 0.5
    wait_for(
        "THROTTLE on every broker",
        lambda: all(log.applied(QuotaState.THROTTLE) for log in cluster.callback_logs),
        20,
    )
    one_agent_from = time.monotonic()
    time.sleep(15)
    one_agent = cluster.tail.since(one_agent_from)
    TIMINGS["throttle_messages_per_minute_one_agent"] = len(one_agent) * 60 / 15
    cluster.second_agent.start()
    try:
        time.sleep(6)  # its start-up: first survey, first decision
        cluster.mark_logs()
        two_agents_from = time.monotonic()
        time.sleep(20)
        both = cluster.tail.since(two_agents_from)
    finally:
        cluster.second_agent.stop()
    TIMINGS["throttle_messages_per_minute_two_agents"] = len(both) * 60 / 20
    assert both, "the agents keep rewriting the decision"
    assert {decision.state for decision in both} == {QuotaState.THROTTLE}, [
        (decision.state, decision.throttle_factor) for decision in both
    ]
    factors = [decision.throttle_factor for decision in both]
    # Two agents measure the same volumes a moment apart: within one quantization step.
    assert max(factors) - min(factors) <= 0.05, factors
    TIMINGS["two_agents_factor_spread"] = max(factors) - min(factors)
    assert 0.35 < factors[-1] < 0.65, factors
    for log in cluster.callback_logs:
        assert not log.applied(QuotaState.OPEN), "no flapping to OPEN"
        assert not log.applied(QuotaState.PAUSE), "no flapping to PAUSE"
        assert not log.seen(ON_MISSING_LINE), "no gap between decisions"


def test_3_past_the_hard_limit_every_broker_pauses(cluster: AgentCluster) -> None:
    cluster.mark_logs()
    breached_at = time.monotonic()
    breached_wall = time.time()
    cluster.fill_broker_2_to_free(HARD_FREE // 2)
    reaction = wait_for(
        "every broker's callback applying PAUSE",
        lambda: all(log.applied(QuotaState.PAUSE) for log in cluster.callback_logs),
        30,
        interval_s=0.05,
    )
    wait_for(
        "the PAUSE in the test's own view of the topic",
        lambda: cluster.tail.first_at(QuotaState.PAUSE, breached_at) is not None,
        10,
    )
    pause = next(d for d in cluster.tail.since(breached_at) if d.state is QuotaState.PAUSE)
    TIMINGS["reaction_seconds"] = reaction
    # The agent's clock is this host's clock: breach -> the agent's PAUSE (its survey every 1 s).
    TIMINGS["reaction_decided_seconds"] = pause.decided_at.timestamp() - breached_wall
    # A survey every second (like the sidecar's sampling), then the topic.
    assert reaction < 4.0, f"reaction {reaction:.2f}s"
    wait_for(
        "producers down to the pause floor",
        lambda: all(probe.rate(8) <= 2.5 * PAUSE_RATE for probe in cluster.probes),
        60,
        interval_s=1,
    )
    TIMINGS["paused_rate_kib_s"] = cluster.probes[0].rate(8) / 1024
    TIMINGS["seconds_to_pause_floor"] = time.monotonic() - breached_at


def test_4_freed_space_opens_every_broker_and_producers_recover(cluster: AgentCluster) -> None:
    cluster.mark_logs()
    (cluster.volumes[2] / "filler.bin").unlink()
    freed_at = time.monotonic()
    TIMINGS["open_seconds"] = wait_for(
        "every broker's callback applying OPEN",
        lambda: all(log.applied(QuotaState.OPEN) for log in cluster.callback_logs),
        15,
        interval_s=0.05,
    )
    recovered = wait_for_each_recovery(cluster.probes, freed_at, 0.9 * BASE_RATE, 45)
    TIMINGS["recovery_seconds"] = max(recovered.values())
    assert TIMINGS["recovery_seconds"] <= 30, (
        f"recovery {recovered}; from 30 s before the space was freed:"
        f" {probe_status(cluster.probes, freed_at - 30)}"
    )
    assert not any(probe.errors for probe in cluster.probes), "no record may fail"


def test_5_a_stopped_agent_fails_safe_after_the_decisions_validity(cluster: AgentCluster) -> None:
    last = cluster.tail.latest()
    assert last is not None
    assert last.state is QuotaState.OPEN
    cluster.mark_logs()
    stopped_at = time.monotonic()
    cluster.agent.stop()
    try:
        fail_safe = wait_for(
            "the on-missing PAUSE on every broker",
            lambda: cluster.every_callback(ON_MISSING_LINE),
            STALE_AFTER_S + 10,
            interval_s=0.05,
        )
        # The last decision was written at most valid_for / 3 before the stop and is applied
        # for valid_for from its arrival on the broker's own clock: never before 2/3 of it.
        assert fail_safe >= STALE_AFTER_S * 2 / 3 - 0.5, f"{fail_safe:.1f}s"
        assert fail_safe <= STALE_AFTER_S + 2, f"{fail_safe:.1f}s"
        assert cluster.every_callback("decision received")
        TIMINGS["fail_safe_seconds"] = fail_safe
        TIMINGS["fail_safe_after_stop_seconds"] = time.monotonic() - stopped_at
    finally:
        cluster.agent.start()
    TIMINGS["agent_restart_to_open_seconds"] = wait_for(
        "OPEN again after the agent's restart",
        lambda: all(log.applied(QuotaState.OPEN) for log in cluster.callback_logs),
        60,
    )


def test_6_a_stopped_broker_keeps_its_last_breach(cluster: AgentCluster) -> None:
    cluster.fill_broker_2_to_free(HARD_FREE // 2)
    cluster.mark_logs()
    wait_for(
        "PAUSE on every broker",
        lambda: all(log.applied(QuotaState.PAUSE) for log in cluster.callback_logs),
        30,
    )
    stopped_at = time.monotonic()
    cluster.kafka.stop_broker(2)
    for log in cluster.callback_logs[:2]:
        log.mark()
    try:

        def broker_2_down_and_still_pausing() -> bool:
            decision = cluster.tail.latest()
            assert decision is not None
            assert decision.state is QuotaState.PAUSE, decision
            limits = [reason for reason in decision.reasons if reason.kind is ReasonKind.LIMIT]
            assert limits, decision.reasons
            assert limits[0].broker_id == 2, decision.reasons
            return limits[0].broker_live is False

        wait_for("broker 2 to leave describeCluster", broker_2_down_and_still_pausing, 60)
        # Past stale-after too: the stopped broker's last word ("full") still holds.
        time.sleep(max(0.0, STALE_AFTER_S + 2 - (time.monotonic() - stopped_at)))
        assert broker_2_down_and_still_pausing()
        for log in cluster.callback_logs[:2]:
            assert not log.applied(QuotaState.OPEN)
            assert not log.seen(ON_MISSING_LINE), "the agent kept writing decisions"
    finally:
        (cluster.volumes[2] / "filler.bin").unlink(missing_ok=True)
        restarted_at = time.monotonic()
        cluster.kafka.start_broker(2)
        TIMINGS["broker_restart_seconds"] = time.monotonic() - restarted_at
        write_timings(TIMINGS)
        print("timings:", TIMINGS)


def test_7_a_restarted_broker_is_measured_again_and_every_broker_opens(
    cluster: AgentCluster,
) -> None:
    # Broker 2's filler is gone: once the agent measures it again, the decision is OPEN.
    restarted_broker = cluster.callback_logs[2]
    TIMINGS["open_after_broker_restart_seconds"] = wait_for(
        "OPEN on every broker after broker 2's restart",
        lambda: all(log.applied(QuotaState.OPEN) for log in cluster.callback_logs),
        60,
    )
    assert restarted_broker.seen("reading __volume_quota_decisions-0 from offset")
    write_timings(TIMINGS)
    print("timings:", TIMINGS)
