from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from publisher.snapshot_building import build_snapshot
from publisher.volumes import VolumeMeasurement
from schemas import decode_snapshot
from schemas.snapshot import VolumeSnapshot, snapshot_key
from tests.publisher.publisher_samples import AT, GIB, HARD, SOFT, measurement, volume
from volume_quota.limit_parsing import parse_limit


def test_builds_a_valid_snapshot_sorted_by_volume() -> None:
    snapshot = build_snapshot(
        7,
        [measurement(30 * GIB, name="/dev/sdc"), measurement(60 * GIB, name="/dev/sdb")],
        SOFT,
        HARD,
        AT,
    )
    assert [usage.volume_name for usage in snapshot.volumes] == ["/dev/sdb", "/dev/sdc"]
    assert snapshot.volumes[0].capacity == 100 * GIB
    assert snapshot.volumes[0].consumed == 40 * GIB
    assert snapshot.volumes[0].path == "/mnt/dev/sdb"
    assert snapshot.snapshot_at == AT
    decoded = decode_snapshot(snapshot.to_json_bytes(), snapshot_key(7))
    assert isinstance(decoded, VolumeSnapshot)
    assert decoded == snapshot


def test_volume_overrides_travel_with_the_volume() -> None:
    soft = parse_limit("MinFreeBytes:10GiB")
    overridden = VolumeMeasurement(volume(soft_limit=soft), 100 * GIB, 50 * GIB)
    snapshot = build_snapshot(1, [overridden], SOFT, HARD, AT)
    assert snapshot.volumes[0].soft_limit == soft
    assert snapshot.volumes[0].hard_limit is None
    assert b'"softLimit":{"type":"MinFreeBytes"' in snapshot.to_json_bytes()


@given(
    capacity=st.integers(min_value=0, max_value=2**63 - 1),
    free=st.integers(min_value=0, max_value=2**63 - 1),
)
def test_consumed_is_capacity_minus_free_clamped(capacity: int, free: int) -> None:
    snapshot = build_snapshot(1, [VolumeMeasurement(volume(), capacity, free)], SOFT, HARD, AT)
    usage = snapshot.volumes[0]
    assert 0 <= usage.consumed <= usage.capacity == capacity
    if free <= capacity:
        assert usage.consumed == capacity - free
    else:
        assert usage.consumed == 0
