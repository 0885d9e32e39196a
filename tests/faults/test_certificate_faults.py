"""Certificate faults on a real broker: a sidecar's certificate rotated under load, replaced by an
expired one, by one from another CA, and its CA bundle replaced by the wrong CA's.

One Kafka node with the quota callback reading the sidecar's decision file; the sidecar runs as
``vq-sidecar`` with its TLS files in a directory the test swaps files in, as a renewal does; a
second decider (``decide`` as ``consumer``, good certificates) stands for every other broker.

What must happen (docs/decision-rule.md, docs/reliability.md):
- a rotation to a good certificate is picked up by both roles without a restart, and the
  decision never leaves OPEN (no fail-safe, no missed heartbeat);
- a rotation to an expired certificate is refused by both roles (it could never connect): they
  keep their working clients, say so once in the log, and nothing fails safe; a good renewal
  after it is taken;
- with a certificate the brokers refuse (another CA) or a CA bundle that does not verify the
  brokers, the sidecar can neither publish nor read: its broker's snapshot goes stale, every
  decider fails safe (PAUSE, the broker unknown), the broker's callback applies PAUSE, and the
  sidecar says so (/readyz); it keeps running, and a good renewal heals it without a restart.
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from local_cluster import SNAPSHOT_TOPIC, IdentityFiles, LocalKafkaCluster, grant_volume_quota_acls
from local_cluster.clients import issue_client
from schemas import VolumeSnapshot, decode_snapshot
from schemas.decision import QuotaDecision, QuotaState, ReasonKind
from tests.e2e.cluster_harness import (
    BASE_RATE,
    STALE_AFTER_S,
    CallbackLog,
    RateProbe,
    callback_properties,
    create_data_topic,
    require_plugin_jar,
    wait_for,
)
from tests.faults.data_harness import (
    CONSUMER_GROUP,
    Daemon,
    DecisionTrace,
    Figures,
    TlsDir,
    compacted_topic,
    daemon,
    grant_sidecar_acls_to,
    is_open,
    read_topic,
    snapshot_copy,
    unknown_because,
    wait_for_decision,
)

pytestmark = [pytest.mark.real_broker]

IDENTITY = "vq-sidecar"
ROTATIONS = 3
FIGURES = Figures()


@dataclass
class CertCluster:
    kafka: LocalKafkaCluster
    base: Path
    tls: TlsDir
    sidecar: Daemon
    observer: Daemon
    own: DecisionTrace
    others: DecisionTrace
    callback_log: CallbackLog
    probe: RateProbe
    copies: itertools.count[int] = field(default_factory=itertools.count)

    def issue(self, name: str = IDENTITY, **options: object) -> IdentityFiles:
        """(Re)issue ``name`` and keep a copy of the result (the PKI re-issues in place)."""
        files = self.kafka.pki.issue(name, **options)  # type: ignore[arg-type]
        return snapshot_copy(files, self.base / "issued" / f"{name}-{next(self.copies)}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CertCluster]:
    jar = require_plugin_jar()
    base = tmp_path_factory.mktemp("cert-faults")
    own_file, others_file = base / "decision.json", base / "others.json"
    properties = {
        **callback_properties(own_file),
        "volume.quota.excluded.principals": f"User:{IDENTITY};User:consumer;User:admin",
    }
    with LocalKafkaCluster(
        base / "kafka", broker_count=1, per_broker_properties=[properties], extra_classpath=[jar]
    ) as kafka:
        compacted_topic(kafka, SNAPSHOT_TOPIC)
        grant_volume_quota_acls(kafka, consumer_group=CONSUMER_GROUP)
        kafka.pki.issue(IDENTITY)
        grant_sidecar_acls_to(kafka, f"User:{IDENTITY}", [SNAPSHOT_TOPIC])
        create_data_topic(kafka, "load", leader=0)
        issue_client(kafka, "app-load", topics_write=["load"])
        tls = TlsDir(base / "sidecar-tls", snapshot_copy(kafka.pki.identity(IDENTITY), base / "v0"))
        data_dir = kafka.broker_files(0).data_dirs[0]
        sidecar = daemon(
            kafka,
            command="sidecar",
            broker_id=0,
            log_dirs=[data_dir],
            decision_file=own_file,
            log_file=base / "sidecar.log",
            topic=SNAPSHOT_TOPIC,
            tls=tls.files,
        )
        observer = daemon(
            kafka,
            command="decide",
            broker_id=0,
            log_dirs=[data_dir],
            decision_file=others_file,
            log_file=base / "observer.log",
            topic=SNAPSHOT_TOPIC,
            tls=kafka.identity_files("consumer"),
        )
        own, others = DecisionTrace(own_file).start(), DecisionTrace(others_file).start()
        probe = RateProbe(kafka.client_config("app-load"), "load")
        try:
            sidecar.start()
            observer.start()
            for path in (own_file, others_file):
                wait_for_decision(path, f"{path.name} OPEN", is_open, 90)
            # The callback polls the file: it may still apply the sidecar's first decision
            # (PAUSE, its data missing) after the file says OPEN. A test starts once it
            # applied OPEN, so that a PAUSE logged during the test is the test's.
            callback_log = CallbackLog(kafka.broker_log(0))
            wait_for(
                "the callback to apply OPEN",
                lambda: callback_log.last_applied() is QuotaState.OPEN,
                30,
            )
            probe.start()
            yield CertCluster(kafka, base, tls, sidecar, observer, own, others, callback_log, probe)
        finally:
            probe.stop()
            own.stop()
            others.stop()
            sidecar.stop()
            observer.stop()


def snapshot_times(kafka: LocalKafkaCluster) -> list[dt.datetime]:
    times = []
    for record in read_topic(kafka.client_config("admin"), SNAPSHOT_TOPIC):
        if record.key == b"0" and record.value is not None:
            snapshot = decode_snapshot(record.value, record.key)
            if isinstance(snapshot, VolumeSnapshot):
                times.append(snapshot.snapshot_at)
    return times


@pytest.mark.timeout(150)
def test_rotation_under_load_keeps_every_decision_open(cluster: CertCluster) -> None:
    """Three renewals (new key each), 4 s apart, while a producer runs at the base quota."""
    cluster.callback_log.mark()
    time.sleep(3)  # the producer up to speed
    start, wall_start = time.monotonic(), dt.datetime.now(dt.UTC)
    for _ in range(ROTATIONS):
        cluster.tls.install(cluster.issue(new_key=True))
        time.sleep(4)
    sidecar = cluster.sidecar
    rebuilt = "volume_quota_publisher_certificate_reloads_total"
    deadline = time.monotonic() + 20
    while (sidecar.metric(rebuilt) or 0) < ROTATIONS and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(2)
    elapsed = time.monotonic() - start
    rate = cluster.probe.rate(elapsed)

    assert sidecar.metric(rebuilt) == ROTATIONS, sidecar.metric(rebuilt)
    consumer_rebuilds = [
        event
        for event in sidecar.events()
        if event.get("event") == "TLS files rotated: Kafka clients and signature trust rebuilt"
    ]
    assert len(consumer_rebuilds) == ROTATIONS, consumer_rebuilds
    for trace in (cluster.own, cluster.others):
        seen = trace.labels(start)
        assert seen == ["OPEN"], f"{trace.path.name} went through {seen}"
    assert not cluster.callback_log.seen("no valid decision")
    assert not cluster.callback_log.applied(QuotaState.PAUSE)
    assert sidecar.ready()[0], sidecar.ready()[1]
    assert rate >= 0.5 * BASE_RATE, f"{rate / 1024:.0f} KiB/s during the rotations"
    times = [t for t in snapshot_times(cluster.kafka) if t >= wall_start]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert len(times) >= 5, times
    assert max(gaps) < STALE_AFTER_S / 2, gaps
    FIGURES.record("cert_rotation_count", ROTATIONS)
    FIGURES.record("cert_rotation_max_snapshot_gap_s", max(gaps))
    FIGURES.record("cert_rotation_producer_rate_kib_s", rate / 1024)


def pause_for_missing(decision: QuotaDecision) -> bool:
    return (
        decision.state is QuotaState.PAUSE
        and decision.caused_by_missing_data
        and unknown_because(decision, 0) is ReasonKind.STALE
    )


def callback_pauses(log: CallbackLog) -> bool:
    """The callback applies PAUSE: its decision's, or on-missing once the decision expired."""
    return log.applied(QuotaState.PAUSE) or log.seen("applying on-missing PAUSE")


