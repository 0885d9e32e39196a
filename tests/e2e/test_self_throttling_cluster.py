"""Issue scenario, end to end: a producer on broker 0 slows down, then stops, because a volume on
broker 2 is filling; it recovers when space is freed; missing data fails safe; a full broker
that restarts keeps the pause in force.

Real parts only: a 3-node Kafka 4.3.1 cluster (mTLS, ACLs) with the quota callback jar loaded,
one `volume-quota sidecar` process per broker, each broker's log dir on its own 256 MiB tmpfs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from local_cluster import LocalKafkaCluster, grant_sidecar_acls
from local_cluster.clients import issue_client
from schemas.decision import QuotaState, ReasonKind
from tests.e2e.cluster_harness import (
    BASE_RATE,
    HARD_FREE,
    MIB,
    PAUSE_RATE,
    SOFT_FREE,
    STALE_AFTER_S,
    VOLUME_SIZE,
    CallbackLog,
    RateProbe,
    Sidecar,
    all_decisions,
    callback_properties,
    create_data_topic,
    probe_status,
    read_decision,
    require_plugin_jar,
    sidecar_environment,
    wait_for,
    wait_for_each_recovery,
    write_timings,
)
from tests.real_fs.real_mounts import Mounts, fill, statvfs_sizes

pytestmark = [pytest.mark.e2e, pytest.mark.real_broker, pytest.mark.real_fs]


@dataclass
class SelfThrottlingCluster:
    kafka: LocalKafkaCluster
    volumes: list[Path]
    sidecars: list[Sidecar]
    open_decider: Sidecar
    probes: list[RateProbe]
    callback_logs: list[CallbackLog]

    @property
    def decision_files(self) -> list[Path]:
        return [sidecar.decision_file for sidecar in self.sidecars]

    def fill_broker_2_to_free(self, free: int) -> None:
        """Add or shrink a filler file on broker 2's volume so that about ``free`` bytes remain."""
        filler = self.volumes[2] / "filler.bin"
        filler.unlink(missing_ok=True)
        _, now_free = statvfs_sizes(self.volumes[2])
        fill(self.volumes[2], "filler.bin", max(0, now_free - free))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SelfThrottlingCluster]:
    jar = require_plugin_jar()
    base = tmp_path_factory.mktemp("e2e")
    decisions = base / "decisions"
    decisions.mkdir()
    decision_files = [decisions / f"broker-{index}.json" for index in range(3)]
    with Mounts() as mounts:
        volumes = [mounts.tmpfs(base / f"volume-{index}", size="256m") for index in range(3)]
        log_dirs = [volume / "kafka-logs" for volume in volumes]
        kafka = LocalKafkaCluster(
            base / "kafka",
            broker_count=3,
            log_dirs=[[log_dir] for log_dir in log_dirs],
            per_broker_properties=[callback_properties(path) for path in decision_files],
            extra_classpath=[jar],
        )
        with kafka:
            grant_sidecar_acls(kafka)
            sidecars = [
                Sidecar(
                    index,
                    decision_files[index],
                    sidecar_environment(kafka, index, log_dirs[index], decision_files[index]),
                    base / f"sidecar-{index}.log",
                )
                for index in range(3)
            ]
            open_file = decisions / "on-missing-open.json"
            open_decider = Sidecar(
                0,
                open_file,
                sidecar_environment(
                    kafka, 0, log_dirs[0], open_file, {"VOLUME_QUOTA_ON_MISSING": "OPEN"}
                ),
                base / "decide-open.log",
                command="decide",
            )
            probes: list[RateProbe] = []
            try:
                for sidecar in sidecars:
                    sidecar.start()
                wait_for("every broker OPEN", all_decisions(decision_files, QuotaState.OPEN), 90)
                open_decider.start()
                for leader in (0, 1):
                    create_data_topic(kafka, f"data-on-broker-{leader}", leader)
                    # An ordinary principal, allowed to write its own topic only.
                    issue_client(kafka, f"app-{leader}", topics_write=[f"data-on-broker-{leader}"])
                probes = [
                    RateProbe(
                        kafka.client_config(f"app-{leader}"), f"data-on-broker-{leader}"
                    ).start()
                    for leader in (0, 1)
                ]
                yield SelfThrottlingCluster(
                    kafka,
                    volumes,
                    sidecars,
                    open_decider,
                    probes,
                    [CallbackLog(kafka.broker_log(index)) for index in range(3)],
                )
            finally:
                for probe in probes:
                    probe.stop()
                for sidecar in [*sidecars, open_decider]:
                    sidecar.stop()


