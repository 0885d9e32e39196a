"""From ``snapshot_signatures=accept`` to ``require`` on a running cluster, as an operator would.

Real parts only: three Kafka nodes whose quota callbacks read each broker's decision file, one
``volume-quota sidecar`` per broker (publisher and decider in one process, as the chart, the
systemd unit and Strimzi-less installs run it) and a producer writing all along. The
deployment starts as most do: every sidecar uses the one shared ``publisher`` certificate and
the deciders accept every snapshot. The upgrade follows the checklist in docs/reliability.md
("Moving from accept to require"), one sidecar restart at a time:

1. every publisher gets a certificate of its own (``CN=vq-publisher-<broker>``), still
   ``accept``;
2. every decider to ``warn`` with ``signer_identities``; the count of snapshots that are not
   validly signed stops growing;
3. every decider to ``require``;
4. the shared identity loses WRITE on the snapshot topic (test 5).

A watcher reads every decision file ten times a second during the whole upgrade: no broker's
decision may be PAUSE at any point. Then a forged, unsigned "all fine" for a full broker is
refused by every decider, the full broker's own identity retires it, and the control: a
publisher put back on the shared certificate under ``require`` PAUSEs every broker.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from local_cluster import (
    SNAPSHOT_TOPIC,
    LocalKafkaCluster,
    grant_sidecar_acls,
    issue_client,
    sidecar_acl_bindings,
    subject_of,
)
from local_cluster.ports import free_loopback_ports
from schemas.decision import QuotaDecision, QuotaState, ReasonKind
from tests.e2e.cluster_harness import (
    CallbackLog,
    RateProbe,
    Sidecar,
    callback_properties,
    create_data_topic,
    read_decision,
    require_plugin_jar,
    sidecar_environment,
    wait_for,
)
from tests.snapshot_factory import bytes_limit, snapshot_line, volume
from volume_quota.certificate_files import TlsFiles, load_signer

pytestmark = [pytest.mark.e2e, pytest.mark.real_broker, pytest.mark.timeout(900)]

BROKERS = 3
SIGNER_RULE = subject_of("vq-publisher-{broker}")
"""``signer_identities``: each publisher's certificate speaks for its own broker only."""
HEARTBEAT_S = 2
STALE_AFTER_S = 30
"""``stale_after`` and ``decision_valid_for`` at their defaults (the e2e harness shortens them to
10 s): a sidecar restart must end within ``stale_after`` minus a heartbeat, or its broker's last
snapshot goes stale on every decider and the on-missing PAUSE reaches every broker."""
WATCH_GAP_LIMIT_S = 1.0
"""Longest time the decision watcher may go without reading a file."""
QUIET_WINDOW_S = 4 * HEARTBEAT_S
"""How long the count of badly signed snapshots must stay put before ``require``."""
FULL_BROKER = 7
"""A broker that is not live and whose last (signed) word is "I am full": its breach holds."""


def identity_name(broker: int) -> str:
    return f"vq-publisher-{broker}"


@dataclass
class Sample:
    at: float
    broker: int
    decision: QuotaDecision | None


