"""The agent, with the settings the recipe gives it, believes only its own snapshots and only the
operators' overrides.

The settings are built from the agent container's env (agent-deployment.yaml), with the CA files
moved to local copies: the clients CA (which issues every KafkaUser's certificate, the agent's
among them) as the signature CA, the cluster CA (the brokers') as the TLS one. Certificates are
issued the way Strimzi's User Operator issues a KafkaUser's: subject CN=<KafkaUser name>.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from consumer.overrides import RefusalReason, judge_override_record
from consumer.signatures import SignatureMode, SignatureOutcome, check_signature
from publisher.signing import SnapshotSigner
from schemas.override import OVERRIDE_KEY, QuotaOverride
from tests.publisher.tls_material import TestCertificateAuthority
from tests.strimzi.recipe import USERS, agent_env, documents
from volume_quota.config.commands import ClusterAgentSettings
from volume_quota.daemons.decider import override_policy, signature_policy

FULL = b'{"brokerId": 2, "volumes": "...full"}'
NOW = dt.datetime.now(dt.UTC)
CLUSTER_CA = TestCertificateAuthority()
CLIENTS_CA = TestCertificateAuthority()


def kafka_user(name: str, authority: TestCertificateAuthority = CLIENTS_CA) -> SnapshotSigner:
    """A KafkaUser's certificate and key, as the User Operator issues them."""
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = authority.certify(key.public_key(), name)
    return SnapshotSigner(key, certificate.public_bytes(serialization.Encoding.DER))


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ClusterAgentSettings:
    for name in list(os.environ):
        if name.startswith("VOLUME_QUOTA_"):
            monkeypatch.delenv(name)
    for name, value in agent_env().items():
        monkeypatch.setenv(name, value)
    (tmp_path / "cluster-ca.crt").write_bytes(CLUSTER_CA.pem)
    (tmp_path / "clients-ca.crt").write_bytes(CLIENTS_CA.pem)
    recipe = ClusterAgentSettings(source="admin")
    return recipe.model_copy(
        update={
            "tls_ca_file": tmp_path / "cluster-ca.crt",
            "signature_ca_file": tmp_path / "clients-ca.crt",
        }
    )


def snapshot_outcome(settings: ClusterAgentSettings, signer: SnapshotSigner | None) -> str:
    policy = signature_policy(settings)
    assert policy.mode is SignatureMode.REQUIRE
    assert policy.trust is not None
    headers = [] if signer is None else signer.headers(b"2", FULL)
    return check_signature(b"2", FULL, headers, policy.trust, NOW).outcome.value


def override_refusal(settings: ClusterAgentSettings, signer: SnapshotSigner | None) -> str | None:
    value = QuotaOverride.model_validate(
        {
            "state": "OPEN",
            "reason": "maintenance",
            "setBy": "CN=volume-quota-operator",
            "setAt": NOW,
            "expiresAt": NOW + dt.timedelta(hours=1),
        }
    ).to_json_bytes()
    headers = [] if signer is None else signer.headers(OVERRIDE_KEY, value)
    verdict = judge_override_record(
        OVERRIDE_KEY, value, headers, arrived_at=NOW, now=NOW, policy=override_policy(settings)
    )
    if verdict.refusal is None:
        assert verdict.override is not None
        assert verdict.unverified is None
        return None
    return verdict.refusal.reason.value


def test_only_the_agents_own_snapshots_count(settings: ClusterAgentSettings) -> None:
    assert snapshot_outcome(settings, kafka_user("volume-quota-agent")) == "valid"
    assert snapshot_outcome(settings, None) == SignatureOutcome.UNSIGNED.value
    # Every KafkaUser that may write the topic has a certificate of the same clients CA.
    for other in ("volume-quota-callback", "volume-quota-operator", "producer-1"):
        assert snapshot_outcome(settings, kafka_user(other)) == "wrong_identity", other
    # The brokers' CA vouches for no signer: not even for a certificate named like the agent.
    impostor = kafka_user("volume-quota-agent", CLUSTER_CA)
    assert snapshot_outcome(settings, impostor) == "untrusted_certificate"


def test_only_the_operators_kafkauser_sets_an_override(settings: ClusterAgentSettings) -> None:
    assert override_refusal(settings, kafka_user("volume-quota-operator")) is None
    assert override_refusal(settings, None) == RefusalReason.UNSIGNED.value
    assert override_refusal(settings, kafka_user("volume-quota-agent")) == "not_an_operator"
    impostor = kafka_user("volume-quota-operator", CLUSTER_CA)
    assert override_refusal(settings, impostor) == "untrusted_certificate"


def test_the_trusted_identities_are_the_recipes_kafkausers() -> None:
    """Strimzi's certificate subject for a TLS KafkaUser is CN=<its name>, exactly."""
    users = {user["metadata"]["name"]: user for user in documents(USERS)}
    env = agent_env()
    for setting in ("VOLUME_QUOTA_CLUSTER_SIGNERS", "VOLUME_QUOTA_OVERRIDE_SIGNERS"):
        name = env[setting].removeprefix("CN=")
        assert env[setting] == f"CN={name}", setting
        assert name in users, setting
        assert users[name]["spec"]["authentication"]["type"] == "tls"
    operator = users[env["VOLUME_QUOTA_OVERRIDE_SIGNERS"].removeprefix("CN=")]
    acls = operator["spec"]["authorization"]["acls"]
    assert [(acl["resource"]["name"], sorted(acl["operations"])) for acl in acls] == [
        ("__volume_quota_overrides", ["Describe", "DescribeConfigs", "Write"])
    ]
    assert (
        env["VOLUME_QUOTA_SNAPSHOT_SIGNATURES"]
        == env["VOLUME_QUOTA_OVERRIDE_SIGNATURES"]
        == ("require")
    )
