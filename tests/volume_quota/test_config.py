"""The composed settings: one default per fact, per-command flags, broker identity from files."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import structlog
import structlog.testing

from consumer.policy import DecisionPolicy
from consumer.signatures import SignatureMode
from schemas.decision import OnMissing
from tests.publisher.tls_material import TestCertificateAuthority
from volume_quota.cli import build_parser
from volume_quota.config import DecideSettings, SidecarSettings, StatusSettings, load_settings
from volume_quota.config.commands import ALL_SETTINGS as ALL
from volume_quota.config.concerns import PolicySettings
from volume_quota.config.reference import BEGIN, END, settings_reference
from volume_quota.config.sources import load
from volume_quota.config.startup_checks import wait_for_broker_files
from volume_quota.daemons.decider import announce_override_trust, override_policy
from volume_quota.errors import UsageError


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_evaluate_and_decide_decide_with_the_same_default_policy(tmp_path: Path) -> None:
    decide = load(DecideSettings, {}).decision_policy()
    status = load(StatusSettings, {}).decision_policy()
    evaluate_flags = parsed("evaluate", str(tmp_path / "snapshots.jsonl"))
    evaluate = load(
        PolicySettings,
        {name: getattr(evaluate_flags, name) for name in PolicySettings.model_fields},
    ).decision_policy()
    assert decide == status == evaluate
    # The library's own defaults are the same facts, not copies that could drift.
    assert decide == DecisionPolicy()
    assert decide.stale_after_seconds == 30.0
    assert decide.on_missing is OnMissing.PAUSE


def test_each_command_offers_the_flags_of_its_concerns_only() -> None:
    def flags(command: str) -> set[str]:
        subparsers = build_parser()._subparsers
        assert subparsers is not None
        action = subparsers._group_actions[0]
        parser = action.choices[command]  # type: ignore[index]
        return {option for a in parser._actions for option in a.option_strings}

    assert "--decision-file" in flags("decide")
    assert "--decision-file" not in flags("publish")
    assert "--log-dirs" in flags("publish")
    assert "--log-dirs" not in flags("decide")
    assert {"--log-dirs", "--decision-file", "--stale-after"} <= flags("sidecar")
    assert "--stale-after" in flags("status")
    assert "--tls-key-password" not in flags("sidecar")  # secrets never on a command line


def test_a_key_of_another_command_in_a_shared_file_is_fine(tmp_path: Path) -> None:
    config = tmp_path / "volume-quota.toml"
    config.write_text('log_dirs = ["/"]\nstale_after = "45s"\n')
    settings = load(DecideSettings, {}, config, frozenset({"log_dirs", "stale_after"}))
    assert settings.stale_after == 45.0


def test_the_broker_id_comes_from_meta_properties_when_nothing_names_it(tmp_path: Path) -> None:
    log_dir = tmp_path / "data-0"
    log_dir.mkdir()
    (log_dir / "meta.properties").write_text(
        "#\nversion=1\ncluster.id=abc\nnode.id=101\ndirectory.id=xyz\n"
    )
    settings = load_settings({"log_dirs": str(log_dir)})
    assert settings.required_broker_id() == 101
    assert load_settings({"log_dirs": str(log_dir), "broker_id": 7}).required_broker_id() == 7


def test_the_settings_reference_in_the_docs_is_the_generated_one() -> None:
    document = (Path(__file__).resolve().parents[2] / "docs" / "publisher.md").read_text()
    start, end = document.index(BEGIN), document.index(END) + len(END)
    assert document[start:end] == settings_reference(), (
        "docs/publisher.md drifted: paste `python -m volume_quota.config.reference` into it"
    )


def test_a_sidecar_waits_for_its_broker_to_format_the_log_dir(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    settings = load(
        SidecarSettings, {"log_dirs": str(log_dir), "wait_for_log_dirs": "30s"}, None, ALL
    )
    now = [0.0]

    def sleep(seconds: float) -> None:  # the broker formats its storage after 3 s
        now[0] += seconds
        if now[0] >= 3.0:
            log_dir.mkdir(exist_ok=True)
        if now[0] >= 4.0:
            (log_dir / "meta.properties").write_text("node.id=1001\n")

    wait_for_broker_files(settings, sleep=sleep, monotonic=lambda: now[0])
    assert now[0] == 4.0
    assert settings.required_broker_id() == 1001


def test_without_a_wait_a_missing_log_dir_is_reported_at_once(tmp_path: Path) -> None:
    settings = load(SidecarSettings, {"log_dirs": str(tmp_path / "nothing")}, None, ALL)
    wait_for_broker_files(settings, sleep=lambda _: pytest.fail("waited"), monotonic=lambda: 0.0)


def test_overrides_are_checked_by_default_but_not_refused_until_operators_are_named() -> None:
    # warn: every shipped deployment keeps its emergency switch; an unverified override says so.
    settings = load(DecideSettings, {})
    assert settings.override_signatures is SignatureMode.WARN
    assert settings.override_signers == []
    assert settings.override_max_clock_skew == 300.0
    assert load(StatusSettings, {}).override_signatures is SignatureMode.WARN


def test_require_without_an_operator_identity_is_a_configuration_error() -> None:
    with pytest.raises(UsageError, match="require needs override_signers"):
        load(DecideSettings, {"override_signatures": "require"})


def test_operator_identities_are_whole_identities_separated_by_semicolons() -> None:
    settings = load(
        DecideSettings,
        {
            "override_signatures": "REQUIRE",
            "override_signers": "CN=alice,O=ops; DNS:oncall.ops.example",
            "override_max_clock_skew": "2m",
        },
    )
    assert settings.override_signers == ["CN=alice,O=ops", "DNS:oncall.ops.example"]
    assert settings.override_max_clock_skew == 120.0
    with pytest.raises(UsageError, match="no \\{broker\\}"):
        load(DecideSettings, {"override_signers": "CN=kafka-{broker}"})


def test_the_override_policy_trusts_the_cluster_ca_for_the_named_operators(
    tmp_path: Path,
) -> None:
    ca = TestCertificateAuthority()
    tls = ca.write_identity(tmp_path, "kafka-0")
    values = {"override_signatures": "require", "override_signers": "CN=alice"}
    files = {
        "tls_ca_file": str(tls.ca),
        "tls_cert_file": str(tls.cert),
        "tls_key_file": str(tls.key),
    }
    policy = override_policy(load(DecideSettings, {**values, **files}))
    assert policy.mode is SignatureMode.REQUIRE
    assert list(policy.ca_certificates) == [ca.certificate]
    assert tuple(policy.operators) == ("CN=alice",)
    with pytest.raises(UsageError, match="VOLUME_QUOTA_TLS_CA_FILE"):
        override_policy(load(DecideSettings, values))
    unverifiable = override_policy(load(DecideSettings, {}))  # warn without a CA: all unverified
    assert (unverifiable.mode, list(unverifiable.ca_certificates)) == (SignatureMode.WARN, [])


def announced(settings: DecideSettings) -> list[str]:
    """What ``announce_override_trust`` logs, whatever logging an earlier test configured."""
    with structlog.testing.capture_logs() as logs:
        announce_override_trust(settings)
    return [str(entry["event"]) for entry in logs]


def test_a_decider_says_at_start_whether_overrides_can_be_verified(tmp_path: Path) -> None:
    (unchecked,) = announced(load(DecideSettings, {"override_signatures": "accept"}))
    assert "override signatures are not checked" in unchecked
    (unverifiable,) = announced(load(DecideSettings, {}))
    assert "no override can be verified" in unverifiable
    tls = TestCertificateAuthority().write_identity(tmp_path, "kafka-0")
    files = {
        "tls_ca_file": str(tls.ca),
        "tls_cert_file": str(tls.cert),
        "tls_key_file": str(tls.key),
    }
    (checked,) = announced(load(DecideSettings, {**files, "override_signers": "CN=alice"}))
    assert "overrides checked against the operator identities" in checked