@dataclass
class DecisionWatch:
    """Every decision file, read ten times a second, from ``start`` to ``stop``."""

    files: list[Path]
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> DecisionWatch:
        self._thread = threading.Thread(target=self._run, name="decision-watch", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for broker, path in enumerate(self.files):
                self.samples.append(Sample(now, broker, read_decision(path)))
            self._stop.wait(0.1)

    def since(self, start: float) -> list[Sample]:
        return [sample for sample in list(self.samples) if sample.at >= start]

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


@dataclass
class UpgradeCluster:
    kafka: LocalKafkaCluster
    base: Path
    sidecars: list[Sidecar]
    metrics_ports: list[int]
    decision_files: list[Path]
    callback_logs: list[CallbackLog]
    probe: RateProbe
    watch: DecisionWatch
    restart_seconds: list[tuple[str, float]] = field(default_factory=list)
    """How long each restart took, from the stop to the new process's /readyz."""

    def restart(self, broker: int, settings: Mapping[str, str], step: str) -> None:
        """Restart one sidecar with ``settings`` added, the way an operator rolls a change out,
        and wait until its decider is ready again before the next one."""
        sidecar = self.sidecars[broker]
        stopped_at = time.monotonic()
        sidecar.stop()
        sidecar.environment = {**sidecar.environment, **settings}
        sidecar.log_file = self.base / f"sidecar-{broker}-{step}.log"
        sidecar.start()
        wait_for(
            f"sidecar {broker} ready after step {step!r} (log {sidecar.log_file})",
            lambda: ready(self.metrics_ports[broker]),
            90,
            interval_s=0.2,
        )
        self.restart_seconds.append((f"{step} {broker}", time.monotonic() - stopped_at))

    def signature_checks(self, broker: int) -> dict[str, float]:
        return signature_checks(self.metrics_ports[broker])


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


_CHECK_LINE = re.compile(
    r'^volume_quota_snapshot_signature_checks_total\{outcome="(?P<outcome>[a-z_]+)"\}'
    r" (?P<value>[0-9.e+]+)$",
    re.MULTILINE,
)


def signature_checks(port: int) -> dict[str, float]:
    """``volume_quota_snapshot_signature_checks_total`` by outcome, from a decider's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {match["outcome"]: float(match["value"]) for match in _CHECK_LINE.finditer(text)}


def not_valid(checks: Mapping[str, float]) -> float:
    return sum(value for outcome, value in checks.items() if outcome != "valid")


def describe(sample: Sample) -> str:
    decision = sample.decision
    if decision is None:
        return f"broker {sample.broker}: no readable decision"
    reasons = [
        f"{reason.kind.value}:{reason.broker_id}" + (f" {reason.detail}" if reason.detail else "")
        for reason in decision.reasons[:3]
    ]
    return (
        f"broker {sample.broker}: {decision.state.value} unknown={decision.unknown_brokers}"
        f" reasons={reasons}"
    )


def pause_episodes(samples: list[Sample], since: float) -> list[str]:
    """Each run of PAUSE samples per broker: when it started (s after ``since``), how long it
    lasted, and the first decision's reasons."""
    episodes: list[str] = []
    for broker in range(BROKERS):
        run: list[Sample] = []
        for sample in [s for s in samples if s.broker == broker] + [Sample(0, broker, None)]:
            paused = sample.decision is not None and sample.decision.state is QuotaState.PAUSE
            if paused:
                run.append(sample)
                continue
            if run:
                episodes.append(
                    f"{run[0].at - since:.1f} s: {run[-1].at - run[0].at + 0.1:.1f} s of"
                    f" {describe(run[0])}"
                )
                run = []
    return episodes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpgradeCluster]:
    jar = require_plugin_jar()
    base = tmp_path_factory.mktemp("signature-upgrade")
    decisions = base / "decisions"
    decisions.mkdir()
    decision_files = [decisions / f"broker-{index}.json" for index in range(BROKERS)]
    kafka = LocalKafkaCluster(
        base / "kafka",
        broker_count=BROKERS,
        per_broker_properties=[callback_properties(path) for path in decision_files],
        extra_classpath=[jar],
    )
    metrics_ports = free_loopback_ports(BROKERS)
    with kafka:
        logs = [CallbackLog(kafka.broker_log(index)) for index in range(BROKERS)]
        grant_sidecar_acls(kafka)
        # Today's deployment: one shared certificate (CN=publisher), signatures accepted.
        sidecars = [
            Sidecar(
                index,
                decision_files[index],
                sidecar_environment(
                    kafka,
                    index,
                    kafka.broker_files(index).data_dirs[0],
                    decision_files[index],
                    {
                        "VOLUME_QUOTA_METRICS_PORT": str(metrics_ports[index]),
                        "VOLUME_QUOTA_SNAPSHOT_SIGNATURES": "accept",
                        "VOLUME_QUOTA_HEARTBEAT_INTERVAL": f"{HEARTBEAT_S}s",
                        "VOLUME_QUOTA_STALE_AFTER": f"{STALE_AFTER_S}s",
                        "VOLUME_QUOTA_DECISION_VALID_FOR": f"{STALE_AFTER_S}s",
                    },
                ),
                base / f"sidecar-{index}-accept.log",
            )
            for index in range(BROKERS)
        ]
        watch = DecisionWatch(decision_files)
        probe: RateProbe | None = None
        try:
            for sidecar in sidecars:
                sidecar.start()
            wait_for(
                "every decision file OPEN and every decider ready",
                lambda: (
                    all(
                        (decision := read_decision(path)) is not None
                        and decision.state is QuotaState.OPEN
                        for path in decision_files
                    )
                    and all(ready(port) for port in metrics_ports)
                ),
                120,
                interval_s=0.5,
            )
            create_data_topic(kafka, "orders", 0)
            probe = RateProbe(kafka.client_config("admin"), "orders").start()
            watch.start()
            yield UpgradeCluster(
                kafka, base, sidecars, metrics_ports, decision_files, logs, probe, watch
            )
        finally:
            watch.stop()
            if probe is not None:
                probe.stop()
            for sidecar in sidecars:
                sidecar.stop()


