"""The cluster replay decides, instant by instant, what ``consumer.ClusterState`` decides.

A scenario of five brokers: snapshots every minute with random usage crossing both limits,
per-volume limit overrides, one broker with a 20-minute publishing outage (stale while live),
one retired with a tombstone, one that joins late and later has its clock a minute ahead for
ten minutes (its snapshots dated 60 s after their Kafka record timestamps, which the consumer
refuses on arrival). The operator forces PAUSE during a calm spell (cleared early by a
tombstone), OPEN during the burst, and an unsigned OPEN (refused: signatures are required)
during the skewed spell. The same snapshots and override records go through ``ClusterState``
(apply on arrival with the record timestamp, retire, live set, the ``OverrideFollower``,
decide) and through the history path (JSONL, Spark rows with the consumer's thresholds and a
``receivedAt`` column, per-snapshot broker samples, the override fold, ``replay_cluster``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry
from pyspark.sql import SparkSession

from consumer import ClusterState, DecisionPolicy
from consumer.override_follower import OverrideFollower
from consumer.snapshot_topic_reader import TopicRecord
from schemas.decision import OnMissing
from schemas.snapshot import VolumeSnapshot
from spark_history.broker_samples import broker_buckets, refused_arrivals, to_samples
from spark_history.cluster_replay import ReplayPolicy, replay_cluster
from spark_history.decision_replay import OPEN, PAUSE, STATE_CODES, Candidate
from spark_history.history_input import load_history
from spark_history.override_history import OverrideRecord, fold_overrides, forced_states
from tests.spark_history_pure.override_factory import (
    OperatorSigner,
    override_record,
    override_value,
)

START = datetime(2026, 11, 20, 0, 0, tzinfo=UTC)
MINUTES = 120
STALE_SECONDS = 150.0
CAPACITY = 1000
OUTAGE = (40, 60)  # broker 2 publishes nothing in these minutes, but stays live
RETIRED_AT = 90.5  # broker 3: last snapshot at minute 90, tombstone half a minute later
JOINS_AT = 30  # broker 4's first snapshot
BURST = (70, 76)
SKEWED = (95, 105)  # broker 4's clock is a minute ahead in these minutes
AHEAD = timedelta(seconds=60)
CALM_PAUSE = (5, 25, 15)  # forced PAUSE from minute 5 until 25, cleared by a tombstone at 15
BURST_OPEN = (69.5, 78)  # forced OPEN over broker 1's burst
UNSIGNED_OPEN = (97, 110)  # an unsigned OPEN: refused, signatures are required
SIGNER = OperatorSigner(START - timedelta(days=1))


def _minute(minutes: float) -> datetime:
    return START + timedelta(minutes=minutes)


def _override_records() -> list[OverrideRecord]:
    """What the operator wrote on the override topic, each arriving when it was set."""
    pause = override_value("PAUSE", _minute(CALM_PAUSE[0]), _minute(CALM_PAUSE[1]))
    opened = override_value("OPEN", _minute(BURST_OPEN[0]), _minute(BURST_OPEN[1]))
    forged = override_value("OPEN", _minute(UNSIGNED_OPEN[0]), _minute(UNSIGNED_OPEN[1]))
    return [
        override_record(pause, _minute(CALM_PAUSE[0]), SIGNER, 0),
        override_record(None, _minute(CALM_PAUSE[2]), SIGNER, 1),
        override_record(opened, _minute(BURST_OPEN[0]), SIGNER, 2),
        override_record(forged, _minute(UNSIGNED_OPEN[0]), None, 3),
    ]


class _ArrivingOverrides:
    """The override topic as the consumer's follower reads it: records show once arrived."""

    def __init__(self, records: list[OverrideRecord]) -> None:
        self._records = sorted(records, key=lambda record: record.arrived_at)
        self.now = 0.0
        self.assigned = False

    @property
    def caught_up(self) -> bool:
        return True

    def assign_from_beginning(self, timeout_seconds: float = 10.0) -> None:
        self.assigned = True

    def poll(self, timeout_seconds: float, max_records: int = 500) -> Iterator[TopicRecord]:
        while self._records and self._records[0].arrived_at.timestamp() <= self.now:
            record = self._records.pop(0)
            stamp = round(record.arrived_at.timestamp() * 1000)
            yield TopicRecord(
                record.key, record.value, 0, record.offset, record.headers, stamp, True
            )

    def reconnect(self, timeout_seconds: float = 2.0) -> str | None:
        return None


def _limit(percent: float) -> dict[str, object]:
    return {"type": "MinFreePercentage", "level": percent}


