"""Data faults on a real broker: a publisher's clock five minutes off either way; duplicated,
reordered and replayed old snapshots; a write burst that fills a volume between two samples;
a log dir Kafka takes offline because its volume filled (KIP-112).

One Kafka node with two log dirs, each on a 512 MiB tmpfs of its own, and the quota callback
reading its sidecar's decision file. The clock and replay faults use topics of their own (a
publisher and a decider each), so the broker's own sidecar is never disturbed by them.

What must happen (docs/decision-rule.md, docs/reliability.md, docs/publisher.md):
- clock skew: a snapshot dated more than max-clock-skew ahead, or older than stale-after, does
  not vouch for its broker: every decider treats the broker as unknown and fails safe (PAUSE);
- replays: per broker the snapshot with the latest snapshotAt wins, so a duplicate, an older
  snapshot arriving late, or a validly signed week-old "all fine" never clears a breach (nor an
  old breach pauses a healthy cluster), also for a decider that reads the topic anew;
- a burst: PAUSE lands within the sampling interval plus the pipeline's latency of the hard
  limit's crossing and then stops the producer; the figure is how much of the volume the burst
  took by then;
- an offline log dir: the broker keeps serving its other dir, the publisher reports the full
  volume, the decision is PAUSE; the Admin-API survey reports the offline dir as full.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient

from local_cluster import (
    SNAPSHOT_TOPIC,
    LocalKafkaCluster,
    grant_sidecar_acls,
    grant_volume_quota_acls,
    subject_of,
)
from local_cluster.clients import issue_client
from publisher.log_dir_survey import LogDirAdmin, LogDirSurvey
from schemas import VolumeSnapshot, decode_snapshot
from schemas.decision import QuotaDecision, QuotaState, ReasonKind
from tests.e2e.cluster_harness import (
    STALE_AFTER_S,
    CallbackLog,
    RateProbe,
    callback_properties,
    read_decision,
    require_plugin_jar,
    wait_for,
)
from tests.faults.data_harness import (
    CONSUMER_GROUP,
    MIB,
    Daemon,
    DecisionTrace,
    Figures,
    Record,
    compacted_topic,
    create_topic,
    daemon,
    grant_sidecar_acls_to,
    is_open,
    is_valid,
    produce_records,
    read_topic,
    signed_snapshot,
    unknown_because,
    wait_for_decision,
)
from tests.real_broker.kafka_helpers import produce
from tests.real_fs.real_mounts import Mounts, fill, fill_to_the_last_byte, statvfs_sizes

pytestmark = [pytest.mark.real_broker, pytest.mark.real_fs]

FIGURES = Figures()
SKEW_TOPIC = "__vq_skew_snapshots"
REPLAY_TOPIC = "__vq_replay_snapshots"
VOLUME_SIZE = "512m"
SOFT_PERCENT, HARD_PERCENT = 32.0, 30.0
"""The broker's own sidecar: THROTTLE below 32 % free, PAUSE below 30 % free."""
SKEW_S = 300.0
MAX_CLOCK_SKEW_S = 5.0
"""The decider's default max-clock-skew (docs/decision-rule.md)."""


@dataclass
class DataCluster:
    kafka: LocalKafkaCluster
    base: Path
    log_dirs: list[Path]
    victim: Path
    """The log dir of the burst topic: the volume the burst fills and Kafka takes offline."""
    survivor: Path
    sidecar: Daemon
    callback_log: CallbackLog
    trace: DecisionTrace
    burst_topic: str
    survivor_topic: str
    replay_volume: Path
    daemons: list[Daemon] = field(default_factory=list)

    def start(self, process: Daemon) -> Daemon:
        self.daemons.append(process)
        process.start()
        return process


def partition_dir(log_dirs: list[Path], topic: str) -> Path:
    found = [log_dir for log_dir in log_dirs if (log_dir / f"{topic}-0").is_dir()]
    assert len(found) == 1, (topic, found)
    return found[0]


