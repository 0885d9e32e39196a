"""The TLS files on disk: reading them, and noticing when they are replaced (rotation).

Strimzi and cert-manager rotate certificates by replacing the files (for a Kubernetes secret
volume, by swapping a symlink). librdkafka reads the files once, when a client is created, so the
publisher watches their content and rebuilds its producer when it changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from publisher.signing import SnapshotSigner
from volume_quota.certificate_inspection import (
    CertificateError,
    CertificateSummary,
    check_key_matches_certificate,
    count_certificates,
    refusal_of_rotation,
    summarize_certificate,
)


@dataclass(frozen=True, slots=True)
class TlsFiles:
    ca_file: Path
    certificate_file: Path
    key_file: Path
    key_password: str | None = None

    @property
    def paths(self) -> tuple[Path, Path, Path]:
        return (self.ca_file, self.certificate_file, self.key_file)


def fingerprint(paths: Sequence[Path]) -> tuple[str, ...]:
    """A SHA-256 of each file's content ("missing" when unreadable): equal means unchanged."""
    digests = []
    for path in paths:
        try:
            digests.append(hashlib.sha256(path.read_bytes()).hexdigest())
        except OSError:
            digests.append("missing")
    return tuple(digests)


def load_signer(files: TlsFiles) -> SnapshotSigner:
    """A signer of snapshot messages from the client certificate and key of ``files``."""
    certificate = x509.load_pem_x509_certificate(files.certificate_file.read_bytes())
    password = files.key_password.encode() if files.key_password is not None else None
    key = serialization.load_pem_private_key(files.key_file.read_bytes(), password)
    return SnapshotSigner(key, certificate.public_bytes(serialization.Encoding.DER))


def check_tls_files(files: TlsFiles) -> CertificateSummary:
    """Raise ``CertificateError``/``OSError`` unless the files form a usable set; return the
    client certificate's summary."""
    count_certificates(files.ca_file.read_bytes())
    certificate_pem = files.certificate_file.read_bytes()
    password = files.key_password.encode() if files.key_password is not None else None
    check_key_matches_certificate(certificate_pem, files.key_file.read_bytes(), password)
    return summarize_certificate(certificate_pem)


class FileWatch:
    """Tells when any of ``paths`` changed since the last accepted (or refused) version."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self._paths = tuple(paths)
        self._accepted = fingerprint(self._paths)
        self._refused: tuple[str, ...] | None = None

    def changed(self) -> tuple[str, ...] | None:
        """The new fingerprint when any file differs from the accepted version and from the
        version last refused, else None."""
        current = fingerprint(self._paths)
        return None if current in (self._accepted, self._refused) else current

    def accept(self, new_fingerprint: tuple[str, ...]) -> None:
        self._accepted = new_fingerprint
        self._refused = None

    def refuse(self, new_fingerprint: tuple[str, ...]) -> None:
        """Not to be offered again until the files change once more."""
        self._refused = new_fingerprint


class TlsFileWatch(FileWatch):
    """Tells when the TLS files changed since the last accepted version."""

    def __init__(self, files: TlsFiles) -> None:
        super().__init__(files.paths)
        self._files = files

    @property
    def files(self) -> TlsFiles:
        return self._files


@dataclass(frozen=True, slots=True)
class Rotation:
    """New TLS files, checked usable: the client must be rebuilt to read them."""

    summary: CertificateSummary


class TlsCredentials:
    """The client's TLS files as the daemons see them: when they expire, and when a rotation
    has produced a new usable set (a half-written set - new certificate, old key - is not)."""

    def __init__(self, files: TlsFiles) -> None:
        self._watch = TlsFileWatch(files)
        self._summary = check_tls_files(files)
        self._signer = load_signer(files)
        self.last_problem: str | None = None
        """Why the newest change was not taken (for a log line), until a usable set arrives."""

    @property
    def files(self) -> TlsFiles:
        return self._watch.files

    @property
    def not_after(self) -> datetime:
        return self._summary.not_after

    def sign(self, key: bytes | None, value: bytes | None) -> list[tuple[str, bytes]]:
        """Record headers signing a message with the current key (``schemas.signature``)."""
        return self._signer.headers(key, value)

    def rotated(self, now: datetime) -> Rotation | None:
        """A usable new set of files since the last one taken, else None (unchanged, or
        changed but not usable: ``last_problem`` says why, once per change). An expired
        certificate is not usable (``refusal_of_rotation``)."""
        changed = self._watch.changed()
        self.last_problem = None
        if changed is None:
            return None
        try:
            summary = check_tls_files(self._watch.files)
        except (CertificateError, OSError) as error:
            self._watch.refuse(changed)
            self.last_problem = str(error)
            return None
        refusal = refusal_of_rotation(summary, now)
        if refusal is not None:
            self._watch.refuse(changed)
            self.last_problem = refusal
            return None
        self._watch.accept(changed)
        self._summary = summary
        self._signer = load_signer(self._watch.files)
        return Rotation(summary)
