"""The settings of the cluster's trust and of the cluster agent (see ``concerns``).

Who may speak for which broker (snapshot signatures, ``consumer.signatures``), who may set an
override (operator signatures, ``consumer.overrides``), and where the cluster agent writes its
decisions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from consumer.decision_topic import DEFAULT_DECISIONS_TOPIC
from consumer.overrides import DEFAULT_MAX_SET_AT_SKEW_SECONDS
from consumer.signatures import SignatureMode, identity_pattern
from volume_quota.config.concerns import Seconds, help_text
from volume_quota.config.sources import ENV_PREFIX, SettingsBase, describe_setting


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _semicolon_separated(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(";") if part.strip()]
    return value


def _one_broker_placeholder(rules: list[str]) -> list[str]:
    for rule in rules:
        identity_pattern(rule)  # raises ValueError naming the rule
    return rules


class SignatureSettings(SettingsBase):
    """Who may speak for which broker: checking the signatures of snapshot messages."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    snapshot_signatures: Annotated[SignatureMode, BeforeValidator(_lower)] = Field(
        SignatureMode.ACCEPT,
        **help_text(
            "accept (do not check), warn (check, count and log failures) or require (reject "
            "unsigned or wrongly signed snapshots)",
            "accept|warn|require",
        ),
    )
    signer_identities: Annotated[
        list[str],
        NoDecode,
        BeforeValidator(_semicolon_separated),
        AfterValidator(_one_broker_placeholder),
    ] = Field(
        default_factory=list,
        **help_text(
            "certificate identities that may sign for one broker, {broker} standing for its id, "
            "e.g. CN=kafka-{broker}; ';'-separated",
            "RULE;...",
        ),
    )
    cluster_signers: Annotated[list[str], NoDecode, BeforeValidator(_semicolon_separated)] = Field(
        default_factory=list,
        **help_text(
            "certificate identities that may sign for every broker (a cluster-level "
            "publisher, the operator who retires brokers), e.g. CN=volume-quota-agent; "
            "';'-separated",
            "IDENTITY;...",
        ),
    )
    signature_ca_file: Path | None = Field(
        None,
        **help_text(
            "PEM CA bundle that issued the signers' certificates, the only one snapshot and "
            "override signatures are checked against; never used for TLS (default: "
            "tls_ca_file). Re-read when it changes",
            "FILE",
        ),
    )

    @model_validator(mode="after")
    def _someone_may_sign(self) -> SignatureSettings:
        if self.snapshot_signatures is not SignatureMode.ACCEPT and not (
            self.signer_identities or self.cluster_signers
        ):
            raise ValueError(
                f"{describe_setting('snapshot_signatures')}={self.snapshot_signatures.value} "
                f"needs {describe_setting('signer_identities')} or "
                f"{describe_setting('cluster_signers')}: otherwise no snapshot could be trusted"
            )
        return self


def _whole_identities(identities: list[str]) -> list[str]:
    for identity in identities:
        if "{broker}" in identity:
            raise ValueError(f"{identity!r}: an operator identity has no {{broker}} in it")
    return identities


class OverrideTrustSettings(SettingsBase):
    """Who may set an override: checking the signatures of override records, and their setAt."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    override_signatures: Annotated[SignatureMode, BeforeValidator(_lower)] = Field(
        SignatureMode.WARN,
        **help_text(
            "accept (do not check), warn (check; an override not signed by one of "
            "override_signers still takes effect, shown as unverified, logged) or require "
            "(refuse it: it never takes effect)",
            "accept|warn|require",
        ),
    )
    override_signers: Annotated[
        list[str],
        NoDecode,
        BeforeValidator(_semicolon_separated),
        AfterValidator(_whole_identities),
    ] = Field(
        default_factory=list,
        **help_text(
            "the operators: certificate identities that may set or clear an override, matched "
            "exactly against the subject (RFC 4514, e.g. CN=alice,O=ops) or a DNS name "
            "(DNS:oncall.ops.example); the one that matched becomes the override's setBy; "
            "';'-separated",
            "IDENTITY;...",
        ),
    )
    override_max_clock_skew: Seconds = Field(
        DEFAULT_MAX_SET_AT_SKEW_SECONDS,
        **help_text(
            "refuse an override whose setAt is further than this from the record's Kafka "
            "timestamp, or ahead of the reader's clock by more",
            "DURATION",
        ),
    )

    @model_validator(mode="after")
    def _an_operator_may_sign(self) -> OverrideTrustSettings:
        if self.override_signatures is SignatureMode.REQUIRE and not self.override_signers:
            raise ValueError(
                f"{describe_setting('override_signatures')}=require needs "
                f"{describe_setting('override_signers')}: otherwise no override could be set"
            )
        return self


class AgentSettings(SettingsBase):
    """The cluster-level agent's own: where its decisions go for the brokers' callbacks."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    decisions_topic: str = Field(
        DEFAULT_DECISIONS_TOPIC,
        min_length=1,
        max_length=249,
        pattern=r"^[A-Za-z0-9._-]+$",
        **help_text(
            "the compacted topic the callbacks read each decision from (key 'cluster')", "NAME"
        ),
    )
