"""Who may speak for which broker: by default every sidecar gets a certificate of its own from
cert-manager's csi-driver (subject CN=<sidecar.principal> for the ACLs, DNS name = its pod's),
and the deciders require each broker's snapshot to be signed by that broker's own identity.

The attack these settings stop: a sidecar certificate shared by all brokers lets anyone holding
it post "broker 2 is fine" every few seconds, superseding broker 2's true "full" snapshot.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest

from consumer.signatures import (
    SignatureMode,
    SignatureOutcome,
    check_operator_signature,
    check_signature,
)
from schemas.snapshot import snapshot_key
from tests.chart.chart_tools import (
    RELEASE,
    HelmError,
    Manifest,
    container,
    env_values,
    find,
    pod_spec,
    render,
)
from tests.kubernetes.control_plane import CertificateAuthority
from volume_quota.certificate_files import TlsFiles, load_signer
from volume_quota.config.commands import StatusSettings
from volume_quota.daemons.decider import override_policy, signature_policy

FULLNAME = f"{RELEASE}-volume-quota"
NAMESPACE = "kafka"
POD_DOMAIN = f"{FULLNAME}-headless.{NAMESPACE}.svc.cluster.local"
CSI_DRIVER = "csi.cert-manager.io"
SHARED = {"sidecar.tls.perBroker.enabled": "false", "sidecar.snapshotSignatures": "warn"}


def csi_dns_name(template: str, pod_name: str) -> str:
    """What csi-driver writes into the certificate for ``pod_name``."""
    return template.replace("${POD_NAME}", pod_name).replace("${POD_NAMESPACE}", NAMESPACE)


def volume(spec: Manifest, name: str) -> Manifest:
    (found,) = [v for v in spec["volumes"] if v["name"] == name]
    return cast(Manifest, found)


@pytest.fixture(scope="module")
def default_release() -> list[Manifest]:
    return render()


def test_every_sidecar_gets_its_own_certificate_from_csi_driver_by_default(
    default_release: list[Manifest],
) -> None:
    spec = pod_spec(default_release)
    csi = volume(spec, "sidecar-tls")["csi"]
    assert csi["driver"] == CSI_DRIVER
    assert csi["readOnly"] is True
    attributes = csi["volumeAttributes"]
    # The subject is the same for every broker: the ACL Job's grants on User:volume-quota-sidecar
    # apply to each pod's certificate unchanged.
    assert attributes["csi.cert-manager.io/common-name"] == "volume-quota-sidecar"
    assert csi_dns_name(attributes["csi.cert-manager.io/dns-names"], f"{FULLNAME}-2") == (
        f"{FULLNAME}-2.{POD_DOMAIN}"
    )
    assert attributes["csi.cert-manager.io/issuer-name"] == "kafka-ca"
    assert attributes["csi.cert-manager.io/issuer-kind"] == "Issuer"
    assert "client auth" in attributes["csi.cert-manager.io/key-usages"].split(",")
    # The files as the sidecar reads them, readable by the sidecar's own group.
    assert attributes["csi.cert-manager.io/certificate-file"] == "tls.crt"
    assert attributes["csi.cert-manager.io/privatekey-file"] == "tls.key"
    assert attributes["csi.cert-manager.io/ca-file"] == "ca.crt"
    sidecar = container(spec, "volume-quota")
    assert attributes["csi.cert-manager.io/fs-group"] == str(
        sidecar["securityContext"]["runAsGroup"]
    )
    assert not any("secret" in v for v in spec["volumes"] if v["name"] == "sidecar-tls")


def test_the_deciders_require_each_brokers_own_signature_by_default(
    default_release: list[Manifest],
) -> None:
    env = env_values(container(pod_spec(default_release), "volume-quota"))
    assert env["VOLUME_QUOTA_SNAPSHOT_SIGNATURES"] == "require"
    assert env["VOLUME_QUOTA_SIGNER_IDENTITIES"] == f"DNS:{FULLNAME}-{{broker}}.{POD_DOMAIN}"


def test_the_signer_rule_matches_the_dns_name_each_pod_is_issued(
    default_release: list[Manifest],
) -> None:
    spec = pod_spec(default_release)
    template = volume(spec, "sidecar-tls")["csi"]["volumeAttributes"][
        "csi.cert-manager.io/dns-names"
    ]
    rule = env_values(container(spec, "volume-quota"))["VOLUME_QUOTA_SIGNER_IDENTITIES"]
    for ordinal in range(3):
        issued = csi_dns_name(template, f"{FULLNAME}-{ordinal}")
        assert f"DNS:{issued}" == rule.replace("{broker}", str(ordinal))


def test_the_helm_test_pod_reads_with_a_csi_certificate_and_the_same_trust(
    default_release: list[Manifest],
) -> None:
    hook = find(default_release, "Pod", f"{FULLNAME}-test")
    csi = volume(hook["spec"], "sidecar-tls")["csi"]
    assert csi["driver"] == CSI_DRIVER
    assert csi["volumeAttributes"]["csi.cert-manager.io/fs-group"] == str(
        hook["spec"]["securityContext"]["fsGroup"]
    )
    env = env_values(hook["spec"]["containers"][0])
    sidecar_env = env_values(container(pod_spec(default_release), "volume-quota"))
    for name in ("VOLUME_QUOTA_SNAPSHOT_SIGNATURES", "VOLUME_QUOTA_SIGNER_IDENTITIES"):
        assert env[name] == sidecar_env[name], name


def test_the_shared_secret_mode_mounts_the_secret_and_only_warns() -> None:
    manifests = render(settings=SHARED)
    spec = pod_spec(manifests)
    secret = volume(spec, "sidecar-tls")["secret"]
    assert secret["secretName"] == f"{FULLNAME}-sidecar-tls"
    env = env_values(container(spec, "volume-quota"))
    assert env["VOLUME_QUOTA_SNAPSHOT_SIGNATURES"] == "warn"
    hook = find(manifests, "Pod", f"{FULLNAME}-test")
    assert volume(hook["spec"], "sidecar-tls")["secret"]["secretName"] == f"{FULLNAME}-sidecar-tls"


def test_require_with_the_shared_secret_is_refused() -> None:
    # Every sidecar would hold the same identity: none matches a broker's own rule, so every
    # snapshot would be rejected and the cluster would PAUSE.
    with pytest.raises(HelmError, match="snapshotSignatures=require needs"):
        render(settings={"sidecar.tls.perBroker.enabled": "false"})


def test_the_history_job_reads_with_its_own_certificate_not_the_sidecars() -> None:
    manifests = render(settings={"history.enabled": "true"})
    cronjob = find(manifests, "CronJob")
    spec = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    tls = volume(spec, "tls")
    assert "csi" not in tls
    assert tls["secret"]["secretName"] == f"{FULLNAME}-history-tls"
    custom = render(settings={"history.enabled": "true", "history.tls.secretName": "reader"})
    spec = find(custom, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert volume(spec, "tls")["secret"]["secretName"] == "reader"


# --- the attack, with the chart's rendered settings ------------------------------------------


@pytest.fixture
def rendered_trust_env(
    default_release: list[Manifest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> CertificateAuthority:
    """The sidecar's environment as the StatefulSet renders it (the CA file from the test CA)."""
    ca = CertificateAuthority.create("kafka-ca")
    (tmp_path / "ca.crt").write_bytes(ca.certificate_pem)
    for name, value in env_values(container(pod_spec(default_release), "volume-quota")).items():
        monkeypatch.setenv(name, value)
    # The decider's own client certificate (broker 0's sidecar reads every broker's snapshots).
    certificate, key = ca.issue(
        "volume-quota-sidecar", dns_names=[f"{FULLNAME}-0.{POD_DOMAIN}"], client=True
    )
    (tmp_path / "reader.crt").write_bytes(certificate)
    (tmp_path / "reader.key").write_bytes(key)
    monkeypatch.setenv("VOLUME_QUOTA_TLS_CA_FILE", str(tmp_path / "ca.crt"))
    monkeypatch.setenv("VOLUME_QUOTA_TLS_CERT_FILE", str(tmp_path / "reader.crt"))
    monkeypatch.setenv("VOLUME_QUOTA_TLS_KEY_FILE", str(tmp_path / "reader.key"))
    return ca


