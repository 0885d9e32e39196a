"""The publication loop driven by a fake clock, fake volumes and a fake Kafka sink."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from consumer.signatures import SignatureOutcome, SignatureTrust, check_signature
from publisher.kafka_sink import ClientIssueCallback, DeliveryCallback, SendError, client_issue
from publisher.publication_loop import LoopSettings, PublicationLoop, measuring
from publisher.publication_policy import PublicationPolicy
from publisher.publisher_metrics import PublisherMetrics
from publisher.volume_measurement import measure_volume
from publisher.volumes import Volume, VolumeMeasurement
from schemas import VolumeSnapshot, decode_snapshot
from tests.publisher.publisher_samples import GIB, HARD, SOFT
from tests.publisher.tls_material import TestCertificateAuthority
from volume_quota.certificate_files import TlsCredentials, TlsFiles

CAPACITY = 100 * GIB


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.start = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> datetime:
        return self.start + timedelta(seconds=self.now - 1000.0)

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Sent:
    key: bytes
    value: bytes | None
    on_result: DeliveryCallback
    headers: Sequence[tuple[str, bytes]] = ()


@dataclass
class FakeSink:
    clock: FakeClock
    sent: list[Sent] = field(default_factory=list)
    pending: list[Sent] = field(default_factory=list)
    answer: str | None = "deliver"
    """'deliver', 'fail' or None (leave pending)."""
    refuse: bool = False
    rebuilds: int = 0
    fatal: bool = False
    stay_fatal: bool = False
    polls: int = 0
    stop_after_polls: int | None = None
    stop: threading.Event | None = None

    @property
    def needs_rebuild(self) -> bool:
        return self.fatal

    def send(
        self,
        key: bytes,
        value: bytes | None,
        on_result: DeliveryCallback,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        if self.refuse:
            raise SendError("Local: Queue full")
        message = Sent(key, value, on_result, headers)
        self.sent.append(message)
        self.pending.append(message)

    def answer_pending(self) -> None:
        if self.answer is None:
            return
        pending, self.pending = self.pending, []
        for message in pending:
            if self.fatal:
                message.on_result("_FATAL: producer is in a fatal state")
            elif self.answer == "deliver":
                message.on_result(None)
            else:
                message.on_result("_MSG_TIMED_OUT: timed out")

    def poll(self, timeout_seconds: float) -> None:
        self.polls += 1
        self.answer_pending()
        self.clock.advance(timeout_seconds)
        limit = self.stop_after_polls
        if self.stop is not None and limit is not None and self.polls >= limit:
            self.stop.set()

    def flush(self, timeout_seconds: float) -> int:
        self.answer_pending()
        return len(self.pending)

    bootstrap_servers = "fake:9093"
    rebuilt_elsewhere = 0

    def rebuild(self, flush_timeout_seconds: float, elsewhere: bool = False) -> int:
        self.rebuilds += 1
        self.rebuilt_elsewhere += elsewhere
        self.fatal = self.stay_fatal
        self.answer_pending()
        return len(self.pending)


class Disk:
    """A volume whose free space the test sets."""

    def __init__(self) -> None:
        self.free = 50 * GIB
        self.volume = Volume("/dev/sdb", "/data", ("/data/kafka",))
        self.broken = False

    def measure(self, volumes: Sequence[Volume]) -> list[VolumeMeasurement]:
        if self.broken:
            raise OSError(5, "Input/output error")
        assert list(volumes) == [self.volume]
        return [VolumeMeasurement(self.volume, CAPACITY, self.free)]


@dataclass
class Harness:
    clock: FakeClock
    sink: FakeSink
    disk: Disk
    metrics: PublisherMetrics
    loop: PublicationLoop
    topic: list[bool]
    client_errors: list[ClientIssueCallback]

    def step(self, seconds: float = 1.0) -> None:
        """One tick, then let the sink answer, then move time on."""
        self.loop.tick()
        self.sink.answer_pending()
        self.clock.advance(seconds)

    def sample(self, name: str, **labels: str) -> float:
        value = self.metrics.registry.get_sample_value(name, labels or None)
        return 0.0 if value is None else value

    def snapshots(self) -> list[VolumeSnapshot]:
        decoded = []
        for message in self.sink.sent:
            assert message.key == b"7"
            assert message.value is not None
            snapshot = decode_snapshot(message.value, message.key)
            assert isinstance(snapshot, VolumeSnapshot)
            decoded.append(snapshot)
        return decoded


def make_harness(credentials: TlsCredentials | None = None, topic_ready: bool = True) -> Harness:
    clock = FakeClock()
    sink = FakeSink(clock)
    disk = Disk()
    metrics = PublisherMetrics()
    topic = [topic_ready]
    client_errors: list[ClientIssueCallback] = []

    def sink_factory(on_client_error: ClientIssueCallback) -> FakeSink:
        client_errors.append(on_client_error)
        return sink

    loop = PublicationLoop(
        LoopSettings(
            soft_limit=SOFT,
            hard_limit=HARD,
            policy=PublicationPolicy(heartbeat_interval_seconds=10.0, change_threshold_percent=1.0),
            sample_interval_seconds=1.0,
            delivery_timeout_seconds=15.0,
        ),
        measure=measuring(7, [disk.volume], disk.measure),
        sink_factory=sink_factory,
        clock=clock,
        metrics=metrics,
        topic_ready=lambda: topic[0],
        topic_problem=lambda: None if topic[0] else "topic not verified",
        credentials=credentials,
    )
    return Harness(clock, sink, disk, metrics, loop, topic, client_errors)


def test_publishes_on_start_then_on_the_heartbeat() -> None:
    harness = make_harness()
    for _ in range(25):
        harness.step()
    snapshots = harness.snapshots()
    assert len(snapshots) == 3  # t=0 (first), t=10, t=20
    assert [s.snapshot_at.second for s in snapshots] == [0, 10, 20]
    assert snapshots[0].volumes[0].consumed == 50 * GIB
    assert harness.sample("volume_quota_publications_total", reason="first") == 1
    assert harness.sample("volume_quota_publications_total", reason="heartbeat") == 2
    assert harness.sample("volume_quota_publisher_kafka_connected") == 1
    assert (
        harness.sample("volume_quota_last_successful_publication_timestamp_seconds")
        == (harness.clock.start + timedelta(seconds=20)).timestamp()
    )
    assert (
        harness.sample("volume_quota_volume_consumed_bytes", broker="7", volume="/dev/sdb")
        == 50 * GIB
    )
    inputs = harness.loop.health_inputs()
    assert inputs.kafka_connected
    assert inputs.topic_ready
    assert inputs.last_delivery_at is not None


def test_a_state_change_publishes_within_one_sample() -> None:
    harness = make_harness()
    harness.step()
    harness.step()
    harness.disk.free = 15 * GIB  # below the 20% soft limit: THROTTLE
    harness.step()
    assert len(harness.sink.sent) == 2
    assert harness.sample("volume_quota_publications_total", reason="state_changed") == 1
    harness.disk.free = 15 * GIB - CAPACITY // 200  # a 0.5% move: no publication
    harness.step()
    assert len(harness.sink.sent) == 2
    harness.disk.free = 13 * GIB  # a 2% move
    harness.step()
    assert harness.sample("volume_quota_publications_total", reason="free_space_moved") == 1


def test_publication_does_not_wait_for_the_topic_check() -> None:
    harness = make_harness(topic_ready=False)
    harness.step()
    assert len(harness.sink.sent) == 1
    inputs = harness.loop.health_inputs()
    assert not inputs.topic_ready
    assert inputs.topic_problem == "topic not verified"
    harness.topic[0] = True
    assert harness.loop.health_inputs().topic_ready


def test_kafka_down_counts_errors_backs_off_and_resumes() -> None:
    harness = make_harness()
    harness.sink.answer = "fail"
    for _ in range(20):
        harness.step()
    errors = harness.sample("volume_quota_publication_errors_total")
    # Refused at once; backoff 0.5, 1, 2, 4, 8, 10 s from each send, on 1 s ticks.
    assert errors == 6
    assert harness.sample("volume_quota_publisher_kafka_connected") == 0
    assert not harness.loop.health_inputs().kafka_connected
    sent_times = [snapshot.snapshot_at.second for snapshot in harness.snapshots()]
    assert sent_times == [0, 1, 2, 4, 8, 16]
    harness.sink.answer = "deliver"
    for _ in range(10):
        harness.step()
    assert harness.sample("volume_quota_publications_total", reason="retry") == 1
    assert harness.snapshots()[-1].snapshot_at.second == 26  # fresh snapshot, not a replay
    assert harness.sample("volume_quota_publisher_kafka_connected") == 1
    assert harness.sample("volume_quota_publication_errors_total") == 6


def test_an_unanswered_message_expires() -> None:
    harness = make_harness()
    harness.sink.answer = None
    for _ in range(21):
        harness.step()
    assert len(harness.sink.sent) == 1
    harness.step()
    assert harness.sample("volume_quota_publication_errors_total") == 1  # after 15 + 5 s
    assert len(harness.sink.sent) == 2  # sent again at once: the wait was longer than a backoff
    harness.sink.answer = "deliver"
    harness.step()
    assert len(harness.sink.sent) == 2
    assert harness.sample("volume_quota_publications_total", reason="first") == 1  # late report
    # The heartbeat fell due while the first message was unanswered; it is what went out next.
    assert harness.sample("volume_quota_publications_total", reason="heartbeat") == 1


def test_a_refused_send_is_an_error() -> None:
    harness = make_harness()
    harness.sink.refuse = True
    harness.step()
    assert harness.sample("volume_quota_publication_errors_total") == 1
    harness.sink.refuse = False
    harness.step()
    assert harness.sample("volume_quota_publications_total", reason="retry") == 1


def test_client_errors_are_counted_and_disconnect() -> None:
    harness = make_harness()
    harness.step()
    assert harness.loop.health_inputs().kafka_connected
    (on_client_error,) = harness.client_errors
    on_client_error(client_issue(KafkaError(KafkaError._TRANSPORT, "broker went away")))
    assert harness.loop.health_inputs().kafka_connected  # one broker: not yet unreachable
    on_client_error(client_issue(KafkaError(KafkaError._ALL_BROKERS_DOWN, "all down")))
    assert not harness.loop.health_inputs().kafka_connected
    assert (
        harness.sample("volume_quota_publisher_kafka_client_errors_total", code="_ALL_BROKERS_DOWN")
        == 1
    )
    assert (
        harness.sample("volume_quota_publisher_kafka_client_errors_total", code="_TRANSPORT") == 1
    )


def test_fatal_client_error_rebuilds_the_producer() -> None:
    harness = make_harness()
    harness.step()
    harness.sink.fatal = True
    harness.step()
    assert harness.sink.rebuilds == 1


def test_a_persistent_fatal_error_is_rebuilt_with_backoff() -> None:
    harness = make_harness()
    harness.sink.stay_fatal = True
    harness.sink.fatal = True
    rebuilt_at = []
    for second in range(40):
        before = harness.sink.rebuilds
        harness.step()
        if harness.sink.rebuilds > before:
            rebuilt_at.append(second)
    assert rebuilt_at == [0, 1, 3, 7, 15, 31]  # 1, 2, 4, 8, 16 s apart
    harness.sink.stay_fatal = False
    for _ in range(40):
        harness.step()
    assert harness.sink.rebuilds == 7
    assert harness.sample("volume_quota_publications_total", reason="retry") >= 1
    assert harness.loop.health_inputs().kafka_connected


def test_measurement_failure_skips_the_tick() -> None:
    harness = make_harness()
    harness.step()
    harness.disk.broken = True
    before = harness.loop.health_inputs().last_sample_at
    for _ in range(15):
        harness.step()
    assert harness.loop.health_inputs().last_sample_at == before
    assert len(harness.sink.sent) == 1


def test_run_ticks_every_interval_until_stopped() -> None:
    harness = make_harness()
    stop = threading.Event()
    harness.sink.stop = stop
    harness.sink.stop_after_polls = 4 * 21  # 0.25 s slices: about 21 seconds
    harness.loop.run(stop)
    assert [snapshot.snapshot_at.second for snapshot in harness.snapshots()] == [0, 10, 20]
    assert harness.loop.last_sent_snapshot == harness.snapshots()[-1]


def test_an_unexpected_error_does_not_end_the_loop() -> None:
    harness = make_harness()
    stop = threading.Event()
    harness.sink.stop = stop
    harness.sink.stop_after_polls = 4 * 3
    calls = []

    def broken_measure() -> dict[int, list[VolumeMeasurement]]:
        calls.append(1)
        raise RuntimeError("bug")

    harness.loop._measure = broken_measure
    harness.loop.run(stop)
    assert len(calls) == 3  # kept ticking


def test_certificate_rotation_rebuilds_the_producer_once_both_files_changed(tmp_path: Path) -> None:
    authority = TestCertificateAuthority()
    paths = authority.write_identity(tmp_path, "publisher", timedelta(days=10))
    harness = make_harness(TlsCredentials(TlsFiles(paths.ca, paths.cert, paths.key)))
    # The certificates are dated from the real time, so the clock must read it too.
    harness.clock.start = datetime.now(UTC)
    harness.step()
    remaining = harness.sample("volume_quota_client_certificate_remaining_seconds")
    assert 9 * 86400 < remaining < 10 * 86400
    certificate, key = authority.issue("publisher", timedelta(days=90))
    paths.cert.write_bytes(certificate)  # the key is not replaced yet
    harness.step()
    harness.step()
    assert harness.sink.rebuilds == 0
    paths.key.write_bytes(key)
    harness.step()
    assert harness.sink.rebuilds == 1
    assert harness.sample("volume_quota_publisher_certificate_reloads_total") == 1
    remaining = harness.sample("volume_quota_client_certificate_remaining_seconds")
    assert 89 * 86400 < remaining < 90 * 86400
    for _ in range(12):
        harness.step()
    assert harness.sink.rebuilds == 1
    assert len(harness.sink.sent) == 2  # first and heartbeat: the rotation missed nothing


def test_unusable_tls_files_at_start_fail_fast(tmp_path: Path) -> None:
    authority = TestCertificateAuthority()
    paths = authority.write_identity(tmp_path, "publisher")
    paths.key.write_bytes(authority.issue("other")[1])
    with pytest.raises(ValueError, match="does not belong"):
        make_harness(TlsCredentials(TlsFiles(paths.ca, paths.cert, paths.key)))


def test_measure_volumes_uses_statvfs(tmp_path: Path) -> None:
    volume = Volume("x", str(tmp_path), (str(tmp_path),))
    stats = os.statvfs(tmp_path)
    measured = measure_volume(volume)
    assert measured.capacity_bytes == stats.f_blocks * stats.f_frsize
    assert abs(measured.free_bytes - stats.f_bavail * stats.f_frsize) < 64 * 1024**2


def test_every_snapshot_sent_is_signed_with_the_current_key(tmp_path: Path) -> None:
    authority = TestCertificateAuthority()
    paths = authority.write_identity(tmp_path, "publisher", timedelta(days=10))
    harness = make_harness(TlsCredentials(TlsFiles(paths.ca, paths.cert, paths.key)))
    harness.clock.start = datetime.now(UTC)  # the certificates are dated from the real time
    trust = SignatureTrust([authority.certificate], cluster_signers=["CN=publisher"])

    def check_last() -> SignatureOutcome:
        sent = harness.sink.sent[-1]
        now = datetime.now(UTC)
        return check_signature(sent.key, sent.value, list(sent.headers), trust, now).outcome

    harness.step()
    assert check_last() is SignatureOutcome.VALID
    certificate, key = authority.issue("publisher", timedelta(days=90))
    paths.cert.write_bytes(certificate)
    paths.key.write_bytes(key)
    for _ in range(11):
        harness.step()
    assert harness.sink.rebuilds == 1
    assert len(harness.sink.sent) == 2
    assert check_last() is SignatureOutcome.VALID  # signed with the rotated key
    assert dict(harness.sink.sent[-1].headers)["vq-signer"] == x509.load_pem_x509_certificate(
        certificate
    ).public_bytes(Encoding.DER)
