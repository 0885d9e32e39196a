"""``signature_ca_file``: the CA bundle signatures are checked against, apart from the TLS one.

In Strimzi the brokers' certificates come from the cluster CA (``tls_ca_file``) and the
agent's and the operators' from the clients CA. Trusting the clients CA for TLS would let any
KafkaUser pass as a broker; so signatures have a bundle of their own. When it is set, it is the
only bundle signatures are checked against (a signer of the TLS CA alone is untrusted) and it
never verifies a broker's TLS certificate; when it is not, signatures use ``tls_ca_file``.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from consumer.overrides import OverridePolicy, RefusalReason, judge_override_record
from consumer.signatures import SignatureOutcome, check_signature
from publisher.signing import SnapshotSigner
from schemas.override import OVERRIDE_KEY, QuotaOverride
from tests.conftest import CliResult
from tests.publisher.tls_material import TestCertificateAuthority, TlsPaths
from tests.volume_quota.test_config import announced
from volume_quota.config import DecideSettings, load_settings
from volume_quota.config.sources import load
from volume_quota.daemons.decider import (
    DecideDaemon,
    override_policy,
    signature_policy,
)
from volume_quota.errors import UsageError

FULL = b'{"brokerId": 2, "volumes": "...full"}'
NOW = dt.datetime.now(dt.UTC)


def signer_of(authority: TestCertificateAuthority, common_name: str) -> SnapshotSigner:
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = authority.certify(key.public_key(), common_name)
    return SnapshotSigner(key, certificate.public_bytes(serialization.Encoding.DER))


class TwoAuthorities:
    """The cluster CA (TLS: brokers, and this client's own certificate) and the clients CA
    (signers), written as files."""

    def __init__(self, directory: Path) -> None:
        self.cluster = TestCertificateAuthority()
        self.clients = TestCertificateAuthority()
        self.tls: TlsPaths = self.cluster.write_identity(directory / "tls", "volume-quota-agent")
        self.signature_ca = directory / "clients-ca.crt"
        self.signature_ca.write_bytes(self.clients.pem)

    def files(self) -> dict[str, str]:
        return {
            "tls_ca_file": str(self.tls.ca),
            "tls_cert_file": str(self.tls.cert),
            "tls_key_file": str(self.tls.key),
            "signature_ca_file": str(self.signature_ca),
        }


@pytest.fixture
def authorities(tmp_path: Path) -> TwoAuthorities:
    return TwoAuthorities(tmp_path)


REQUIRE_AGENT = {
    "snapshot_signatures": "require",
    "cluster_signers": "CN=volume-quota-agent",
    "override_signatures": "require",
    "override_signers": "CN=alice",
}


def snapshot_outcome(settings: DecideSettings, signer: SnapshotSigner) -> SignatureOutcome:
    trust = signature_policy(settings).trust
    assert trust is not None
    return check_signature(b"2", FULL, signer.headers(b"2", FULL), trust, NOW).outcome


def override_refusal(policy: OverridePolicy, signer: SnapshotSigner) -> RefusalReason | None:
    value = QuotaOverride.model_validate(
        {
            "state": "OPEN",
            "reason": "maintenance",
            "setBy": "CN=alice",
            "setAt": NOW,
            "expiresAt": NOW + dt.timedelta(hours=1),
        }
    ).to_json_bytes()
    verdict = judge_override_record(
        OVERRIDE_KEY,
        value,
        signer.headers(OVERRIDE_KEY, value),
        arrived_at=NOW,
        now=NOW,
        policy=policy,
    )
    assert verdict.refusal is not None or verdict.override is not None, verdict
    return None if verdict.refusal is None else verdict.refusal.reason


def test_snapshot_signers_of_the_signature_ca_are_trusted_and_of_the_tls_ca_not(
    authorities: TwoAuthorities,
) -> None:
    settings = load(DecideSettings, {**REQUIRE_AGENT, **authorities.files()})
    agent_by_clients_ca = signer_of(authorities.clients, "volume-quota-agent")
    agent_by_cluster_ca = signer_of(authorities.cluster, "volume-quota-agent")
    assert snapshot_outcome(settings, agent_by_clients_ca) is SignatureOutcome.VALID
    assert snapshot_outcome(settings, agent_by_cluster_ca) is SignatureOutcome.UNTRUSTED_CERTIFICATE


def test_override_signers_of_the_signature_ca_are_trusted_and_of_the_tls_ca_not(
    authorities: TwoAuthorities,
) -> None:
    policy = override_policy(load(DecideSettings, {**REQUIRE_AGENT, **authorities.files()}))
    assert override_refusal(policy, signer_of(authorities.clients, "alice")) is None
    refused = override_refusal(policy, signer_of(authorities.cluster, "alice"))
    assert refused is RefusalReason.UNTRUSTED_CERTIFICATE


def test_overrides_under_warn_are_verified_against_the_signature_ca_alone(
    tmp_path: Path,
) -> None:
    clients = TestCertificateAuthority()
    signature_ca = tmp_path / "clients-ca.crt"
    signature_ca.write_bytes(clients.pem)
    values = {"override_signers": "CN=alice", "signature_ca_file": str(signature_ca)}
    policy = override_policy(load(DecideSettings, values))
    assert list(policy.ca_certificates) == [clients.certificate]


def test_without_a_signature_ca_file_signatures_use_the_tls_ca(
    authorities: TwoAuthorities,
) -> None:
    files = {k: v for k, v in authorities.files().items() if k != "signature_ca_file"}
    settings = load(DecideSettings, {**REQUIRE_AGENT, **files})
    assert snapshot_outcome(settings, signer_of(authorities.cluster, "volume-quota-agent")) is (
        SignatureOutcome.VALID
    )
    policy = override_policy(settings)
    assert override_refusal(policy, signer_of(authorities.cluster, "alice")) is None


def test_require_without_any_ca_bundle_names_both_settings() -> None:
    with pytest.raises(UsageError, match=r"VOLUME_QUOTA_SIGNATURE_CA_FILE.*VOLUME_QUOTA_TLS_CA"):
        signature_policy(load(DecideSettings, REQUIRE_AGENT))
    with pytest.raises(UsageError, match=r"VOLUME_QUOTA_SIGNATURE_CA_FILE.*VOLUME_QUOTA_TLS_CA"):
        override_policy(load(DecideSettings, REQUIRE_AGENT))


def test_the_signature_ca_never_verifies_the_brokers_tls(authorities: TwoAuthorities) -> None:
    settings = load(
        DecideSettings,
        {**REQUIRE_AGENT, **authorities.files(), "bootstrap_servers": "kafka:9093"},
    )
    assert settings.required_kafka_connection().ca_file == authorities.tls.ca


def test_a_decider_can_verify_overrides_with_only_a_signature_ca(
    authorities: TwoAuthorities,
) -> None:
    values = {"override_signers": "CN=alice", "signature_ca_file": str(authorities.signature_ca)}
    (said,) = announced(load(DecideSettings, values))
    assert "overrides checked against the operator identities" in said


def test_an_unreadable_signature_ca_file_stops_the_start_with_one_line(
    authorities: TwoAuthorities, tmp_path: Path
) -> None:
    not_pem = tmp_path / "not-a-ca.crt"
    not_pem.write_text("hello\n")
    for path, problem in (
        (tmp_path / "gone.crt", f"cannot read {tmp_path / 'gone.crt'}: No such file or directory"),
        (not_pem, f"{not_pem} holds no PEM certificate"),
    ):
        with pytest.raises(UsageError) as raised:
            load_settings({**authorities.files(), "signature_ca_file": str(path)})
        assert raised.value.problems == (
            "invalid setting signature_ca_file (--signature-ca-file, "
            f"VOLUME_QUOTA_SIGNATURE_CA_FILE): {problem}",
        )


def test_the_command_exits_2_on_an_unreadable_signature_ca_file(
    authorities: TwoAuthorities, tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    files = {**authorities.files(), "signature_ca_file": str(tmp_path / "gone.crt")}
    result = cli(
        "status",
        "--bootstrap-servers=127.0.0.1:9",
        *(f"--{name.replace('_', '-')}={path}" for name, path in files.items()),
    )
    assert result.status == 2
    assert result.err.splitlines() == [
        "volume-quota: error: invalid setting signature_ca_file (--signature-ca-file, "
        f"VOLUME_QUOTA_SIGNATURE_CA_FILE): cannot read {tmp_path / 'gone.crt'}: "
        "No such file or directory"
    ]


def test_a_decider_picks_up_a_changed_signature_ca_file(
    authorities: TwoAuthorities, tmp_path: Path
) -> None:
    settings = load_settings(
        {
            **REQUIRE_AGENT,
            **authorities.files(),
            "bootstrap_servers": "127.0.0.1:9",
            "decision_file": str(tmp_path / "decision.json"),
        }
    )
    daemon = DecideDaemon(settings, serve_http=False, sink=lambda decision: None)
    try:
        renewed = TestCertificateAuthority()
        agent = signer_of(renewed, "volume-quota-agent")
        trust_before = daemon.signatures.trust
        assert trust_before is not None
        assert (
            check_signature(b"2", FULL, agent.headers(b"2", FULL), trust_before, NOW).outcome
            is SignatureOutcome.UNTRUSTED_CERTIFICATE
        )
        # A clients-CA renewal: the bundle now holds the old and the new CA.
        authorities.signature_ca.write_bytes(authorities.clients.pem + renewed.pem)
        daemon.pick_up_changed_files()
        trust_after = daemon.signatures.trust
        assert trust_after is not None
        assert (
            check_signature(b"2", FULL, agent.headers(b"2", FULL), trust_after, NOW).outcome
            is SignatureOutcome.VALID
        )
        operators = daemon.operators.ca_certificates
        assert renewed.certificate in list(operators)
    finally:
        stopped = threading.Event()
        stopped.set()
        daemon.run(stopped)
