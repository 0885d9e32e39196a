from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.publisher.tls_material import TestCertificateAuthority, encrypted_key_pem
from volume_quota.certificate_files import (
    TlsCredentials,
    TlsFiles,
    TlsFileWatch,
    check_tls_files,
    fingerprint,
)
from volume_quota.certificate_inspection import (
    CertificateError,
    CertificateSummary,
    check_key_matches_certificate,
    count_certificates,
    refusal_of_rotation,
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


def test_a_certificate_is_refused_as_a_rotation_from_the_instant_it_expires() -> None:
    expiry = dt.datetime(2026, 11, 23, 12, tzinfo=dt.UTC)
    new = CertificateSummary("CN=publisher", expiry)
    assert refusal_of_rotation(new, expiry - dt.timedelta(microseconds=1)) is None
    refusal = refusal_of_rotation(new, expiry)
    assert refusal is not None
    assert "CN=publisher" in refusal
    assert "2026-11-23T12:00:00+00:00" in refusal


def test_a_rotation_to_an_expired_certificate_keeps_the_one_in_use(tmp_path: Path) -> None:
    authority = TestCertificateAuthority()
    paths = authority.write_identity(tmp_path, "publisher")
    credentials = TlsCredentials(TlsFiles(paths.ca, paths.cert, paths.key))
    in_use = credentials.not_after
    now = dt.datetime.now(dt.UTC)
    authority.write_identity(tmp_path, "publisher", valid_for=dt.timedelta(minutes=-5))
    assert credentials.rotated(now) is None
    assert credentials.last_problem is not None
    assert "expired" in credentials.last_problem
    assert credentials.not_after == in_use
    assert credentials.rotated(now) is None
    assert credentials.last_problem is None, "said once per change"
    authority.write_identity(tmp_path, "publisher", valid_for=dt.timedelta(days=3))
    assert credentials.rotated(now) is not None, "a good renewal after it is taken"
    assert credentials.not_after > now + dt.timedelta(days=2)


def test_a_refused_version_is_not_offered_again_until_the_files_change(tmp_path: Path) -> None:
    authority = TestCertificateAuthority()
    paths = authority.write_identity(tmp_path, "publisher")
    watch = TlsFileWatch(TlsFiles(paths.ca, paths.cert, paths.key))
    authority.write_identity(tmp_path, "publisher")
    refused = watch.changed()
    assert refused is not None
    watch.refuse(refused)
    assert watch.changed() is None
    authority.write_identity(tmp_path, "publisher")
    assert watch.changed() not in (None, refused)