def bad_files(cluster: CertCluster, fault: str) -> tuple[IdentityFiles, Path | None]:
    """The files a botched renewal leaves: (identity, CA bundle instead of the identity's)."""
    if fault == "another_ca":
        return cluster.issue(f"rogue-{IDENTITY}"), None
    # The client's CA bundle is another CA's: the client refuses the brokers' certificates.
    return cluster.issue(), cluster.kafka.pki.directory / "rogue-ca" / "ca.pem"


OWN_FILE_EXPIRED_S: dict[str, float] = {}
"""Per fault: how long the sidecar's own decision file was past its validUntil."""


REFUSED_BY_PUBLISHER = "TLS files changed but are not usable; keeping the current producer"
REFUSED_BY_DECIDER = "rotated TLS files refused; keeping the Kafka clients"


@pytest.mark.timeout(120)
def test_a_rotation_to_an_expired_certificate_is_refused_and_nothing_fails_safe(
    cluster: CertCluster,
) -> None:
    sidecar = cluster.sidecar
    rebuilt = "volume_quota_publisher_certificate_reloads_total"
    reloads = sidecar.metric(rebuilt) or 0
    seen_before = len(sidecar.events())
    cluster.callback_log.mark()
    swapped = time.monotonic()
    expired = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    cluster.tls.install(cluster.issue(not_after=expired))

    def refusals() -> list[dict[str, object]]:
        return [
            event
            for event in sidecar.events()[seen_before:]
            if event.get("event") in (REFUSED_BY_PUBLISHER, REFUSED_BY_DECIDER)
        ]

    wait_for("both roles to refuse the expired certificate", lambda: len(refusals()) >= 2, 20)
    refused = time.monotonic() - swapped
    time.sleep(STALE_AFTER_S + 5)  # a certificate taken would have failed safe by now
    events = refusals()
    assert {event["event"] for event in events} == {REFUSED_BY_PUBLISHER, REFUSED_BY_DECIDER}
    assert len(events) == 2, f"refused once per change, not once per turn: {events}"
    assert all("expired" in str(event.get("error")) for event in events), events
    for trace in (cluster.own, cluster.others):
        seen = trace.labels(swapped)
        assert seen == ["OPEN"], f"{trace.path.name} went through {seen}"
    assert not cluster.callback_log.applied(QuotaState.PAUSE)
    assert sidecar.ready()[0], sidecar.ready()[1]
    assert sidecar.metric(rebuilt) == reloads, "the producer was not rebuilt"
    remaining = sidecar.metric("volume_quota_client_certificate_remaining_seconds")
    assert remaining is not None
    assert remaining > 0, "the certificate in use is still the valid one"

    renewed = time.monotonic()
    cluster.tls.install(cluster.issue())
    wait_for("the renewal after it taken", lambda: sidecar.metric(rebuilt) == reloads + 1, 20)
    FIGURES.record("cert_expired_rotation_refused_by_both_roles_s", refused)
    FIGURES.record("cert_renewal_after_refused_taken_s", time.monotonic() - renewed)