TIMINGS: dict[str, float] = {}
MEASURE_THROTTLED_S = 24
"""Seconds over which the throttled rate is averaged."""


def test_1_all_volumes_fine_producer_runs_at_full_rate(cluster: SelfThrottlingCluster) -> None:
    time.sleep(20)  # past the broker's 11 s quota window and the producers' first burst
    rate = cluster.probes[0].rate(11)
    # Full rate is the base quota: the broker lets a client run ahead within its 11 s window.
    assert 0.75 * BASE_RATE <= rate <= 1.5 * BASE_RATE, f"{rate / MIB:.2f} MiB/s"
    TIMINGS["open_rate_mib_s"] = rate / MIB


def test_2_soft_zone_on_broker_2_slows_producers_on_brokers_0_and_1(
    cluster: SelfThrottlingCluster,
) -> None:
    cluster.fill_broker_2_to_free((SOFT_FREE + HARD_FREE) // 2)  # factor about 0.5
    wait_for("THROTTLE everywhere", all_decisions(cluster.decision_files, QuotaState.THROTTLE), 15)

    def factor_settled() -> bool:  # the filler is written in steps the publisher may catch
        decision = read_decision(cluster.decision_files[0])
        return decision is not None and 0.35 < decision.throttle_factor < 0.65

    wait_for("the throttle factor to settle near 0.5", factor_settled, 15)
    decision = read_decision(cluster.decision_files[0])
    assert decision is not None
    assert (decision.reasons[0].broker_id, decision.reasons[0].kind) == (2, ReasonKind.LIMIT)
    factors = [decision.throttle_factor]
    # Each step down of the quota may earn a throttle of several seconds (bounded by the
    # callback's step-down rules): let them pass, then judge the mean over a long window, which
    # a throttle or two cannot dominate the way they dominate a few seconds.
    time.sleep(12)
    measured_from = time.monotonic()
    time.sleep(MEASURE_THROTTLED_S)
    decision = read_decision(cluster.decision_files[0])
    assert decision is not None
    assert decision.state is QuotaState.THROTTLE
    factors.append(decision.throttle_factor)
    for probe in cluster.probes:
        rate = probe.rate(MEASURE_THROTTLED_S)
        assert 0.6 * min(factors) * BASE_RATE <= rate <= 1.5 * max(factors) * BASE_RATE, (
            f"{rate / MIB:.2f} MiB/s for factors {factors}; {probe_status([probe], measured_from)}"
        )
    TIMINGS["throttle_factor"] = factors[-1]
    TIMINGS["throttled_rate_mib_s"] = cluster.probes[0].rate(MEASURE_THROTTLED_S) / MIB


def test_3_past_the_hard_limit_every_broker_pauses_producers(
    cluster: SelfThrottlingCluster,
) -> None:
    for log in cluster.callback_logs:
        log.mark()
    cluster.fill_broker_2_to_free(HARD_FREE // 2)
    breached_at = time.monotonic()
    reaction = wait_for(
        "every broker's callback applying PAUSE",
        lambda: all(log.applied(QuotaState.PAUSE) for log in cluster.callback_logs),
        30,
    )
    assert reaction < 3.0, f"reaction {reaction:.2f}s (target: under 3 s)"
    TIMINGS["reaction_seconds"] = reaction
    # The quota steps down by at most half per 11 s window (bounded throttles): give it time.
    wait_for(
        "producers down to the pause floor",
        lambda: all(probe.rate(8) <= 2.5 * PAUSE_RATE for probe in cluster.probes),
        60,
        interval_s=1,
    )
    TIMINGS["paused_rate_kib_s"] = cluster.probes[0].rate(8) / 1024
    TIMINGS["seconds_to_pause_floor"] = time.monotonic() - breached_at


def test_4_freed_space_lets_producers_recover_within_30_seconds(
    cluster: SelfThrottlingCluster,
) -> None:
    (cluster.volumes[2] / "filler.bin").unlink()
    freed_at = time.monotonic()
    wait_for("OPEN everywhere", all_decisions(cluster.decision_files, QuotaState.OPEN), 15)
    recovered = wait_for_each_recovery(cluster.probes, freed_at, 0.9 * BASE_RATE, 60)
    TIMINGS["recovery_seconds"] = max(recovered.values())
    assert TIMINGS["recovery_seconds"] <= 30, (
        f"recovery {recovered}; {probe_status(cluster.probes, freed_at)}"
    )
    assert not any(probe.errors for probe in cluster.probes), "no record may fail"


def test_5_a_silent_publisher_fails_safe_unless_on_missing_is_open(
    cluster: SelfThrottlingCluster,
) -> None:
    stopped_at = time.monotonic()  # the last snapshot was published before this
    cluster.sidecars[2].stop()
    try:
        wait_for(
            "the fail-safe PAUSE on brokers 0 and 1",
            all_decisions(cluster.decision_files[:2], QuotaState.PAUSE),
            STALE_AFTER_S + 15,
        )
        decision = read_decision(cluster.decision_files[0])
        assert decision is not None
        assert decision.caused_by_missing_data
        assert decision.unknown_brokers == [2]
        stale = [reason for reason in decision.reasons if reason.kind is ReasonKind.STALE]
        assert stale, decision.reasons
        assert stale[0].snapshot_at is not None
        # Not before the snapshot was stale: staleness counts from its snapshotAt, which is up
        # to a heartbeat plus a sample interval (3 s) older than the sidecar's stop.
        # Both instants are written to the millisecond, truncated: a snapshot just past
        # stale-after can show an age of exactly STALE_AFTER_S.
        age_at_decision = (decision.decided_at - stale[0].snapshot_at).total_seconds()
        assert age_at_decision > STALE_AFTER_S - 0.001
        assert time.monotonic() - stopped_at >= STALE_AFTER_S - 3 - 0.5
        TIMINGS["fail_safe_seconds"] = time.monotonic() - stopped_at

        def relaxed_sees_broker_2_unknown() -> bool:
            relaxed = read_decision(cluster.open_decider.decision_file)
            assert relaxed is not None
            assert relaxed.state is QuotaState.OPEN, "on-missing OPEN ignores the silent broker"
            return relaxed.unknown_brokers == [2]

        # The OPEN decider is another process: it notices the same staleness a moment apart.
        wait_for("the OPEN decider to list broker 2 as unknown", relaxed_sees_broker_2_unknown, 10)
    finally:
        cluster.sidecars[2].start()
    wait_for("OPEN again", all_decisions(cluster.decision_files, QuotaState.OPEN), 60)


def test_6_a_full_broker_that_restarts_keeps_the_pause(cluster: SelfThrottlingCluster) -> None:
    cluster.fill_broker_2_to_free(HARD_FREE // 2)
    wait_for("PAUSE everywhere", all_decisions(cluster.decision_files, QuotaState.PAUSE), 30)
    watched = [*cluster.decision_files[:2], cluster.open_decider.decision_file]
    stopped_at = time.monotonic()
    cluster.sidecars[2].stop()
    cluster.kafka.stop_broker(2)
    try:

        def broker_2_down_and_still_pausing() -> bool:
            for path in watched:
                decision = read_decision(path)
                assert decision is not None
                assert decision.state is QuotaState.PAUSE, f"{path.name}: {decision}"
                limits = [reason for reason in decision.reasons if reason.kind is ReasonKind.LIMIT]
                assert limits, f"{path.name}: the pause must come from broker 2's volume"
                assert limits[0].broker_id == 2
                if limits[0].broker_live is not False:
                    return False
            return True

        wait_for("broker 2 to leave describeCluster", broker_2_down_and_still_pausing, 60)
        # Past stale-after too: the restarting broker's last word ("full") still holds.
        time.sleep(max(0.0, STALE_AFTER_S + 2 - (time.monotonic() - stopped_at)))
        assert broker_2_down_and_still_pausing()
    finally:
        (cluster.volumes[2] / "filler.bin").unlink(missing_ok=True)
        cluster.kafka.start_broker(2)
        cluster.sidecars[2].start()
    wait_for("OPEN after the restart", all_decisions(cluster.decision_files, QuotaState.OPEN), 90)
    write_timings(TIMINGS)


def test_status_shows_every_broker_volume_and_the_decision(
    cluster: SelfThrottlingCluster,
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "volume_quota", "status", "--json", "--timeout", "30"],
        env=cluster.sidecars[0].environment,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    status = json.loads(result.stdout)
    assert status["decision"]["state"] == "OPEN"
    assert sorted(row["brokerId"] for row in status["volumes"]) == [0, 1, 2]
    assert all(row["capacityBytes"] == VOLUME_SIZE for row in status["volumes"])


def test_volume_sizes_are_what_the_limits_assume(cluster: SelfThrottlingCluster) -> None:
    capacity, free = statvfs_sizes(cluster.volumes[0])
    assert capacity == VOLUME_SIZE
    assert free > SOFT_FREE, "the producers' own data must not push broker 0 into the soft zone"
