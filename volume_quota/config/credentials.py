"""Connection settings that contradict each other: mutual TLS (``SSL``) or SASL/SCRAM over TLS
(``SASL_SSL``), checked when the settings load, one line per problem.

Only the combination is checked here; what a command requires (a CA, a client certificate or a
SCRAM user) is ``ConnectedSettings.required_kafka_connection``'s to say, and whether the files
are readable the start-up check's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import SecretStr, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from volume_quota.config.sources import describe_setting

TLS_SETTINGS = ("tls_ca_file", "tls_cert_file", "tls_key_file")
SASL_SETTINGS = ("sasl_username", "sasl_password", "sasl_password_file")


class CredentialSettings(Protocol):
    """The connection settings read here (``ConnectionSettings``)."""

    @property
    def security_protocol(self) -> str: ...
    @property
    def sasl_password(self) -> SecretStr | None: ...
    @property
    def sasl_password_file(self) -> Path | None: ...


def credential_problems(settings: CredentialSettings) -> list[tuple[str, str]]:
    """(setting, problem) for each contradiction; the setting is '' when no single one is."""
    given = {name: getattr(settings, name) is not None for name in TLS_SETTINGS}
    problems: list[tuple[str, str]] = []
    if settings.security_protocol == "SSL":
        if any(given.values()) and not all(given.values()):
            missing = ", ".join(describe_setting(name) for name in TLS_SETTINGS if not given[name])
            problems.append(("", f"TLS needs all three files; missing {missing}"))
        problems += [
            (name, f"applies only with {describe_setting('security_protocol')}=SASL_SSL")
            for name in SASL_SETTINGS
            if getattr(settings, name) is not None
        ]
        return problems
    if given["tls_cert_file"] != given["tls_key_file"]:
        missing = "tls_key_file" if given["tls_cert_file"] else "tls_cert_file"
        present = "tls_cert_file" if given["tls_cert_file"] else "tls_key_file"
        problems.append((missing, f"is required with {present}: a certificate needs its key"))
    if settings.sasl_password is not None and settings.sasl_password_file is not None:
        problems.append(("sasl_password_file", "set sasl_password or sasl_password_file, not both"))
    return problems


def raise_problems(model: str, problems: list[tuple[str, str]]) -> None:
    """Raise one ``ValidationError`` with a line error per problem (pydantic adds them to the
    model's other errors, and the loader prints each on its own line)."""
    if not problems:
        return
    raise ValidationError.from_exception_data(
        model,
        [
            InitErrorDetails(
                type=PydanticCustomError("inconsistent_settings", message),
                loc=(setting,) if setting else (),
                input=None,
            )
            for setting, message in problems
        ],
    )