def test_1_accept_to_require_one_sidecar_at_a_time_never_pauses_a_broker(
    cluster: UpgradeCluster,
) -> None:
    started = time.monotonic()
    for log in cluster.callback_logs:
        log.mark()

    # 1. Every publisher its own identity; signatures still accepted.
    for broker in range(BROKERS):
        name = identity_name(broker)
        files = issue_client(
            cluster.kafka, name, extra_bindings=sidecar_acl_bindings(f"User:{name}")
        )
        cluster.restart(
            broker,
            {
                "VOLUME_QUOTA_TLS_CERT_FILE": str(files.cert),
                "VOLUME_QUOTA_TLS_KEY_FILE": str(files.key),
            },
            "own-identity",
        )

    # 2. Deciders to warn, one at a time; then the count of snapshots not validly signed must
    #    stop growing (the replay at each start counts the old ones still on the topic).
    warn = {
        "VOLUME_QUOTA_SNAPSHOT_SIGNATURES": "warn",
        "VOLUME_QUOTA_SIGNER_IDENTITIES": SIGNER_RULE,
    }
    for broker in range(BROKERS):
        cluster.restart(broker, warn, "warn")
    before = [cluster.signature_checks(broker) for broker in range(BROKERS)]
    time.sleep(QUIET_WINDOW_S)
    after = [cluster.signature_checks(broker) for broker in range(BROKERS)]
    for broker in range(BROKERS):
        assert not_valid(after[broker]) == not_valid(before[broker]), (broker, before, after)
        assert after[broker].get("valid", 0) > before[broker].get("valid", 0), (broker, after)

    # 3. Deciders to require, one at a time.
    for broker in range(BROKERS):
        cluster.restart(broker, {"VOLUME_QUOTA_SNAPSHOT_SIGNATURES": "require"}, "require")
    time.sleep(QUIET_WINDOW_S)  # past a few heartbeats under require

    samples = cluster.watch.since(started)
    # The watcher kept reading every file through the whole upgrade: no gap in which a PAUSE
    # could have come and gone unseen (it reads every 0.1 s; allow for a loaded machine).
    ended = time.monotonic()
    for broker in range(BROKERS):
        times = [started] + [s.at for s in samples if s.broker == broker] + [ended]
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert max(gaps) < WATCH_GAP_LIMIT_S, (
            f"broker {broker}: the watcher paused {max(gaps):.1f} s"
        )
    unreadable = [describe(s) for s in samples if s.decision is None]
    assert not unreadable, unreadable[:5]
    missing = {
        describe(s)
        for s in samples
        if s.decision is not None
        and (s.decision.unknown_brokers or s.decision.caused_by_missing_data)
        and not any(reason.kind is ReasonKind.NOT_READY for reason in s.decision.reasons)
    }
    assert not missing, f"no broker went unknown during the upgrade: {sorted(missing)[:5]}"
    episodes = pause_episodes(samples, started)
    assert not episodes, f"PAUSE during the upgrade (s after its start): {episodes}"
    for index, log in enumerate(cluster.callback_logs):
        assert not log.applied(QuotaState.PAUSE), f"broker {index}'s callback applied PAUSE"
        assert not log.seen("applying on-missing"), f"broker {index}'s decision file expired"
    print("restarts (stop to /readyz, s):", [(s, round(t, 1)) for s, t in cluster.restart_seconds])


