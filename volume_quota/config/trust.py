"""The settings of the cluster's trust and of the cluster agent (see ``concerns``).

Who may speak for which broker (snapshot signatures, ``consumer.signatures``), and where the
cluster agent writes its decisions.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from consumer.decision_topic import DEFAULT_DECISIONS_TOPIC
from consumer.signatures import SignatureMode, identity_pattern
from volume_quota.config.concerns import help_text
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
