"""The start-up check: the files the settings name exist and are usable, every problem at once.

Validators only check syntax and ranges; this reads the files (log dirs, server.properties,
the decision file's directory, the TLS files, the signers' CA bundle, the SASL password file)
once, when a command starts, and lists every problem in one ``UsageError``, one line each.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic_settings import BaseSettings

from volume_quota.broker_identity import META_PROPERTIES, BrokerIdentityError, broker_identity
from volume_quota.certificate_files import check_tls_files
from volume_quota.certificate_inspection import (
    CertificateError,
    count_certificates,
    summarize_certificate,
)
from volume_quota.config.commands import (
    ConnectedSettings,
    DecideSettings,
    PublishSettings,
    read_password_file,
)
from volume_quota.config.sources import describe_setting
from volume_quota.config.trust import SignatureSettings
from volume_quota.errors import UsageError


def wait_for_broker_files(
    settings: BaseSettings,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> None:
    """With ``wait_for_log_dirs``, wait until the log dirs exist and, when no broker id is
    configured, one of them holds meta.properties; the start-up check then says what is
    still missing."""
    if not isinstance(settings, PublishSettings) or settings.source != "volumes":
        return
    deadline = monotonic() + settings.wait_for_log_dirs
    while monotonic() < deadline and not _broker_files_present(settings):
        sleep(1.0)


def _broker_files_present(settings: PublishSettings) -> bool:
    if not all(path.is_dir() for path in settings.log_dirs):
        return False
    if settings.broker_id is not None or settings.server_properties is not None:
        return True
    return any((path / META_PROPERTIES).is_file() for path in settings.log_dirs)


def check_at_start(settings: BaseSettings) -> None:
    """Raise ``UsageError`` listing every problem with the files ``settings`` name."""
    problems = startup_problems(settings)
    if problems:
        raise UsageError(*problems)


def startup_problems(settings: BaseSettings) -> list[str]:
    problems: list[str] = []
    if isinstance(settings, PublishSettings) and settings.source == "volumes":
        problems.extend(_log_dir_problems(settings))
    if isinstance(settings, DecideSettings) and settings.decision_file is not None:
        problems.extend(_decision_file_problems(settings.decision_file))
    if isinstance(settings, ConnectedSettings):
        problems.extend(_tls_problems(settings))
        if settings.sasl_password_file is not None:
            try:
                read_password_file(settings.sasl_password_file)
            except UsageError as error:
                problems.extend(error.problems)
    if isinstance(settings, SignatureSettings) and settings.signature_ca_file is not None:
        problems.extend(_file_problems("signature_ca_file", settings.signature_ca_file))
    return problems


def _log_dir_problems(settings: PublishSettings) -> list[str]:
    problems = [
        f"invalid setting {describe_setting('log_dirs')}: {problem}"
        for log_dir in settings.log_dirs
        if (problem := _directory_problem(log_dir, "log dir")) is not None
    ]
    if settings.server_properties is None:
        return problems
    where = describe_setting("server_properties")
    try:
        identity = broker_identity(settings.server_properties, [])
    except BrokerIdentityError as error:
        return [*problems, f"invalid setting {where}: {error}"]
    named = f"{settings.server_properties} names log dir"
    problems.extend(
        f"invalid setting {where}: {problem}"
        for log_dir in identity.log_dirs
        if (problem := _directory_problem(log_dir, named)) is not None
    )
    return problems


def _directory_problem(path: Path, what: str) -> str | None:
    if not path.is_absolute():
        return f"{what} {path} is not an absolute path"
    if not path.exists():
        return f"{what} {path} does not exist"
    if not path.is_dir():
        return f"{what} {path} is not a directory"
    return None


def _decision_file_problems(path: Path) -> list[str]:
    where = f"invalid setting {describe_setting('decision_file')}"
    if not path.parent.is_dir():
        return [f"{where}: directory {path.parent} does not exist"]
    if path.is_dir():
        return [f"{where}: {path} is a directory"]
    return []


def _file_problems(
    name: str, path: Path, inspect: Callable[[bytes], object] | None = count_certificates
) -> list[str]:
    """Why the file of setting ``name`` cannot be used: unreadable, or ``inspect`` refuses it."""
    try:
        content = path.read_bytes()
        if inspect is not None:
            inspect(content)
    except OSError as error:
        return [
            f"invalid setting {describe_setting(name)}: cannot read {path}: "
            f"{error.strerror or error}"
        ]
    except CertificateError as error:
        return [f"invalid setting {describe_setting(name)}: {path} {error}"]
    return []


def _tls_problems(settings: ConnectedSettings) -> list[str]:
    checks = (
        ("tls_ca_file", settings.tls_ca_file, count_certificates),
        ("tls_cert_file", settings.tls_cert_file, summarize_certificate),
        ("tls_key_file", settings.tls_key_file, None),
    )
    problems = []
    for name, path, inspect in checks:
        if path is not None:
            problems.extend(_file_problems(name, path, inspect))
    if problems or settings.tls_ca_file is None or settings.tls_cert_file is None:
        return problems  # with SASL_SSL, a CA alone is a complete set
    try:
        check_tls_files(settings.required_tls_files())
    except (CertificateError, OSError) as error:
        problems.append(f"invalid setting {describe_setting('tls_key_file')}: {error}")
    return problems
