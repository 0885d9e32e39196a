"""mTLS settings for Spark's Kafka source from the PEM files an operator already has.

Kafka's Java client reads a PEM keystore as one file holding the private key (PKCS#8) and the
certificate chain. Operators usually have the key and the certificate as two files, and the
key is often in the traditional (PKCS#1 / SEC1) form. This module writes the combined file,
readable by its owner only, into a private temporary directory that lives for the run, and
returns the ``kafka.*`` options. JKS/PKCS12 keystores pass straight through.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives import serialization

from spark_history.errors import HistoryUsageError

if TYPE_CHECKING:
    from pydantic import SecretStr

    from spark_history.source_settings import KafkaSourceSettings


@dataclass(frozen=True, slots=True)
class TlsFiles:
    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    key_password: str | None = None
    keystore: Path | None = None
    keystore_password: str | None = None
    truststore: Path | None = None
    truststore_password: str | None = None
    verify_hostname: bool = True

    @property
    def enabled(self) -> bool:
        return any(
            path is not None
            for path in (self.ca, self.cert, self.key, self.keystore, self.truststore)
        )


def tls_files(settings: KafkaSourceSettings) -> TlsFiles:
    """The TLS files and passwords of the history's Kafka settings."""
    return TlsFiles(
        ca=settings.tls_ca_file,
        cert=settings.tls_cert_file,
        key=settings.tls_key_file,
        key_password=_secret(settings.tls_key_password),
        keystore=settings.tls_keystore_file,
        keystore_password=_secret(settings.tls_keystore_password),
        truststore=settings.tls_truststore_file,
        truststore_password=_secret(settings.tls_truststore_password),
        verify_hostname=settings.tls_verify_hostname,
    )


def _secret(value: SecretStr | None) -> str | None:
    return None if value is None else value.get_secret_value()


@contextmanager
def kafka_tls_options(files: TlsFiles) -> Iterator[dict[str, str]]:
    """The ``kafka.*`` options for ``files``; temporary files are removed on exit."""
    if not files.enabled:
        yield {}
        return
    for path in (files.ca, files.cert, files.key, files.keystore, files.truststore):
        if path is not None and not path.is_file():
            raise HistoryUsageError(f"TLS file {path} does not exist")
    if (files.cert is None) != (files.key is None):
        raise HistoryUsageError("--tls-cert-file and --tls-key-file go together")
    options = {"kafka.security.protocol": "SSL"}
    if not files.verify_hostname:
        options["kafka.ssl.endpoint.identification.algorithm"] = ""
    if files.ca is not None:
        options["kafka.ssl.truststore.type"] = "PEM"
        options["kafka.ssl.truststore.location"] = str(files.ca.resolve())
    elif files.truststore is not None:
        options["kafka.ssl.truststore.location"] = str(files.truststore.resolve())
        if files.truststore_password is not None:
            options["kafka.ssl.truststore.password"] = files.truststore_password
    if files.keystore is not None:
        options["kafka.ssl.keystore.location"] = str(files.keystore.resolve())
        if files.keystore_password is not None:
            options["kafka.ssl.keystore.password"] = files.keystore_password
        if files.key_password is not None:
            options["kafka.ssl.key.password"] = files.key_password
        yield options
        return
    if files.cert is None or files.key is None:
        yield options
        return
    with tempfile.TemporaryDirectory(prefix="volume-quota-tls-") as directory:
        combined = Path(directory) / "keystore.pem"
        key = _pkcs8_key(files.key, files.key_password)
        descriptor = os.open(combined, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(key)
            stream.write(files.cert.read_bytes())
        options["kafka.ssl.keystore.type"] = "PEM"
        options["kafka.ssl.keystore.location"] = str(combined)
        yield options


def _pkcs8_key(path: Path, password: str | None) -> bytes:
    """The key as unencrypted PKCS#8 PEM (the form Kafka's PEM keystore reads without one)."""
    try:
        key = serialization.load_pem_private_key(
            path.read_bytes(), password.encode() if password is not None else None
        )
    except (ValueError, TypeError) as error:
        raise HistoryUsageError(f"cannot read the private key {path}: {error}") from None
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