def publish_snapshot(
    cluster: LocalKafkaCluster, identity: str, broker: int, free: int, *, signed: bool
) -> None:
    """``identity`` writes a snapshot of ``broker`` with ``free`` of 1 GB free (limits 200 MB /
    100 MB), dated now; signed with its own certificate, or not."""
    key = str(broker).encode()
    value = snapshot_line(
        broker_id=broker,
        volumes=[volume("forged-or-not", 1_000_000_000, 1_000_000_000 - free)],
        at=datetime.now(UTC) - timedelta(milliseconds=100),
        soft=bytes_limit(200_000_000),
        hard=bytes_limit(100_000_000),
    )
    headers: list[tuple[str, str | bytes | None]] = []
    if signed:
        files = cluster.identity_files(identity)
        headers = list(load_signer(TlsFiles(files.ca, files.cert, files.key)).headers(key, value))
    producer = Producer({**cluster.client_config(identity), "acks": "all"})
    errors: list[object] = []
    producer.produce(
        SNAPSHOT_TOPIC,
        key=key,
        value=value,
        headers=headers,
        on_delivery=lambda error, _message: errors.append(error),
    )
    assert producer.flush(30) == 0
    assert errors == [None]


def paused_by_full_broker(decision: QuotaDecision | None) -> bool:
    if decision is None or decision.state is not QuotaState.PAUSE:
        return False
    limits = [reason for reason in decision.reasons if reason.kind is ReasonKind.LIMIT]
    return bool(limits) and limits[0].broker_id == FULL_BROKER


def test_2_after_the_upgrade_a_forged_unsigned_all_fine_is_refused(
    cluster: UpgradeCluster,
) -> None:
    # A broker that is not live says, signed with its own certificate, that it is full: the
    # breach outlives it, every broker PAUSEs.
    name = identity_name(FULL_BROKER)
    issue_client(cluster.kafka, name, extra_bindings=sidecar_acl_bindings(f"User:{name}"))
    publish_snapshot(cluster.kafka, name, FULL_BROKER, free=50_000_000, signed=True)
    wait_for(
        f"every decision PAUSE for broker {FULL_BROKER}'s signed breach",
        lambda: all(paused_by_full_broker(read_decision(p)) for p in cluster.decision_files),
        30,
    )
    before = [cluster.signature_checks(broker) for broker in range(BROKERS)]
    forged_at = time.monotonic()
    # The old shared identity may still write every key (Kafka's ACLs cannot limit keys): an
    # unsigned, newer "all fine" for the full broker.
    publish_snapshot(cluster.kafka, "publisher", FULL_BROKER, free=900_000_000, signed=False)
    wait_for(
        "every decider to count the forgery as unsigned",
        lambda: all(
            cluster.signature_checks(broker).get("unsigned", 0) > before[broker].get("unsigned", 0)
            for broker in range(BROKERS)
        ),
        20,
    )
    time.sleep(2 * HEARTBEAT_S)
    held = [s for s in cluster.watch.since(forged_at) if not paused_by_full_broker(s.decision)]
    assert not held, f"the forged all-fine cleared the breach: {[describe(s) for s in held[:5]]}"


