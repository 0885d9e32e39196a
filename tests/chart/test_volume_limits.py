"""Per-volume limits: the chart turns sidecar.volumeLimits into VOLUME_QUOTA_VOLUME_LIMITS, and
the production example, run through the real decision rule, leaves producers alone on a nearly
empty cluster."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from consumer import ClusterState, DecisionPolicy
from schemas.snapshot import VolumeSnapshot
from tests.chart.chart_tools import (
    PRODUCTION_VALUES,
    HelmError,
    Manifest,
    container,
    env_values,
    find,
    mounts,
    pod_spec,
    render,
    render_text,
)

NOW = datetime(2026, 11, 23, 8, 0, 0, tzinfo=UTC)
# Kubernetes quantities and the byte sizes volume-quota's limits use (docs/publisher.md).
_MULTIPLIERS: dict[str, int] = {
    **{unit: 1024 << (10 * power) for power, unit in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi"))},
    **{unit: int("1" + "000" * (power + 1)) for power, unit in enumerate("kMGTP")},
    "K": 1000,
}


def _bytes(text: str) -> int:
    match = re.fullmatch(r"([0-9]+)([KMGTPk]i?)?B?", text)
    assert match is not None, f"not a byte size: {text!r}"
    number: int = int(match[1])
    unit: str = match[2] or ""
    return number * _MULTIPLIERS.get(unit, 1)


def _limit(text: str) -> dict[str, Any]:
    """``TYPE:LEVEL`` as a wire-format limit."""
    limit_type, _, level = text.partition(":")
    if limit_type == "MinFreePercentage":
        return {"type": limit_type, "level": float(level.removesuffix("%"))}
    return {"type": limit_type, "level": _bytes(level)}


def _volume_limits(text: str) -> dict[str, dict[str, dict[str, Any]]]:
    """VOLUME_QUOTA_VOLUME_LIMITS -> {volume: {"soft"|"hard": limit}}."""
    parsed: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in filter(None, text.split(";")):
        volume, _, assignments = entry.partition(":")
        limits = {}
        for assignment in assignments.split(","):
            which, _, limit = assignment.partition("=")
            limits[which] = _limit(limit)
        parsed[volume] = limits
    return parsed


def _declared_volumes(manifests: list[Manifest]) -> list[tuple[str, int]]:
    """(log dir the sidecar measures, size of the claim behind it) for every broker volume."""
    statefulset = find(manifests, "StatefulSet")
    claims = {
        claim["metadata"]["name"]: _bytes(claim["spec"]["resources"]["requests"]["storage"])
        for claim in statefulset["spec"]["volumeClaimTemplates"]
    }
    sidecar = container(pod_spec(manifests), "volume-quota")
    sidecar_mounts = mounts(sidecar)
    log_dirs = env_values(sidecar)["VOLUME_QUOTA_LOG_DIRS"].split(",")
    return [(log_dir, claims[sidecar_mounts[log_dir]["name"]]) for log_dir in log_dirs]


def _decision_at_one_percent_use(manifests: list[Manifest]) -> str:
    """Every broker publishes its declared volumes 1 % full, with the rendered limits."""
    env = env_values(container(pod_spec(manifests), "volume-quota"))
    overrides = _volume_limits(env.get("VOLUME_QUOTA_VOLUME_LIMITS", ""))
    volumes = []
    for log_dir, capacity in _declared_volumes(manifests):
        volume: dict[str, Any] = {
            "volumeName": log_dir,
            "path": log_dir,
            "capacity": capacity,
            "consumed": capacity // 100,
        }
        for which, limit in overrides.pop(log_dir, {}).items():
            volume[f"{which}Limit"] = limit
        volumes.append(volume)
    assert not overrides, f"limits for volumes the brokers do not have: {overrides}"
    replicas = find(manifests, "StatefulSet")["spec"]["replicas"]
    state = ClusterState(DecisionPolicy(stale_after_seconds=60))
    for broker_id in range(replicas):
        document = {
            "schemaVersion": 1,
            "brokerId": broker_id,
            "snapshotAt": NOW.isoformat(),
            "softLimit": _limit(env["VOLUME_QUOTA_SOFT_LIMIT"]),
            "hardLimit": _limit(env["VOLUME_QUOTA_HARD_LIMIT"]),
            "volumes": volumes,
        }
        assert state.apply_snapshot(VolumeSnapshot.model_validate(document))
    state.set_live_brokers(range(replicas))
    return str(state.decide(NOW).state.value)


def test_the_production_example_is_open_on_a_nearly_empty_cluster(
    production_manifests: list[Manifest],
) -> None:
    volumes = _declared_volumes(production_manifests)
    assert [size for _, size in volumes] == [500 * 1024**3, 500 * 1024**3, 5 * 1024**3]
    assert _decision_at_one_percent_use(production_manifests) == "OPEN"


def test_without_its_own_limits_the_metadata_volume_pauses_every_producer(
    tmp_path: Path,
) -> None:
    # The defect this example had: MinFreeBytes:50GiB applied to the 5Gi metadata volume.
    no_overrides = tmp_path / "no-overrides.yaml"
    no_overrides.write_text(yaml.safe_dump({"sidecar": {"volumeLimits": []}}))
    manifests = render([PRODUCTION_VALUES, no_overrides])
    assert "VOLUME_QUOTA_VOLUME_LIMITS" not in env_values(
        container(pod_spec(manifests), "volume-quota")
    )
    assert _decision_at_one_percent_use(manifests) == "PAUSE"


def test_the_production_metadata_volume_has_its_own_limits(
    production_manifests: list[Manifest],
) -> None:
    env = env_values(container(pod_spec(production_manifests), "volume-quota"))
    limits = _volume_limits(env["VOLUME_QUOTA_VOLUME_LIMITS"])
    assert set(limits) == {"/var/lib/kafka/metadata"}
    hard = limits["/var/lib/kafka/metadata"]["hard"]
    assert hard["type"] == "MinFreeBytes"
    assert hard["level"] < 5 * 1024**3  # less than the volume: reachable


def test_limits_name_a_volume_by_chart_name_or_by_path() -> None:
    settings = {
        "kafka.storage.data[0].size": "10Gi",
        "kafka.storage.data[1].size": "20Gi",
        "sidecar.volumeLimits[0].volume": "data-1",
        "sidecar.volumeLimits[0].soft": "MinFreePercentage:30",
        "sidecar.volumeLimits[1].volume": "/var/lib/kafka/metadata",
        "sidecar.volumeLimits[1].hard": "MinFreeBytes:100MiB",
        "sidecar.volumeLimits[1].soft": "MinFreeBytes:200MiB",
    }
    env = env_values(container(pod_spec(render(settings=settings)), "volume-quota"))
    assert env["VOLUME_QUOTA_VOLUME_LIMITS"] == (
        "/var/lib/kafka/data-1:soft=MinFreePercentage:30;"
        "/var/lib/kafka/metadata:soft=MinFreeBytes:200MiB,hard=MinFreeBytes:100MiB"
    )


def test_no_volume_limits_by_default(default_manifests: list[Manifest]) -> None:
    env = env_values(container(pod_spec(default_manifests), "volume-quota"))
    assert "VOLUME_QUOTA_VOLUME_LIMITS" not in env


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {
                "sidecar.volumeLimits[0].volume": "data-3",
                "sidecar.volumeLimits[0].soft": "MinFreePercentage:20",
            },
            'sidecar.volumeLimits[0].volume "data-3" names no broker volume '
            "(volumes: data-0, metadata;",
        ),
        (
            {
                "kafka.storage.metadata.enabled": "false",
                "sidecar.volumeLimits[0].volume": "metadata",
                "sidecar.volumeLimits[0].hard": "MinFreeBytes:1GiB",
            },
            'sidecar.volumeLimits[0].volume "metadata" names no broker volume (volumes: data-0;',
        ),
    ],
)
def test_a_limit_for_a_volume_the_broker_does_not_have_is_refused(
    settings: dict[str, str], expected: str
) -> None:
    with pytest.raises(HelmError) as refused:
        render_text(settings=settings)
    assert expected in str(refused.value)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"sidecar.volumeLimits[0].volume": "metadata"}, "at '/sidecar/volumeLimits/0'"),
        (
            {"sidecar.volumeLimits[0].volume": "metadata", "sidecar.volumeLimits[0].hard": "1GiB"},
            "at '/sidecar/volumeLimits/0/hard'",
        ),
        (
            {
                "sidecar.volumeLimits[0].volume": "a;b",
                "sidecar.volumeLimits[0].hard": "MinFreeBytes:1GiB",
            },
            "at '/sidecar/volumeLimits/0/volume'",
        ),
    ],
)
def test_the_schema_refuses_a_malformed_volume_limit(
    settings: dict[str, str], expected: str
) -> None:
    with pytest.raises(HelmError) as refused:
        render_text(settings=settings)
    assert expected in str(refused.value)
