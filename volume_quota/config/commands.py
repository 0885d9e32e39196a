"""The settings of each command, composed from the concerns, and what a command requires of them.

``publish`` = connection + publishing + HTTP; ``decide`` = connection + deciding + HTTP;
``sidecar`` = both; ``status`` = connection + the decision policy; ``retire`` = connection +
the topic. A missing required value is a ``UsageError`` naming the setting.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import model_validator

from publisher.topic_requirements import TopicRequirements
from volume_quota.broker_identity import BrokerIdentityError, broker_identity
from volume_quota.certificate_files import TlsFiles
from volume_quota.config.concerns import (
    ConnectionSettings,
    DecidingSettings,
    HttpSettings,
    PolicySettings,
    PublishingSettings,
)
from volume_quota.config.credentials import TLS_SETTINGS
from volume_quota.config.sources import describe_setting
from volume_quota.config.trust import AgentSettings, OverrideTrustSettings, SignatureSettings
from volume_quota.config.usage import UsageSettings, UsageTopicSettings
from volume_quota.errors import UsageError
from volume_quota.kafka_client_config import KafkaConnection, SaslCredentials


class ConnectedSettings(ConnectionSettings):
    """What every command that talks to Kafka requires of its connection settings."""

    def required_tls_files(self) -> TlsFiles:
        """The client certificate, its key and the CA (mutual TLS, signing)."""
        if self.tls_ca_file is None or self.tls_cert_file is None or self.tls_key_file is None:
            names = ", ".join(describe_setting(name) for name in TLS_SETTINGS)
            raise UsageError(f"TLS files are required: set {names}")
        password = self.tls_key_password.get_secret_value() if self.tls_key_password else None
        return TlsFiles(self.tls_ca_file, self.tls_cert_file, self.tls_key_file, password)

    def client_tls_files(self) -> TlsFiles | None:
        """The client certificate's files; None with SASL_SSL and no certificate (then nothing
        signs snapshots)."""
        if self.security_protocol == "SASL_SSL" and self.tls_cert_file is None:
            return None
        return self.required_tls_files()

    def required_ca_file(self) -> Path:
        if self.tls_ca_file is None:
            raise UsageError(f"{describe_setting('tls_ca_file')} is required")
        return self.tls_ca_file

    def tls_paths(self) -> tuple[Path, ...]:
        """The TLS files given (the CA, and the client certificate and key if any)."""
        names = (self.tls_ca_file, self.tls_cert_file, self.tls_key_file)
        return tuple(path for path in names if path is not None)

    def connection_problems(self) -> list[str]:
        """Every setting the Kafka connection still lacks, one line each."""
        problems = []
        if self.bootstrap_servers is None:
            problems.append(f"{describe_setting('bootstrap_servers')} is required")
        if self.security_protocol == "SSL":
            if None in (self.tls_ca_file, self.tls_cert_file, self.tls_key_file):
                names = ", ".join(describe_setting(name) for name in TLS_SETTINGS)
                problems.append(f"TLS files are required: set {names}")
            return problems
        with_sasl = "with security_protocol=SASL_SSL"
        if self.tls_ca_file is None:
            problems.append(
                f"{describe_setting('tls_ca_file')} is required {with_sasl}: it verifies the "
                "brokers' certificates"
            )
        if self.sasl_username is None:
            problems.append(f"{describe_setting('sasl_username')} is required {with_sasl}")
        if self.sasl_password is None and self.sasl_password_file is None:
            problems.append(
                f"{describe_setting('sasl_password')} or "
                f"{describe_setting('sasl_password_file')} is required {with_sasl}"
            )
        return problems

    def required_kafka_connection(self) -> KafkaConnection:
        problems = self.connection_problems()
        if problems or self.bootstrap_servers is None:
            raise UsageError(*problems)
        tls = self.client_tls_files()
        return KafkaConnection(
            bootstrap_servers=self.bootstrap_servers,
            ca_file=self.required_ca_file(),
            certificate_file=None if tls is None else tls.certificate_file,
            key_file=None if tls is None else tls.key_file,
            key_password=None if tls is None else tls.key_password,
            verify_hostname=self.tls_verify_hostname,
            sasl=self._sasl_credentials(),
        )

    def _sasl_credentials(self) -> SaslCredentials | None:
        if self.security_protocol != "SASL_SSL" or self.sasl_username is None:
            return None
        if self.sasl_password is not None:
            password = self.sasl_password.get_secret_value()
        elif self.sasl_password_file is not None:
            password = read_password_file(self.sasl_password_file)
        else:  # connection_problems reports it first
            raise UsageError(f"{describe_setting('sasl_password')} is required")
        return SaslCredentials(self.sasl_username, password, self.sasl_mechanism)


def read_password_file(path: Path) -> str:
    """The password in ``path`` without its trailing line breaks; ``UsageError`` naming the
    setting when the file cannot be read or holds no password."""
    where = f"invalid setting {describe_setting('sasl_password_file')}"
    try:
        password = path.read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as error:
        raise UsageError(f"{where}: cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{where}: {path} is not UTF-8 text") from None
    if not password:
        raise UsageError(f"{where}: {path} is empty")
    return password


class PublishSettings(ConnectedSettings, PublishingSettings, UsageSettings, HttpSettings):
    """``volume-quota publish`` (and ``retire``, which uses the connection and the topic)."""

    def required_log_dirs(self) -> list[Path]:
        """Every configured log dir, the explicit ones first, without duplicates."""
        try:
            identity = broker_identity(self.server_properties, self.log_dirs)
        except BrokerIdentityError as error:
            raise UsageError(f"{describe_setting('server_properties')}: {error}") from None
        if not identity.log_dirs:
            raise UsageError(
                f"no log dir to measure: set {describe_setting('log_dirs')} or "
                f"{describe_setting('server_properties')}"
            )
        return list(identity.log_dirs)

    def required_broker_id(self) -> int:
        if self.broker_id is not None:
            return self.broker_id
        try:
            identity = broker_identity(self.server_properties, self.log_dirs)
        except BrokerIdentityError as error:
            raise UsageError(f"{describe_setting('server_properties')}: {error}") from None
        if identity.node_id is not None:
            return identity.node_id
        raise UsageError(
            f"{describe_setting('broker_id')} is required (or a server_properties file that "
            "sets node.id, or a log dir whose meta.properties does)"
        )

    def topic_requirements(self) -> TopicRequirements:
        return TopicRequirements(
            name=self.topic,
            partitions=self.topic_partitions,
            replication_factor=self.topic_replication_factor,
            min_compaction_lag_seconds=self.topic_min_compaction_lag,
            segment_seconds=self.topic_segment_interval,
        )

    def usage_topic_requirements(self) -> TopicRequirements:
        """The usage topic: compacted like the snapshot topic, with no compaction lag (only
        each broker's latest document matters; the history job reads snapshots)."""
        return TopicRequirements(
            name=self.usage_topic,
            partitions=self.topic_partitions,
            replication_factor=self.topic_replication_factor,
            min_compaction_lag_seconds=0.0,
            segment_seconds=self.topic_segment_interval,
        )


class DecideSettings(
    ConnectedSettings,
    DecidingSettings,
    SignatureSettings,
    OverrideTrustSettings,
    UsageTopicSettings,
    HttpSettings,
):
    """``volume-quota decide`` (``usage_topic``: where it reads the topics it names in a
    reason)."""

    def required_decision_file(self) -> Path:
        if self.decision_file is None:
            raise UsageError(
                f"{describe_setting('decision_file')} is required: the broker's quota callback "
                "reads the decision there"
            )
        return self.decision_file


# The pydantic mypy plugin writes a model_construct signature per class; with two bases that
# have different fields the two signatures differ, which is what composition means here.
class SidecarSettings(PublishSettings, DecideSettings):  # type: ignore[misc]
    """``volume-quota sidecar``: the publisher and the decider in one process."""


class StatusSettings(
    ConnectedSettings, PolicySettings, SignatureSettings, OverrideTrustSettings, UsageTopicSettings
):
    """``volume-quota status`` (``usage_topic``: where it reads the top topics of a volume)."""


class ClusterAgentSettings(SidecarSettings, AgentSettings):  # type: ignore[misc]
    """``volume-quota cluster-agent``: the publisher measuring every broker through the Admin
    API and the decider writing to the decisions topic, in one process per cluster."""

    @model_validator(mode="after")
    def _measures_through_the_admin_api(self) -> ClusterAgentSettings:
        if self.source != "admin":
            raise ValueError("the cluster agent measures through the Admin API (source=admin)")
        return self


AGENT_ONLY_LOCAL = frozenset(
    {
        "source",
        "broker_id",
        "log_dirs",
        "server_properties",
        "sample_interval",
        "decision_file",
    }
)
"""Settings of a broker's own sidecar that mean nothing to the cluster agent: no flags."""


ALL_SETTINGS = frozenset(ClusterAgentSettings.model_fields)
"""Every setting any command knows: a config file may hold any of them."""