def signed_headers(
    ca: CertificateAuthority, dns_name: str, key: bytes, value: bytes, directory: Path
) -> list[tuple[str, bytes | None]]:
    """Headers as the sidecar holding csi-driver's certificate for ``dns_name`` signs them."""
    certificate, private_key = ca.issue("volume-quota-sidecar", dns_names=[dns_name], client=True)
    files = TlsFiles(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    files.certificate_file.write_bytes(certificate)
    files.key_file.write_bytes(private_key)
    return list(load_signer(files).headers(key, value))


def test_broker_1s_certificate_cannot_speak_for_broker_2_under_the_charts_settings(
    rendered_trust_env: CertificateAuthority, tmp_path: Path
) -> None:
    policy = signature_policy(StatusSettings())
    assert policy.mode is SignatureMode.REQUIRE
    assert policy.trust is not None
    now = datetime.now(UTC)
    value = b'{"brokerId": 2, "fine": true}'
    forged = signed_headers(
        rendered_trust_env, f"{FULLNAME}-1.{POD_DOMAIN}", snapshot_key(2), value, tmp_path
    )
    refused = check_signature(snapshot_key(2), value, forged, policy.trust, now)
    assert refused.outcome is SignatureOutcome.WRONG_IDENTITY, refused
    # Its own broker's snapshot, signed by its own certificate, is trusted.
    own = signed_headers(
        rendered_trust_env, f"{FULLNAME}-2.{POD_DOMAIN}", snapshot_key(2), value, tmp_path
    )
    assert check_signature(snapshot_key(2), value, own, policy.trust, now).trusted


def test_an_operator_identity_may_sign_for_every_broker_when_given() -> None:
    # `volume-quota retire` writes a tombstone for a broker gone for good; under require only a
    # cluster signer's (or the broker's own) counts.
    env = env_values(
        container(
            pod_spec(render(settings={"sidecar.clusterSigners": "CN=kafka-admin"})), "volume-quota"
        )
    )
    assert env["VOLUME_QUOTA_CLUSTER_SIGNERS"] == "CN=kafka-admin"


def test_only_the_operator_identity_sets_an_override_under_the_charts_settings(
    rendered_trust_env: CertificateAuthority, tmp_path: Path
) -> None:
    """Overrides are require by default: a record signed by a sidecar's certificate (which has
    WRITE on nothing but may be stolen from a pod) or unsigned never takes effect; one signed
    by the documented operator certificate (CN=kafka-admin) does."""
    policy = override_policy(StatusSettings())
    assert policy.mode is SignatureMode.REQUIRE
    now = datetime.now(UTC)
    value = b'{"action": "OPEN"}'

    def signed_by(common_name: str) -> SignatureOutcome:
        certificate, private_key = rendered_trust_env.issue(common_name, client=True)
        files = TlsFiles(tmp_path / "ca.crt", tmp_path / "op.crt", tmp_path / "op.key")
        files.certificate_file.write_bytes(certificate)
        files.key_file.write_bytes(private_key)
        headers = list(load_signer(files).headers(b"cluster", value))
        return check_operator_signature(
            b"cluster",
            value,
            headers,
            ca_certificates=policy.ca_certificates,
            operators=policy.operators,
            now=now,
        ).outcome

    assert signed_by("kafka-admin") is SignatureOutcome.VALID
    assert signed_by("volume-quota-sidecar") is SignatureOutcome.WRONG_IDENTITY


def test_require_for_overrides_without_an_operator_identity_is_refused() -> None:
    with pytest.raises(HelmError, match="overrideSignatures=require needs"):
        render(settings={"sidecar.overrideSigners": ""})
