"""deploy/systemd/README.md, run for real: its ```bash blocks, in order and as written, on a plain
Kafka host under a real systemd as PID 1 (kafka_host.py: a container of Debian bookworm with a
single-node KRaft broker as the user's own kafka.service).

Where a block runs is what its section's heading says: under a heading naming the build machine
it runs here, in this checkout (it builds the callback jar and the wheels); every other block
runs as root on the broker host, from its copy of the checkout (this checkout, mounted
read-only). The one section that tells the user to edit the settings is done as a user would:
the bootstrap address, the metrics port and the operators' certificate subject in
/etc/volume-quota/sidecar.env, and the sidecar's certificate files in /etc/volume-quota/tls.

Then: both units are active, the sidecar's snapshot is on the topic (read here, over mTLS), the
decision file decodes with the project's schema and only the broker's group may read it, the
broker loaded the callback and logs the decision it applies, an operator's signed override
reaches the decision and the broker, a restart of the sidecar never leaves a missing, torn or
expired decision file, and the sidecar's journal is JSON lines.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from publisher.signing import SnapshotSigner
from schemas.decision import QuotaDecision, QuotaState, ReasonKind
from schemas.decode import decode_snapshot
from schemas.snapshot import VolumeSnapshot
from tests.snapshot_factory import snapshot_line, volume
from tests.support import wait_for
from tests.systemd.kafka_host import (
    ADMIN,
    PODMAN,
    SETUP_DIR,
    KafkaHost,
    KafkaHostFiles,
    run,
    systemd_image,
    write_kafka_host_files,
)

REPOSITORY = Path(__file__).resolve().parents[2]
README = REPOSITORY / "deploy" / "systemd" / "README.md"
CHECKOUT_ON_HOST = "/root/volume-quota"
"""Where the broker host has its copy of the checkout (with the build machine's results)."""
SIDECAR_IDENTITY = "volume-quota-sidecar"
"""The sidecar certificate's CN, hence its principal (User:volume-quota-sidecar)."""
BROKER_ID = 0
"""The node.id of the host's broker: its sidecar's certificate says OU=broker-0."""
SNAPSHOT_TOPIC = "__volume_quota_snapshots"
DECISION_FILE = "/run/volume-quota/decision.json"
SIDECAR_UNIT = "volume-quota-sidecar.service"
CALLBACK_LOADED = "volume-quota callback #1 configured with engine #1"
BUILD_TIMEOUT_S = 900.0
STEP_TIMEOUT_S = 600.0
SIDECAR_TIMEOUT_S = 120.0
RESTART_WATCH_S = 20


@dataclass(frozen=True)
class Section:
    heading: str
    blocks: tuple[str, ...]

    @property
    def on_build_machine(self) -> bool:
        return "build machine" in self.heading.lower()

    @property
    def user_edits_settings(self) -> bool:
        return "edit" in self.heading.lower() and not self.blocks


def readme_sections(text: str) -> list[Section]:
    """Every heading of the README with the ```bash blocks under it, in order."""
    sections: list[Section] = []
    heading, blocks = "", list[str]()
    block: list[str] | None = None
    for line in text.splitlines():
        if block is not None:
            if line.strip() == "```":
                blocks.append("\n".join(block) + "\n")
                block = None
            else:
                block.append(line)
        elif line.strip() == "```bash":
            block = []
        elif line.startswith("#"):
            sections.append(Section(heading, tuple(blocks)))
            heading, blocks = line.lstrip("#").strip(), []
    sections.append(Section(heading, tuple(blocks)))
    return [section for section in sections if section.blocks or section.user_edits_settings]


def test_the_readme_parser_finds_blocks_under_their_headings() -> None:
    text = (
        "# Title\n\n```bash\necho one\n```\n\n### On the build machine\n\n```bash\nmake\n"
        "```\n\n```python\nnot = 'shell'\n```\n\n### Edit the settings\n\nprose only\n\n"
        "## Broker host\n```bash\nsystemctl start x\nsystemctl start y\n```\n"
    )
    sections = readme_sections(text)
    assert [(s.heading, s.blocks) for s in sections] == [
        ("Title", ("echo one\n",)),
        ("On the build machine", ("make\n",)),
        ("Edit the settings", ()),
        ("Broker host", ("systemctl start x\nsystemctl start y\n",)),
    ]
    assert [s.on_build_machine for s in sections] == [False, True, False, False]
    assert [s.user_edits_settings for s in sections] == [False, False, True, False]


def sidecar_certificate(
    files: KafkaHostFiles, broker_id: int
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The client certificate of the sidecar on broker ``broker_id``'s host, as the README's
    step 3 asks for: subject CN=volume-quota-sidecar,OU=broker-<id> (RFC 4514), from the
    cluster CA (the host's CA, deploy/local's PKI)."""
    ca_folder = files.pki.ca_cert.parent
    ca_key = serialization.load_pem_private_key((ca_folder / "ca.key.pem").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    ca = x509.load_pem_x509_certificate(files.pki.ca_cert.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    # In the order of `openssl req -subj "/OU=broker-N/CN=volume-quota-sidecar"`.
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, f"broker-{broker_id}"),
            x509.NameAttribute(NameOID.COMMON_NAME, SIDECAR_IDENTITY),
        ]
    )
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    assert certificate.subject.rfc4514_string() == (f"CN={SIDECAR_IDENTITY},OU=broker-{broker_id}")
    return certificate, key


@pytest.fixture
def kafka_host(tmp_path: Path) -> Iterator[tuple[KafkaHost, KafkaHostFiles]]:
    image = systemd_image()
    files = write_kafka_host_files(tmp_path / "kafka-host")
    sidecar_tls = files.directory / "sidecar-tls"
    sidecar_tls.mkdir()
    certificate, key = sidecar_certificate(files, BROKER_ID)
    (sidecar_tls / "ca.crt").write_bytes(files.pki.ca_cert.read_bytes())
    (sidecar_tls / "tls.crt").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (sidecar_tls / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    host = KafkaHost(f"volume-quota-systemd-{uuid.uuid4().hex[:8]}")
    try:
        host.start(image, files, REPOSITORY, CHECKOUT_ON_HOST)
        yield host, files
    finally:
        host.remove()


def edit_the_settings_as_a_user(host: KafkaHost, files: KafkaHostFiles) -> None:
    """What the README's editing step asks for, and nothing else: this broker's address, a free
    metrics port on this (shared, host-network) machine, the operators' certificate subject,
    and the certificate files."""
    operator = x509.load_pem_x509_certificate(
        files.pki.identity(ADMIN).cert.read_bytes()
    ).subject.rfc4514_string()
    host.shell(
        "sed -i"
        f" -e 's|^VOLUME_QUOTA_BOOTSTRAP_SERVERS=.*|VOLUME_QUOTA_BOOTSTRAP_SERVERS="
        f"{files.bootstrap_servers}|'"
        f" -e 's|^VOLUME_QUOTA_METRICS_PORT=.*|VOLUME_QUOTA_METRICS_PORT={files.metrics_port}|'"
        f" -e 's|^VOLUME_QUOTA_OVERRIDE_SIGNERS=.*|VOLUME_QUOTA_OVERRIDE_SIGNERS={operator}|'"
        " /etc/volume-quota/sidecar.env\n"
        "install -m 0640 -g volume-quota"
        f" {SETUP_DIR}/sidecar-tls/ca.crt {SETUP_DIR}/sidecar-tls/tls.crt"
        f" {SETUP_DIR}/sidecar-tls/tls.key /etc/volume-quota/tls/\n"
    )


def follow_the_readme(host: KafkaHost, files: KafkaHostFiles) -> None:
    sections = readme_sections(README.read_text())
    edited = False
    for section in sections:
        if section.user_edits_settings:
            edit_the_settings_as_a_user(host, files)
            edited = True
        for block in section.blocks:
            if section.on_build_machine:
                run(
                    ["bash", "-euo", "pipefail", "-c", block],
                    BUILD_TIMEOUT_S,
                    f"README step on the build machine ({section.heading}):\n{block}",
                )
            else:
                host.shell(block, workdir=CHECKOUT_ON_HOST, timeout=STEP_TIMEOUT_S)
    assert edited, "the README has no section telling the user to edit the settings"
    assert any(s.on_build_machine for s in sections), "no step on the build machine"


def read_snapshot(files: KafkaHostFiles) -> VolumeSnapshot:
    """The newest snapshot of broker 0 on the topic, read here as the admin (a super user)."""
    identity = files.pki.identity(ADMIN)
    consumer = Consumer(
        {
            "bootstrap.servers": files.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": str(files.pki.ca_cert),
            "ssl.certificate.location": str(identity.cert),
            "ssl.key.location": str(identity.key),
            "group.id": f"systemd-test-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 2,  # librdkafka's own connection errors: only critical ones
        }
    )
    try:
        consumer.subscribe([SNAPSHOT_TOPIC])
        found: list[VolumeSnapshot] = []
        errors: list[str] = []

        def snapshot_arrived() -> bool:
            message = consumer.poll(1.0)
            if message is None:
                return False
            error = message.error()
            if error is not None:  # e.g. the topic does not exist (yet): keep waiting
                errors.append(str(error))
                return False
            value = message.value()
            assert value is not None, "a tombstone"
            decoded = decode_snapshot(value, message.key())
            assert isinstance(decoded, VolumeSnapshot), decoded
            found.append(decoded)
            return True

        wait_for(
            snapshot_arrived,
            SIDECAR_TIMEOUT_S,
            f"a snapshot on {SNAPSHOT_TOPIC} (consumer errors: {errors[-3:]})",
        )
        return found[-1]
    finally:
        consumer.close()


def read_decision(host: KafkaHost) -> QuotaDecision:
    return QuotaDecision.model_validate_json(host.shell(f"cat {DECISION_FILE}"))


def decision_file_exists(host: KafkaHost) -> bool:
    result = subprocess.run(
        [*PODMAN, "exec", host.name, "test", "-s", DECISION_FILE],
        capture_output=True,
        timeout=60,
        check=False,
    )
    return result.returncode == 0


def override(files: KafkaHostFiles, *arguments: str) -> None:
    """``volume-quota override`` run here by the admin (a super user, so it may create the
    override topic the first time)."""
    identity = files.pki.identity(ADMIN)
    run(
        [
            *(sys.executable, "-m", "volume_quota", "override", *arguments),
            *("--bootstrap-servers", files.bootstrap_servers),
            *("--tls-ca-file", str(files.pki.ca_cert)),
            *("--tls-cert-file", str(identity.cert), "--tls-key-file", str(identity.key)),
        ],
        SIDECAR_TIMEOUT_S,
        "volume-quota override",
    )


def forge_full_snapshot_as_another_host(files: KafkaHostFiles) -> None:
    """Broker 0 "full", written by the admin and signed by the sidecar certificate of another
    host (OU=broker-1): a host whose principal may write the topic, speaking for broker 0."""
    certificate, key = sidecar_certificate(files, BROKER_ID + 1)
    signer = SnapshotSigner(key, certificate.public_bytes(serialization.Encoding.DER))
    identity = files.pki.identity(ADMIN)
    record_key = str(BROKER_ID).encode()
    value = snapshot_line(
        broker_id=BROKER_ID, volumes=[volume("/forged", 1000, 1000)], at=dt.datetime.now(dt.UTC)
    )
    producer = Producer(
        {
            "bootstrap.servers": files.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": str(files.pki.ca_cert),
            "ssl.certificate.location": str(identity.cert),
            "ssl.key.location": str(identity.key),
            "acks": "all",
        }
    )
    delivered: list[object] = []
    producer.produce(
        SNAPSHOT_TOPIC,
        key=record_key,
        value=value,
        headers=list(signer.headers(record_key, value)),
        on_delivery=lambda error, _message: delivered.append(error),
    )
    producer.flush(30)
    assert delivered == [None]


def sidecar_entries(host: KafkaHost) -> list[dict[str, object]]:
    """The sidecar's own journal lines (not systemd's about the unit), each a JSON object."""
    records = [
        json.loads(line)
        for line in host.shell("journalctl --no-pager -o json -u volume-quota-sidecar").splitlines()
    ]
    own = [r["MESSAGE"] for r in records if r.get("_SYSTEMD_UNIT") == SIDECAR_UNIT]
    assert own, records[-10:]
    return [json.loads(message) for message in own]


def rejected_forgery(host: KafkaHost) -> bool:
    return any(
        entry["event"] == "snapshot rejected: signature check failed"
        and entry.get("outcome") == "wrong_identity"
        and entry.get("signer") == f"CN={SIDECAR_IDENTITY},OU=broker-{BROKER_ID + 1}"
        for entry in sidecar_entries(host)
    )


def broker_applies(host: KafkaHost, state: QuotaState, factor: float) -> bool:
    """The callback logs each decision it starts applying (QuotaEngine.logStatus)."""
    return f"volume-quota engine #1: decision {state} factor {factor} decided at" in host.journal(
        "kafka"
    )


def overridden(decision: QuotaDecision) -> bool:
    return bool(decision.reasons) and decision.reasons[0].kind == ReasonKind.OVERRIDE


WATCH_SCRIPT = f"""(sleep 1 && @ACTION@) &
action=$!
for _ in $(seq {RESTART_WATCH_S * 5}); do
    date -u +%Y-%m-%dT%H:%M:%S.%NZ
    cat {DECISION_FILE} || echo MISSING
    echo
    echo ---
    sleep 0.2
done
wait $action
"""


def watch_the_decision_file_during(host: KafkaHost, action: str) -> list[tuple[str, str]]:
    """Samples (time, content) of the decision file every 0.2 s for RESTART_WATCH_S seconds,
    ``action`` starting one second in (in the same shell, so the samples surely cover it)."""
    output = host.shell(WATCH_SCRIPT.replace("@ACTION@", action), timeout=RESTART_WATCH_S * 3)
    pairs = []
    for sample in output.split("---\n"):
        if sample.strip():
            at, _, content = sample.partition("\n")
            pairs.append((at, content.strip()))
    return pairs


@pytest.mark.real_broker
@pytest.mark.timeout(1500)
def test_the_readme_installs_a_working_sidecar_on_a_systemd_host(
    kafka_host: tuple[KafkaHost, KafkaHostFiles],
) -> None:
    host, files = kafka_host
    try:
        follow_the_readme(host, files)
        check_the_installed_sidecar(host, files)
    except AssertionError as failure:
        sidecar_log = "\n".join(host.journal("volume-quota-sidecar").splitlines()[-15:])
        message = f"{failure}\n--- journalctl -u volume-quota-sidecar (last lines):\n{sidecar_log}"
        raise AssertionError(message) from failure


def usage_published(host: KafkaHost, files: KafkaHostFiles) -> bool:
    """Whether the sidecar's metrics show a usage document delivered."""
    scrape = host.shell(
        'python3 -c "import urllib.request; print(urllib.request.urlopen('
        f"'http://127.0.0.1:{files.metrics_port}/metrics', timeout=5).read().decode())\" || :"
    )
    for line in scrape.splitlines():
        if line.startswith("volume_quota_usage_last_success_timestamp_seconds "):
            return float(line.split()[1]) > 0
    return False


def check_the_installed_sidecar(host: KafkaHost, files: KafkaHostFiles) -> None:
    assert host.shell("systemctl is-active kafka volume-quota-sidecar").split() == [
        "active",
        "active",
    ]
    snapshot = read_snapshot(files)
    assert snapshot.broker_id == 0
    assert snapshot.volumes, snapshot
    # Running since the README started it: no crash and restart on the way.
    assert host.shell("systemctl show -P NRestarts volume-quota-sidecar").strip() == "0"

    # While the broker restarts (the README's last step) the decider writes its on-missing
    # PAUSE; once it reads the topic again, a decision from the measured volumes.
    wait_for(lambda: decision_file_exists(host), SIDECAR_TIMEOUT_S, "the decision file")
    wait_for(
        lambda: not read_decision(host).caused_by_missing_data,
        SIDECAR_TIMEOUT_S,
        "a decision from the measured volumes",
    )
    decision = read_decision(host)
    assert decision.unknown_brokers == [], decision
    # Readable by the broker's user (group kafka), by nobody else: the runtime directory is 0750.
    assert QuotaDecision.model_validate_json(host.shell(f"runuser -u kafka -- cat {DECISION_FILE}"))
    assert host.shell(f"stat -c '%U %G %a' {Path(DECISION_FILE).parent}").split() == [
        "volume-quota",
        "kafka",
        "750",
    ]
    assert "Permission denied" in host.shell(f"runuser -u nobody -- cat {DECISION_FILE} 2>&1 || :")

    wait_for(
        lambda: CALLBACK_LOADED in host.journal("kafka"),
        SIDECAR_TIMEOUT_S,
        "the broker's log line that the callback is configured",
    )
    # ... and that it read the sidecar's decision (as user kafka, from /run/volume-quota).
    wait_for(
        lambda: broker_applies(host, decision.state, decision.throttle_factor),
        SIDECAR_TIMEOUT_S,
        f"the broker's log line that it applies {decision.state}",
    )

    # The usage document (which topics fill the volume) reaches its topic: the README's ACLs
    # let the sidecar create and write it.
    wait_for(
        lambda: usage_published(host, files),
        SIDECAR_TIMEOUT_S,
        "a usage document published (volume_quota_usage_last_success_timestamp_seconds)",
    )

    before = read_decision(host)
    samples = watch_the_decision_file_during(host, "systemctl restart volume-quota-sidecar")
    assert len(samples) >= RESTART_WATCH_S * 2, samples
    for at, content in samples:
        assert content != "MISSING", f"no decision file at {at}"
        decision = QuotaDecision.model_validate_json(content)
        assert decision.valid_until > dt.datetime.fromisoformat(at), (at, content)
    assert host.shell("systemctl is-active volume-quota-sidecar").strip() == "active"
    wait_for(
        lambda: read_decision(host).decided_at > before.decided_at,
        SIDECAR_TIMEOUT_S,
        "a decision from the restarted sidecar",
    )

    # An operator's override reaches this broker's decision, and its end does too.
    override(files, "--state", "PAUSE", "--for", "5m", "--reason", "systemd install test")
    wait_for(
        lambda: overridden(read_decision(host)),
        SIDECAR_TIMEOUT_S,
        "the operator's PAUSE override in the decision file",
    )
    assert read_decision(host).state == QuotaState.PAUSE
    wait_for(
        lambda: broker_applies(host, QuotaState.PAUSE, 0.0),
        SIDECAR_TIMEOUT_S,
        "the broker's log line that it applies the PAUSE",
    )
    override(files, "--clear")
    wait_for(
        lambda: not overridden(read_decision(host)),
        SIDECAR_TIMEOUT_S,
        "the decision file without the override",
    )

    # Signatures are required: another host's certificate cannot speak for broker 0. Its
    # forged "full" is rejected, and broker 0's decision stays the one its own sidecar measures.
    assert not rejected_forgery(host)
    forge_full_snapshot_as_another_host(files)
    wait_for(lambda: rejected_forgery(host), SIDECAR_TIMEOUT_S, "the forged snapshot rejected")
    assert read_decision(host).state == decision.state

    # The sidecar's own lines (not systemd's "Started ..." about the unit) are JSON objects.
    records = [
        json.loads(line)
        for line in host.shell("journalctl --no-pager -o json -u volume-quota-sidecar").splitlines()
    ]
    own = [r["MESSAGE"] for r in records if r.get("_SYSTEMD_UNIT") == SIDECAR_UNIT]
    entries = sidecar_entries(host)
    for entry in entries:
        assert {"event", "level", "timestamp"} <= set(entry), entry
    assert sum(entry["event"] == "publisher started" for entry in entries) == 2, own
    assert own[-1] in host.journal("volume-quota-sidecar").splitlines()