Arrivals = dict[tuple[int, datetime], datetime]
"""(broker, snapshotAt) -> when the snapshot reached the topic (its Kafka record timestamp)."""


def _snapshots() -> tuple[list[VolumeSnapshot], Arrivals]:
    rng = np.random.default_rng(13)
    snapshots = []
    arrivals: Arrivals = {}
    used = {(broker, volume): 840.0 for broker in range(5) for volume in range(3)}
    for minute in range(MINUTES):
        for broker in range(5):
            for volume in range(3):
                # Mean-reverting around 84% used: mostly below the soft limit, sometimes past
                # the hard one.
                current = used[broker, volume]
                step = 0.1 * (840.0 - current) + rng.normal(0.0, 15.0)
                used[broker, volume] = float(np.clip(current + step, 700, 1000))
            if BURST[0] <= minute < BURST[1]:
                used[1, 0] = 990.0  # a burst fills broker 1's first volume past every limit
            if OUTAGE[0] <= minute < OUTAGE[1] and broker == 2:
                continue
            if (broker == 3 and minute > 90) or (broker == 4 and minute < JOINS_AT):
                continue
            # Jittered publication instants, a few seconds apart from broker to broker.
            arrival = START + timedelta(minutes=minute, seconds=broker * 7 + int(rng.integers(5)))
            skewed = broker == 4 and SKEWED[0] <= minute < SKEWED[1]
            instant = arrival + AHEAD if skewed else arrival
            arrivals[broker, instant] = arrival
            volumes = []
            for volume in range(3):
                entry: dict[str, object] = {
                    "volumeName": f"/dev/v{volume}",
                    "capacity": CAPACITY,
                    "consumed": round(used[broker, volume]),
                }
                if volume == 2:
                    entry["softLimit"] = {"type": "MinFreeBytes", "level": 80}
                    entry["hardLimit"] = {"type": "ConsumedSpace", "level": 985}
                volumes.append(entry)
            snapshots.append(
                VolumeSnapshot.model_validate(
                    {
                        "schemaVersion": 1,
                        "brokerId": broker,
                        "snapshotAt": instant.isoformat(),
                        "softLimit": _limit(10.0),
                        "hardLimit": _limit(3.0),
                        "volumes": volumes,
                    }
                )
            )
    return snapshots, arrivals


def _live(broker: int, now: float, joined: dict[int, float]) -> bool:
    """The scenario's live set (what the Admin client would say): a broker joins the cluster
    when it first publishes (the history cannot see a broker before that) and broker 3
    leaves at ``RETIRED_AT``."""
    minute = (now - START.timestamp()) / 60.0
    if broker == 3 and minute >= RETIRED_AT:
        return False
    return now >= joined[broker]


def _consumer_decisions(
    snapshots: list[VolumeSnapshot],
    arrivals: Arrivals,
    grid: np.ndarray,
    candidate: Candidate | None,
) -> tuple[list[int], list[float]]:
    state = ClusterState(
        DecisionPolicy(stale_after_seconds=STALE_SECONDS, on_missing=OnMissing.PAUSE)
    )
    topic = _ArrivingOverrides(_override_records())
    follower = OverrideFollower(topic, CollectorRegistry(), policy=SIGNER.policy())
    joined: dict[int, float] = {}
    for snapshot in snapshots:
        instant = snapshot.snapshot_at.timestamp()
        joined[snapshot.broker_id] = min(joined.get(snapshot.broker_id, instant), instant)

    def arrival(snapshot: VolumeSnapshot) -> datetime:
        return arrivals[snapshot.broker_id, snapshot.snapshot_at]

    pending = sorted(snapshots, key=arrival)
    retire_at = START.timestamp() + RETIRED_AT * 60
    retired = False
    states, factors = [], []
    for now in grid:
        while pending and arrival(pending[0]).timestamp() <= now:
            snapshot = pending.pop(0)
            received_at = arrival(snapshot)
            if candidate is not None:
                snapshot = _with_candidate(snapshot, candidate)
            state.apply_snapshot(snapshot, received_at=received_at)
        if not retired and retire_at <= now:
            state.retire(3)
            retired = True
        state.set_live_brokers(broker for broker in range(5) if _live(broker, now, joined))
        topic.now = now
        moment = datetime.fromtimestamp(now, UTC)
        decision = state.decide(moment, override=follower.current(now, moment))
        states.append(STATE_CODES[decision.state])
        factors.append(decision.throttle_factor)
    return states, factors