def on_disk(log_dirs: list[Path], topic: str) -> Callable[[], bool]:
    return lambda: any((log_dir / f"{topic}-0").is_dir() for log_dir in log_dirs)


def topic_on(kafka: LocalKafkaCluster, log_dirs: list[Path], prefix: str, wanted: Path) -> str:
    """Create ``prefix-0``, ``prefix-1``... until one lands in ``wanted`` (Kafka places a new
    partition in the log dir holding the fewest)."""
    for index in range(4):
        name = f"{prefix}-{index}"
        create_topic(kafka, name, {"segment.bytes": str(16 * MIB)})
        wait_for(f"{name} on disk", on_disk(log_dirs, name), 30)
        if partition_dir(log_dirs, name) == wanted:
            return name
    raise AssertionError(f"no {prefix} topic landed in {wanted}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DataCluster]:
    jar = require_plugin_jar()
    base = tmp_path_factory.mktemp("data-faults")
    decision_file = base / "decision.json"
    with Mounts() as mounts:
        volumes = [mounts.tmpfs(base / f"volume-{name}", VOLUME_SIZE) for name in "ab"]
        replay_volume = mounts.tmpfs(base / "replay-volume", "32m")
        log_dirs = [volume / "kafka-logs" for volume in volumes]
        excluded = ";".join(
            f"User:{name}" for name in ("publisher", "consumer", "admin", "kafka-0")
        )
        properties = {
            # OPEN means no quota to speak of: a burst is as fast as the machine.
            **callback_properties(decision_file, base_rate=1024 * MIB),
            "volume.quota.excluded.principals": excluded,
        }
        kafka = LocalKafkaCluster(
            base / "kafka",
            broker_count=1,
            log_dirs=[log_dirs],
            per_broker_properties=[properties],
            extra_classpath=[jar],
        )
        with kafka:
            compacted_topic(kafka, SNAPSHOT_TOPIC)
            wait_for("the snapshot topic on disk", on_disk(log_dirs, SNAPSHOT_TOPIC), 30)
            survivor = partition_dir(log_dirs, SNAPSHOT_TOPIC)
            victim = next(d for d in log_dirs if d != survivor)
            burst_topic = topic_on(kafka, log_dirs, "burst", victim)
            survivor_topic = topic_on(kafka, log_dirs, "survivor", survivor)
            for topic in (SKEW_TOPIC, REPLAY_TOPIC):
                compacted_topic(kafka, topic)
            grant_sidecar_acls(kafka)
            for topic in (SKEW_TOPIC, REPLAY_TOPIC):
                grant_volume_quota_acls(kafka, topic, consumer_group=CONSUMER_GROUP)
            kafka.pki.issue("kafka-0")
            grant_sidecar_acls_to(kafka, "User:kafka-0", [REPLAY_TOPIC])
            issue_client(kafka, "app-burst", topics_write=[burst_topic])
            sidecar = daemon(
                kafka,
                command="sidecar",
                broker_id=0,
                log_dirs=log_dirs,
                decision_file=decision_file,
                log_file=base / "sidecar.log",
                topic=SNAPSHOT_TOPIC,
                extra={
                    "VOLUME_QUOTA_SOFT_LIMIT": f"MinFreePercentage:{SOFT_PERCENT}",
                    "VOLUME_QUOTA_HARD_LIMIT": f"MinFreePercentage:{HARD_PERCENT}",
                },
            )
            trace = DecisionTrace(decision_file, interval_s=0.02)
            started = DataCluster(
                kafka,
                base,
                log_dirs,
                victim,
                survivor,
                sidecar,
                CallbackLog(kafka.broker_log(0)),
                trace,
                burst_topic,
                survivor_topic,
                replay_volume,
            )
            try:
                started.start(sidecar)
                trace.start()
                wait_for_decision(decision_file, "the broker's decision OPEN", is_open, 90)
                yield started
            finally:
                trace.stop()
                for process in started.daemons:
                    process.stop()


# ------------------------------------------------------------------ clock skew


def unknown_as(kind: ReasonKind) -> Callable[[QuotaDecision], bool]:
    def check(decision: QuotaDecision) -> bool:
        return (
            decision.state is QuotaState.PAUSE
            and decision.caused_by_missing_data
            and unknown_because(decision, 0) is kind
        )

    return check


def skew_publisher(cluster: DataCluster, offset_s: float) -> Daemon:
    """Broker 0's publisher on the skew topic, its clock ``offset_s`` off."""
    data = cluster.base / "skew-data"
    data.mkdir(exist_ok=True)
    return daemon(
        cluster.kafka,
        command="publish",
        broker_id=0,
        log_dirs=[data],
        decision_file=cluster.base / "unused.json",
        log_file=cluster.base / "skew-publisher.log",
        topic=SKEW_TOPIC,
        clock_offset_s=offset_s,
    )


@dataclass
class SkewRig:
    """Broker 0's publisher on a topic of its own, whose clock the test sets, and a decider
    with a true clock standing for every other broker."""

    cluster: DataCluster
    observer: Daemon
    trace: DecisionTrace
    publisher: Daemon

    @property
    def decision_file(self) -> Path:
        return self.trace.path

    def switch_to(self, offset_s: float) -> float:
        """Restart the publisher with its clock ``offset_s`` off; the moment it was stopped."""
        self.publisher.stop()
        switched = time.monotonic()
        self.publisher = self.cluster.start(skew_publisher(self.cluster, offset_s))
        return switched

    def wait(self, description: str, condition: Callable[[QuotaDecision], bool]) -> None:
        wait_for_decision(self.decision_file, description, condition, STALE_AFTER_S + 20)


@pytest.fixture(scope="module")
def skew(cluster: DataCluster) -> Iterator[SkewRig]:
    others = cluster.base / "skew-others.json"
    observer = daemon(
        cluster.kafka,
        command="decide",
        broker_id=0,
        log_dirs=[cluster.base],
        decision_file=others,
        log_file=cluster.base / "skew-observer.log",
        topic=SKEW_TOPIC,
        tls=cluster.kafka.identity_files("consumer"),
    )
    trace = DecisionTrace(others).start()
    cluster.start(observer)
    rig = SkewRig(cluster, observer, trace, cluster.start(skew_publisher(cluster, 0)))
    try:
        wait_for_decision(others, "OPEN with a true clock", is_open, 60)
        yield rig
    finally:
        trace.stop()
        rig.publisher.stop()
        observer.stop()


@pytest.mark.timeout(120)
def test_a_publisher_five_minutes_behind_fails_safe_and_recovers_with_its_clock(
    skew: SkewRig,
) -> None:
    """Every snapshot of the lagging publisher is older than its last true one: ignored, so the
    broker goes stale; a true clock's next snapshot is newer again."""
    switched = skew.switch_to(-SKEW_S)
    skew.wait("PAUSE, broker 0 stale", unknown_as(ReasonKind.STALE))
    to_unknown = time.monotonic() - switched
    superseded = skew.observer.metric("volume_quota_snapshot_messages_total", outcome="superseded")
    assert superseded is not None, "the decider counts what it reads"
    assert superseded >= 1, "the skewed snapshots were read, and ignored"
    assert to_unknown <= STALE_AFTER_S + 10, to_unknown
    switched = skew.switch_to(0)
    skew.wait("OPEN once the clock is right", is_open)
    FIGURES.record("skew_minus_5min_to_unknown_s", to_unknown)
    FIGURES.record("skew_minus_5min_clock_fixed_to_open_s", time.monotonic() - switched)


@pytest.mark.timeout(120)
def test_a_publisher_five_minutes_ahead_fails_safe_and_recovers_with_its_clock(
    skew: SkewRig,
) -> None:
    """Its snapshots are dated beyond max-clock-skew on arrival: refused, the broker unknown at
    once. Put right, its next snapshot is trusted again (the pure rule:
    tests/consumer/test_cluster_state.py, the refused future snapshot)."""
    switched = skew.switch_to(SKEW_S)
    skew.wait("PAUSE, broker 0 in the future", unknown_as(ReasonKind.FUTURE))
    to_unknown = time.monotonic() - switched
    refused = skew.observer.metric("volume_quota_snapshot_messages_total", outcome="future_dated")
    assert refused is not None
    assert refused >= 1, "the skewed snapshots were read, and refused"
    decision = read_decision(skew.decision_file)
    assert decision is not None
    future_at = next(r.snapshot_at for r in decision.reasons if r.broker_id == 0)
    assert future_at is not None
    assert (future_at - datetime.now(UTC)).total_seconds() > SKEW_S / 2, "the refused date"

    switched = skew.switch_to(0)
    skew.wait("OPEN once the clock is right", is_open)
    FIGURES.record("skew_plus_5min_to_unknown_s", to_unknown)
    FIGURES.record("skew_plus_5min_clock_fixed_to_open_s", time.monotonic() - switched)


# ------------------------------------------------------------------ replays


REPLAY_SOFT_FREE, REPLAY_HARD_FREE = 16 * MIB, 8 * MIB


def replay_decider(cluster: DataCluster) -> Daemon:
    """A decider on the replay topic that requires signatures (the brokers' own subjects)."""
    return daemon(
        cluster.kafka,
        command="decide",
        broker_id=0,
        log_dirs=[cluster.replay_volume],
        decision_file=cluster.base / "replay-others.json",
        log_file=cluster.base / "replay-observer.log",
        topic=REPLAY_TOPIC,
        tls=cluster.kafka.identity_files("consumer"),
        extra={
            "VOLUME_QUOTA_SNAPSHOT_SIGNATURES": "require",
            "VOLUME_QUOTA_SIGNER_IDENTITIES": subject_of("kafka-{broker}"),
        },
    )


@dataclass
class ReplayRig:
    """Broker 0's publisher (signing as kafka-0) measuring a 32 MiB tmpfs, on a topic of its
    own, and a decider that requires signatures: a replay carries a valid signature."""

    cluster: DataCluster
    publisher: Daemon
    decider: Daemon
    trace: DecisionTrace
    capacity: int

    def snapshots(self) -> list[tuple[Record, VolumeSnapshot]]:
        """Broker 0's records on the topic, as they are (signature headers included)."""
        found = []
        for record in read_topic(self.cluster.kafka.client_config("admin"), REPLAY_TOPIC):
            if record.key == b"0" and record.value is not None:
                snapshot = decode_snapshot(record.value, record.key)
                assert isinstance(snapshot, VolumeSnapshot)
                found.append((record, snapshot))
        assert found, "no snapshot of broker 0 on the topic"
        return found

    def signed(self, at: datetime, free: int) -> Record:
        """What broker 0's publisher signed at ``at`` (its own key): a replay, not a forgery."""
        return signed_snapshot(
            self.cluster.kafka.identity_files("kafka-0"),
            0,
            at=at,
            capacity=self.capacity,
            free=free,
            soft_free=REPLAY_SOFT_FREE,
            hard_free=REPLAY_HARD_FREE,
        )

    def inject(self, records: list[Record]) -> None:
        produce_records(self.cluster.kafka.client_config("kafka-0"), REPLAY_TOPIC, records)

    def counted(self, outcome: str) -> float:
        metric = "volume_quota_snapshot_messages_total"
        return self.decider.metric(metric, outcome=outcome) or 0.0

    def valid_signatures(self) -> float:
        metric = "volume_quota_snapshot_signature_checks_total"
        return self.decider.metric(metric, outcome="valid") or 0.0


def breach(decision: QuotaDecision) -> bool:
    return decision.state is QuotaState.PAUSE and any(
        r.kind is ReasonKind.LIMIT and r.broker_id == 0 for r in decision.reasons
    )


@pytest.fixture(scope="module")
def replay(cluster: DataCluster) -> Iterator[ReplayRig]:
    capacity, _ = statvfs_sizes(cluster.replay_volume)
    publisher = daemon(
        cluster.kafka,
        command="publish",
        broker_id=0,
        log_dirs=[cluster.replay_volume],
        decision_file=cluster.base / "unused.json",
        log_file=cluster.base / "replay-publisher.log",
        topic=REPLAY_TOPIC,
        tls=cluster.kafka.identity_files("kafka-0"),
        extra={
            "VOLUME_QUOTA_SOFT_LIMIT": f"MinFreeBytes:{REPLAY_SOFT_FREE}",
            "VOLUME_QUOTA_HARD_LIMIT": f"MinFreeBytes:{REPLAY_HARD_FREE}",
        },
    )
    decider = replay_decider(cluster)
    trace = DecisionTrace(decider.decision_file).start()
    rig = ReplayRig(cluster, cluster.start(publisher), cluster.start(decider), trace, capacity)
    try:
        wait_for_decision(trace.path, "OPEN", is_open, 60)
        yield rig
    finally:
        trace.stop()
        rig.decider.stop()
        publisher.stop()


@pytest.mark.timeout(120)
def test_replays_duplicates_and_late_snapshots_never_clear_a_breach(replay: ReplayRig) -> None:
    old_fine, _ = replay.snapshots()[-1]  # a genuine "all fine", signature and all
    filled = time.monotonic()
    fill(replay.cluster.replay_volume, "filler.bin", replay.capacity - 4 * MIB)
    wait_for_decision(replay.trace.path, "PAUSE for broker 0's full volume", breach, 20)
    fill_to_pause = time.monotonic() - filled
    full, full_snapshot = replay.snapshots()[-1]

    superseded = replay.counted("superseded")
    valid = replay.valid_signatures()
    injected = time.monotonic()
    replays = [
        full,  # a duplicate of the newest
        old_fine,  # a genuine older "all fine", replayed
        replay.signed(datetime.now(UTC) - timedelta(days=7), replay.capacity),  # a week old
        replay.signed(full_snapshot.snapshot_at - timedelta(seconds=1), replay.capacity),  # late
    ]
    replay.inject(replays)
    wait_for(
        "the decider to read the three older snapshots",
        lambda: replay.counted("superseded") >= superseded + 3,
        20,
    )
    time.sleep(2)
    seen = replay.trace.labels(injected)
    assert seen == ["PAUSE(limit)"], f"the replays changed the decision: {seen}"
    assert replay.valid_signatures() >= valid + len(replays), "every replay was validly signed"

    # A decider reading the topic anew meets the replays after the breach: still PAUSE.
    replay.decider.stop()
    restarted = time.monotonic()
    replay.decider = replay.cluster.start(replay_decider(replay.cluster))
    wait_for("the new decider ready", lambda: replay.decider.ready()[0], 60)
    time.sleep(1)
    anew = replay.trace.labels(restarted)
    assert not [label for label in anew if label.startswith("OPEN")], anew
    now = read_decision(replay.trace.path)
    assert now is not None
    assert breach(now), anew
    FIGURES.record("replay_fill_to_pause_s", fill_to_pause)
    FIGURES.record("replay_records_injected_during_breach", float(len(replays)))
    FIGURES.record("replay_decision_changes_during_breach", float(len(seen) - 1))


@pytest.mark.timeout(120)
def test_a_replayed_old_breach_does_not_pause_a_healthy_cluster(replay: ReplayRig) -> None:
    """The control first: a truly newer snapshot does clear the breach."""
    (replay.cluster.replay_volume / "filler.bin").unlink(missing_ok=True)
    wait_for_decision(replay.trace.path, "OPEN once the volume is freed", is_open, 30)
    full = [
        record
        for record, snapshot in replay.snapshots()
        if snapshot.volumes[0].capacity - snapshot.volumes[0].consumed <= REPLAY_HARD_FREE
    ][-1]  # the newest breach broker 0 published itself
    old_breaches = [full, replay.signed(datetime.now(UTC) - timedelta(days=7), free=0)]
    superseded = replay.counted("superseded")
    injected = time.monotonic()
    replay.inject(old_breaches)
    wait_for("the old breaches read", lambda: replay.counted("superseded") >= superseded + 2, 20)
    time.sleep(2)
    seen = replay.trace.labels(injected)
    assert seen == ["OPEN"], seen
    FIGURES.record("replay_old_breaches_injected_while_open", float(len(old_breaches)))
    FIGURES.record("replay_decision_changes_while_open", float(len(seen) - 1))


# ------------------------------------------------------------------ a burst, then KIP-112


@dataclass
class FreeSpaceSampler:
    """statvfs of one volume every ``interval_s``, in a thread of its own."""

    path: Path
    interval_s: float = 0.01
    samples: list[tuple[float, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> FreeSpaceSampler:
        self._thread = threading.Thread(target=self._run, name="free-space", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.samples.append((time.monotonic(), statvfs_sizes(self.path)[1]))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def free_at(self, moment: float) -> int:
        """Free bytes at the last sample taken at or before ``moment``."""
        before = [free for at, free in list(self.samples) if at <= moment]
        return before[-1] if before else self.samples[0][1]

    def first_at_or_below(self, free: int) -> float | None:
        return next((at for at, value in list(self.samples) if value <= free), None)


def limit_pause(decision: QuotaDecision) -> bool:
    return decision.state is QuotaState.PAUSE and not decision.caused_by_missing_data


@pytest.mark.timeout(180)
def test_a_burst_between_two_samples_is_paused_before_the_volume_fills(
    cluster: DataCluster,
) -> None:
    volume_dir = cluster.victim.parent
    capacity, free = statvfs_sizes(volume_dir)
    hard_free = capacity * HARD_PERCENT / 100
    fill(volume_dir, "filler.bin", free - int(capacity * 0.35))  # 35 % free: OPEN
    wait_for_decision(cluster.trace.path, "OPEN before the burst", is_open, 30)
    sampler = FreeSpaceSampler(volume_dir).start()
    probe = RateProbe(
        cluster.kafka.client_config("app-burst"), cluster.burst_topic, message_size=64 * 1024
    )
    log = cluster.callback_log
    log.mark()
    time.sleep(0.3)
    started = time.monotonic()
    probe.start()
    try:
        wait_for("the callback to apply PAUSE", lambda: log.applied(QuotaState.PAUSE), 60, 0.02)
        applied = time.monotonic()
        time.sleep(15)  # the descent: the step-down and the bytes already in the quota window
    finally:
        probe.stop()
        sampler.stop()
    crossed = sampler.first_at_or_below(int(hard_free))
    assert crossed is not None, "the burst crossed the hard limit"
    written = cluster.trace.first(crossed, limit_pause)
    assert written is not None, cluster.trace.labels(started)
    states = cluster.trace.labels(started)
    free_start, free_applied = sampler.free_at(started), sampler.free_at(applied)
    min_free = min(free for _, free in sampler.samples)
    burst_rate = (free_start - sampler.free_at(crossed)) / max(crossed - started, 1e-3)
    late = sum(size for at, size in list(probe.deliveries) if applied + 5 <= at <= applied + 15)
    late_rate = late / 10

    assert written <= 10, f"PAUSE written {written:.1f}s after the crossing"
    assert applied - crossed <= 12, f"PAUSE applied {applied - crossed:.1f}s after the crossing"
    assert min_free > 0, "the volume never filled"
    assert late_rate < 0.2 * burst_rate, (late_rate, burst_rate)
    assert states[0] == "OPEN", states
    assert states[-1] == "PAUSE(limit)", states
    percent = 100 / capacity
    FIGURES.record("burst_rate_mib_s", burst_rate / MIB)
    FIGURES.record("burst_states_seen", " -> ".join(states))
    FIGURES.record("burst_crossing_to_pause_written_s", written)
    FIGURES.record("burst_crossing_to_pause_applied_s", applied - crossed)
    FIGURES.record("burst_share_of_volume_before_pause_pct", (free_start - free_applied) * percent)
    FIGURES.record("burst_past_hard_limit_before_pause_pct", (hard_free - free_applied) * percent)
    FIGURES.record("burst_after_pause_pct", (free_applied - min_free) * percent)
    FIGURES.record("burst_min_free_pct", min_free * percent)
    FIGURES.record("burst_rate_5_to_15s_after_pause_kib_s", late_rate / 1024)
    FIGURES.record("burst_past_hard_limit_before_pause_mib", (hard_free - free_applied) / MIB)


def fill_up(directory: Path) -> None:
    """Leave no byte free, even while the broker goes on appending to the volume."""
    fill_to_the_last_byte(directory, "filler-rest.bin")
    assert statvfs_sizes(directory)[1] == 0


def survey_admin(kafka: LocalKafkaCluster) -> LogDirAdmin:
    files = kafka.identity_files("admin")
    admin: LogDirAdmin = KafkaAdminClient(
        bootstrap_servers=kafka.bootstrap_servers.split(","),
        security_protocol="SSL",
        ssl_cafile=str(files.ca),
        ssl_certfile=str(files.cert),
        ssl_keyfile=str(files.key),
        ssl_check_hostname=False,
        request_timeout_ms=10000,
    )
    return admin


@pytest.mark.timeout(180)
def test_a_log_dir_kafka_takes_offline_pauses_and_the_broker_serves_the_other(
    cluster: DataCluster,
) -> None:
    kafka, victim = cluster.kafka, cluster.victim
    volume_dir = victim.parent
    log = CallbackLog(kafka.broker_log(0))
    fill_up(volume_dir)
    filled = time.monotonic()
    admin = kafka.client_config("admin")
    # More than the last, partly used page of the active segment can hold.
    records = [(b"k", b"x" * 64 * 1024)] * 16
    refused = produce(admin, cluster.burst_topic, records, timeout_s=10)
    assert not refused.all_delivered, "a full log dir takes no write"
    wait_for(
        "Kafka to take the log dir offline",
        lambda: log.seen(f"Stopping serving logs in dir {victim}"),
        30,
    )
    assert kafka.is_running(0), "the broker keeps running"
    served = produce(admin, cluster.survivor_topic, [(b"k", b"still here")], timeout_s=30)
    assert served.all_delivered, served.delivery_errors

    def full_victim(decision: QuotaDecision) -> bool:
        return limit_pause(decision) and any(
            r.kind is ReasonKind.LIMIT
            and r.free_bytes == 0
            and str(volume_dir) in (r.volume_name or "")
            for r in decision.reasons
        )

    wait_for_decision(cluster.trace.path, "PAUSE for the full volume", full_victim, 30)
    time.sleep(0.1)  # the trace's next sample
    to_pause = cluster.trace.first(filled, full_victim)
    assert to_pause is not None
    survey = LogDirSurvey(lambda: survey_admin(kafka))
    try:
        measured = {m.volume.name: m for m in survey.measure()[0]}
        assert measured[str(victim)].free_bytes == 0, measured  # offline: reported full
        assert measured[str(cluster.survivor)].free_bytes > 0, measured

        # The space comes back, the dir stays offline until the broker restarts (KIP-112).
        for filler in volume_dir.glob("filler*.bin"):
            filler.unlink()
        freed = time.monotonic()

        def sidecar_sees_space(decision: QuotaDecision) -> bool:
            return is_valid(decision) and not any(
                r.kind is ReasonKind.LIMIT and str(volume_dir) in (r.volume_name or "")
                for r in decision.reasons
            )

        wait_for_decision(
            cluster.trace.path, "the sidecar to report the space", sidecar_sees_space, 30
        )
        after = read_decision(cluster.trace.path)
        still = {m.volume.name: m for m in survey.measure()[0]}
        assert still[str(victim)].free_bytes == 0, "the survey still reports the offline dir full"
        assert log.seen("offline")
    finally:
        survey.close()
    assert kafka.is_running(0)
    FIGURES.record("kip112_full_to_pause_s", to_pause)
    FIGURES.record("kip112_space_freed_to_sidecar_release_s", time.monotonic() - freed)
    FIGURES.record(
        "kip112_sidecar_decision_after_space_freed_dir_still_offline",
        "unreadable" if after is None else after.state.value,
    )
