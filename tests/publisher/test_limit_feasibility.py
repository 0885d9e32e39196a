"""Limits a volume can never meet are refused; limits that can never trigger are warned of."""

from __future__ import annotations

from pathlib import Path

import pytest

from publisher.limit_feasibility import limit_problems
from publisher.volumes import Volume, VolumeMeasurement
from tests.publisher.publisher_samples import GIB
from tests.publisher.tls_material import TestCertificateAuthority
from volume_quota.config import load_settings
from volume_quota.daemons.publisher import PublisherDaemon
from volume_quota.errors import UsageError
from volume_quota.limit_parsing import parse_limit

SOFT, HARD = parse_limit("MinFreePercentage:15"), parse_limit("MinFreeBytes:50GiB")


def volume(name: str, capacity: int, **limits: object) -> VolumeMeasurement:
    return VolumeMeasurement(Volume(name, "/" + name, ("/" + name,), **limits), capacity, capacity)  # type: ignore[arg-type]


def test_a_hard_limit_above_a_small_volume_is_refused_naming_it() -> None:
    errors, warnings = limit_problems(
        [volume("data", 500 * GIB), volume("meta", 5 * GIB)], SOFT, HARD
    )
    assert len(errors) == 1
    assert errors[0].startswith("volume meta (5368709120 bytes): the hard limit MinFreeBytes")
    assert "can never be met" in errors[0]
    assert warnings == []


def test_a_volume_of_its_own_limit_is_judged_by_it() -> None:
    meta = volume("meta", 5 * GIB, hard_limit=parse_limit("MinFreeBytes:1GiB"))
    assert limit_problems([meta], SOFT, HARD) == ([], [])


def test_a_soft_limit_of_the_whole_volume_would_throttle_for_good() -> None:
    errors, _ = limit_problems([volume("data", GIB)], parse_limit("MinFreePercentage:100"), HARD)
    assert any("soft limit" in error and "throttle for good" in error for error in errors)


def test_a_consumed_space_level_beyond_the_capacity_never_triggers() -> None:
    soft = parse_limit("ConsumedSpace:2TiB")
    errors, warnings = limit_problems(
        [volume("data", 500 * GIB)], soft, parse_limit("MinFreeBytes:1GiB")
    )
    assert errors == []
    assert warnings == [
        "volume data (536870912000 bytes): the soft limit ConsumedSpace:2199023255552 is above "
        "its capacity and can never trigger"
    ]


def test_the_publisher_refuses_to_start_with_a_limit_its_volume_cannot_meet(
    tmp_path: Path,
) -> None:
    tls = TestCertificateAuthority().write_identity(tmp_path / "tls", "publisher")
    settings = load_settings(
        {
            "broker_id": 1,
            "log_dirs": str(tmp_path),
            "bootstrap_servers": "127.0.0.1:9",
            "tls_ca_file": str(tls.ca),
            "tls_cert_file": str(tls.cert),
            "tls_key_file": str(tls.key),
            "hard_limit": "MinFreeBytes:1PiB",  # larger than any disk of this machine
            "metrics_port": 0,
        }
    )
    with pytest.raises(UsageError) as refused:
        PublisherDaemon(settings, serve_http=False)
    (problem,) = refused.value.problems
    assert "the hard limit MinFreeBytes:1125899906842624 keeps" in problem
    assert "can never be met" in problem
