from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.publisher.tls_material import TestCertificateAuthority, encrypted_key_pem
from volume_quota.certificate_files import TlsFiles, TlsFileWatch, check_tls_files, fingerprint
from volume_quota.certificate_inspection import (
    CertificateError,
    check_key_matches_certificate,
    count_certificates,
    seconds_until_expiry,
    summarize_certificate,
)


def test_summary_and_expiry() -> None:
    authority = TestCertificateAuthority()
    certificate, _key = authority.issue("publisher", dt.timedelta(days=10))
    summary = summarize_certificate(certificate)
    assert summary.subject == "CN=publisher"
    now = dt.datetime.now(dt.UTC)
    remaining = seconds_until_expiry(summary, now)
    assert 10 * 86400 - 120 < remaining <= 10 * 86400
    assert seconds_until_expiry(summary, now + dt.timedelta(days=11)) < 0


def test_key_must_belong_to_certificate() -> None:
    authority = TestCertificateAuthority()
    certificate, key = authority.issue("publisher")
    _other_certificate, other_key = authority.issue("intruder")
    check_key_matches_certificate(certificate, key)
    with pytest.raises(CertificateError, match="does not belong"):
        check_key_matches_certificate(certificate, other_key)


def test_encrypted_keys_need_their_password() -> None:
    key = encrypted_key_pem(b"pw")
    authority = TestCertificateAuthority()
    certificate, _ = authority.issue("x")
    with pytest.raises(CertificateError, match="cannot open the private key"):
        check_key_matches_certificate(certificate, key)
    with pytest.raises(CertificateError, match="does not belong"):
        check_key_matches_certificate(certificate, key, b"pw")


def test_garbage_is_refused() -> None:
    with pytest.raises(CertificateError, match="no PEM certificate"):
        summarize_certificate(b"hello")
    with pytest.raises(CertificateError, match="no PEM certificate"):
        count_certificates(b"")
    authority = TestCertificateAuthority()
    certificate, _ = authority.issue("x")
    with pytest.raises(CertificateError, match="not a usable PEM private key"):
        check_key_matches_certificate(certificate, b"-----BEGIN PRIVATE KEY-----\nAA\n")
    assert count_certificates(authority.pem + certificate) == 2


def test_file_watch_sees_replaced_content(tmp_path: Path) -> None:
    authority = TestCertificateAuthority()
    paths = authority.write_identity(tmp_path, "publisher")
    files = TlsFiles(paths.ca, paths.cert, paths.key)
    assert check_tls_files(files).subject == "CN=publisher"
    watch = TlsFileWatch(files)
    assert watch.changed() is None
    certificate, key = authority.issue("publisher")
    paths.cert.write_bytes(certificate)
    changed = watch.changed()
    assert changed is not None
    with pytest.raises(CertificateError):
        check_tls_files(files)  # new certificate, old key: rotation half done
    paths.key.write_bytes(key)
    changed = watch.changed()
    assert changed is not None
    check_tls_files(files)
    watch.accept(changed)
    assert watch.changed() is None
    paths.ca.unlink()
    assert fingerprint([paths.ca])[0] == "missing"
    assert watch.changed() is not None