@pytest.mark.timeout(150)
@pytest.mark.parametrize("fault", ["another_ca", "wrong_ca_bundle"])
def test_a_refused_certificate_fails_safe_everywhere_and_a_renewal_heals_it(
    cluster: CertCluster, fault: str
) -> None:
    sidecar = cluster.sidecar
    identity, ca = bad_files(cluster, fault)
    log = cluster.callback_log
    log.mark()
    swapped = time.monotonic()
    cluster.tls.install(identity, ca=ca)

    bound = STALE_AFTER_S + 20
    wait_for_decision(
        cluster.others.path, "the other decider to fail safe", pause_for_missing, bound
    )
    wait_for("the broker's callback to apply PAUSE", lambda: callback_pauses(log), bound)
    to_callback = time.monotonic() - swapped
    wait_for("the sidecar to report it", lambda: not sidecar.ready()[0], bound)
    to_unready = time.monotonic() - swapped
    time.sleep(0.3)  # the traces' next samples
    to_others = cluster.others.first(swapped, pause_for_missing)
    assert to_others is not None
    assert sidecar.running, "a refused certificate does not stop the sidecar"
    why = sidecar.ready()[1]
    seen = cluster.others.labels(swapped)
    assert "OPEN" not in seen[1:], f"no OPEN after the fail-safe: {seen}"
    own_seen = cluster.own.labels(swapped)
    # Broker 0's last snapshot (its publisher may send one more before it picks the bad files
    # up) is fresh for stale-after: an OPEN decided until then stands until its validUntil; no
    # valid OPEN after that.
    last_snapshot = max(snapshot_times(cluster.kafka))
    fresh_until = last_snapshot + dt.timedelta(seconds=STALE_AFTER_S + 1)
    late = [
        sample
        for sample in cluster.own.since(swapped)
        if sample.decision is not None
        and sample.decision.state is QuotaState.OPEN
        and sample.decision.decided_at > fresh_until
        and sample.decision.valid_until >= sample.wall
    ]
    assert not late, f"its own decision still a valid OPEN: {own_seen}"

    log.mark()
    renewed = time.monotonic()
    cluster.tls.install(cluster.issue())
    wait_for_decision(cluster.others.path, "the other decider OPEN", is_open, 60)
    wait_for_decision(cluster.own.path, "its own decision OPEN", is_open, 60)
    wait_for("the broker's callback to apply OPEN", lambda: log.applied(QuotaState.OPEN), 10)
    back = time.monotonic() - renewed
    time.sleep(0.3)
    healed = cluster.others.first(renewed, is_open)
    assert healed is not None
    assert sidecar.running
    OWN_FILE_EXPIRED_S[fault] = cluster.own.expired_seconds(swapped)
    FIGURES.record(f"cert_{fault}_to_pause_elsewhere_s", to_others)
    FIGURES.record(f"cert_{fault}_to_callback_pause_s", to_callback)
    FIGURES.record(f"cert_{fault}_to_unready_s", to_unready)
    FIGURES.record(f"cert_{fault}_own_file_expired_s", OWN_FILE_EXPIRED_S[fault])
    FIGURES.record(f"cert_{fault}_own_longest_write_gap_s", cluster.own.longest_write_gap(swapped))
    FIGURES.record(f"cert_{fault}_renewal_to_open_elsewhere_s", healed)
    FIGURES.record(f"cert_{fault}_renewal_to_open_everywhere_s", back)
    print(f"{fault}: others {seen}; own {own_seen}; readyz {why!r}")


@pytest.mark.timeout(10)
def test_the_sidecar_keeps_its_own_decision_file_valid_while_refused() -> None:
    assert OWN_FILE_EXPIRED_S, "the certificate faults ran"
    assert max(OWN_FILE_EXPIRED_S.values()) == 0.0, OWN_FILE_EXPIRED_S