def _with_candidate(snapshot: VolumeSnapshot, candidate: Candidate) -> VolumeSnapshot:
    """The snapshot as the candidate limits would have it: broker-wide, no overrides."""
    wire = snapshot.model_dump(by_alias=True, mode="json", exclude_none=True)
    wire["softLimit"] = _limit(candidate.soft_percent)
    wire["hardLimit"] = _limit(candidate.hard_percent)
    wire["volumes"] = [
        {key: value for key, value in volume.items() if key not in ("softLimit", "hardLimit")}
        for volume in wire["volumes"]
    ]
    return VolumeSnapshot.model_validate(wire)


@pytest.mark.spark
def test_replay_matches_cluster_state_instant_by_instant(
    spark: SparkSession, tmp_path: Path
) -> None:
    snapshots, arrivals = _snapshots()
    source = tmp_path / "snapshots.jsonl"
    source.write_bytes(b"".join(snapshot.to_json_bytes() + b"\n" for snapshot in snapshots))
    received = spark.createDataFrame(
        [(broker, at, arrival) for (broker, at), arrival in arrivals.items()],
        "brokerId int, snapshotAt timestamp, receivedAt timestamp",
    )
    rows = load_history(spark, source.as_uri()).join(received, ["brokerId", "snapshotAt"])
    end = START + timedelta(minutes=MINUTES)
    skew = DecisionPolicy().max_clock_skew_seconds
    buckets = broker_buckets(rows, end, None, None, skew)
    refused = refused_arrivals(rows, end, None, None, skew)
    assert list(refused) == [4]
    assert refused[4].size == SKEWED[1] - SKEWED[0]
    samples = to_samples(buckets, {3: START.timestamp() + RETIRED_AT * 60}, refused)
    # Every 20 s from the first snapshot to two minutes past the last.
    grid = START.timestamp() + np.arange(0, (MINUTES + 2) * 60, 20.0)
    policy = ReplayPolicy(stale_after_seconds=STALE_SECONDS, retired_after_seconds=86400.0)
    overrides = fold_overrides(_override_records(), SIGNER.policy())
    assert len(overrides.refused) == 1  # the unsigned OPEN
    forced = forced_states(overrides.intervals, grid)
    outage = (grid > START.timestamp() + (OUTAGE[0] + 3) * 60) & (
        grid < START.timestamp() + OUTAGE[1] * 60
    )
    skewed = (grid > START.timestamp() + (SKEWED[0] + 1) * 60) & (
        grid < START.timestamp() + SKEWED[1] * 60
    )
    # The limits in force (with per-volume overrides), then a MinFreePercentage candidate.
    for candidate in (None, Candidate(12.5, 5.0)):
        timeline = replay_cluster(samples, grid, policy, candidate, forced)
        by_rule = replay_cluster(samples, grid, policy, candidate)
        expected_states, expected_factors = _consumer_decisions(
            snapshots, arrivals, grid, candidate
        )
        assert timeline.states.tolist() == expected_states, candidate
        assert timeline.factors.tolist() == pytest.approx(expected_factors, abs=1e-12)
        # The scenario exercises every state, and the outage pauses for missing data.
        assert set(expected_states) == {0, 1, 2}, candidate
        assert timeline.missing_data[outage].any(), candidate
        # Refused while its clock is ahead: unknown, the cluster paused for missing data.
        assert (timeline.missing_data | (timeline.states == 2))[skewed].all(), candidate
        assert timeline.missing_data[skewed].any(), candidate
        # The operator's PAUSE holds a calm spell the rule left open at times, its OPEN a
        # burst the rule paused, and the tombstone ends the PAUSE early.
        calm = (grid >= _minute(CALM_PAUSE[0]).timestamp()) & (
            grid < _minute(CALM_PAUSE[2]).timestamp()
        )
        burst = (grid >= _minute(BURST_OPEN[0]).timestamp()) & (
            grid < _minute(BURST_OPEN[1]).timestamp()
        )
        assert (by_rule.states[calm] != PAUSE).any(), candidate
        assert (timeline.states[calm] == PAUSE).all(), candidate
        assert (by_rule.states[burst] == PAUSE).any(), candidate
        assert (timeline.states[burst] == OPEN).all(), candidate
        assert (forced[calm] == PAUSE).all()
        assert not (forced[(grid >= _minute(CALM_PAUSE[2]).timestamp()) & ~burst] >= 0).any()
        hours = timeline.hours(20.0)
        assert hours["overridePausedHours"] == pytest.approx(calm.sum() * 20.0 / 3600.0)
        assert hours["overrideOpenHours"] == pytest.approx(burst.sum() * 20.0 / 3600.0)