def test_3_the_full_broker_retired_by_its_own_identity_opens_every_broker(
    cluster: UpgradeCluster,
) -> None:
    """`volume-quota retire` under require: the tombstone is signed by the broker's own
    certificate, so every decider drops the breach."""
    files = cluster.kafka.identity_files(identity_name(FULL_BROKER))
    retire = subprocess.run(
        [
            sys.executable,
            "-m",
            "volume_quota",
            "retire",
            f"--broker-id={FULL_BROKER}",
            f"--bootstrap-servers={cluster.kafka.bootstrap_servers}",
            f"--tls-ca-file={files.ca}",
            f"--tls-cert-file={files.cert}",
            f"--tls-key-file={files.key}",
            "--no-tls-verify-hostname",
        ],
        env={k: v for k, v in os.environ.items() if not k.startswith("VOLUME_QUOTA_")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert retire.returncode == 0, retire.stderr
    wait_for(
        "every decision OPEN once the full broker is retired",
        lambda: all(
            (d := read_decision(p)) is not None and d.state is QuotaState.OPEN
            for p in cluster.decision_files
        ),
        30,
    )


def test_4_the_order_matters_a_publisher_back_on_the_shared_certificate_pauses_everyone(
    cluster: UpgradeCluster,
) -> None:
    """The control: under require, a publisher whose snapshots no rule maps to its broker (the
    old shared certificate) leaves its broker without a trusted snapshot; after stale_after the
    on-missing PAUSE reaches every broker. Step 1 of the checklist comes first for this."""
    shared = cluster.kafka.identity_files("publisher")
    own = cluster.sidecars[1].environment
    mistake_from = time.monotonic()
    cluster.restart(
        1,
        {
            "VOLUME_QUOTA_TLS_CERT_FILE": str(shared.cert),
            "VOLUME_QUOTA_TLS_KEY_FILE": str(shared.key),
        },
        "shared-certificate",
    )
    try:

        def watcher_saw_every_broker_paused() -> bool:
            paused = {
                sample.broker
                for sample in cluster.watch.since(mistake_from)
                if sample.decision is not None
                and sample.decision.state is QuotaState.PAUSE
                and 1 in sample.decision.unknown_brokers
            }
            return paused == set(range(BROKERS))

        wait_for(
            "the watcher reading PAUSE, broker 1 unknown, in every decision file",
            watcher_saw_every_broker_paused,
            STALE_AFTER_S + 20,
        )
    finally:
        cluster.restart(
            1,
            {
                "VOLUME_QUOTA_TLS_CERT_FILE": own["VOLUME_QUOTA_TLS_CERT_FILE"],
                "VOLUME_QUOTA_TLS_KEY_FILE": own["VOLUME_QUOTA_TLS_KEY_FILE"],
            },
            "own-identity-again",
        )
    wait_for(
        "every decision OPEN again",
        lambda: all(
            (d := read_decision(p)) is not None and d.state is QuotaState.OPEN
            for p in cluster.decision_files
        ),
        30,
    )


def test_5_step_4_the_shared_identity_loses_write_and_nothing_else_changes(
    cluster: UpgradeCluster,
) -> None:
    """Checklist step 4: the old shared identity's WRITE on the snapshot topic is removed; its
    writes are refused by Kafka, and every broker stays OPEN on its own publisher."""
    admin = AdminClient(cluster.kafka.client_config("admin"))
    write = AclBindingFilter(
        ResourceType.TOPIC,
        SNAPSHOT_TOPIC,
        ResourcePatternType.LITERAL,
        "User:publisher",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    for future in admin.delete_acls([write], request_timeout=30).values():
        assert len(future.result(timeout=30)) == 1, "the shared identity had WRITE"
    revoked_from = time.monotonic()

    def refused() -> bool:
        producer = Producer({**cluster.kafka.client_config("publisher"), "acks": "all"})
        errors: list[KafkaError | None] = []
        producer.produce(
            SNAPSHOT_TOPIC,
            key=b"1",
            value=snapshot_line(broker_id=1, at=datetime.now(UTC)),
            on_delivery=lambda error, _message: errors.append(error),
        )
        producer.flush(30)
        return (
            bool(errors)
            and errors[0] is not None
            and (errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED)
        )

    # ACL changes reach every broker through the metadata log within moments.
    wait_for("the shared identity's snapshot refused by Kafka", refused, 30, interval_s=1)
    time.sleep(2 * HEARTBEAT_S)
    episodes = pause_episodes(cluster.watch.since(revoked_from), revoked_from)
    assert not episodes, episodes
    assert all(
        (d := read_decision(p)) is not None and d.state is QuotaState.OPEN
        for p in cluster.decision_files
    )
