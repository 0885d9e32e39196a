from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from schemas.snapshot import (
    MinFreeBytesLimit,
    MinFreePercentageLimit,
    VolumeSnapshot,
    snapshot_key,
)
from tests.snapshot_factory import make_snapshot, snapshot_document, volume


def test_issue_example_round_trips_through_json() -> None:
    document = {
        "schemaVersion": 1,
        "brokerId": 3,
        "snapshotAt": "2026-11-22T12:00:00Z",
        "softLimit": {"type": "MinFreePercentage", "level": 15},
        "hardLimit": {"type": "MinFreeBytes", "level": 5368709120},
        "volumes": [
            {
                "volumeName": "/dev/nvme1n1",
                "path": "/var/lib/kafka/data-0",
                "capacity": 1000000000,
                "consumed": 500000000,
            }
        ],
    }
    snapshot = VolumeSnapshot.model_validate_json(json.dumps(document))
    assert snapshot.broker_id == 3
    assert isinstance(snapshot.soft_limit, MinFreePercentageLimit)
    assert isinstance(snapshot.hard_limit, MinFreeBytesLimit)
    assert snapshot.hard_limit.level == 5368709120
    assert snapshot.volumes[0].free == 500000000
    written = json.loads(snapshot.to_json_bytes())
    assert written["snapshotAt"] == "2026-11-22T12:00:00.000Z"
    assert VolumeSnapshot.model_validate_json(snapshot.to_json_bytes()) == snapshot


def test_per_volume_override_is_kept() -> None:
    snapshot = make_snapshot(
        volumes=[volume(softLimit={"type": "ConsumedSpace", "level": 900})],
    )
    written = json.loads(snapshot.to_json_bytes())
    assert written["volumes"][0]["softLimit"] == {"type": "ConsumedSpace", "level": 900}
    assert "hardLimit" not in written["volumes"][0]


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    document = snapshot_document()
    document["newTopLevelField"] = {"anything": [1, 2]}
    document["volumes"][0]["iops"] = 12
    snapshot = VolumeSnapshot.model_validate_json(json.dumps(document))
    assert "newTopLevelField" not in snapshot.to_json_bytes().decode()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(schemaVersion=2), "unsupported schemaVersion 2"),
        (lambda d: d.update(snapshotAt="2026-11-22T12:00:00"), "with an offset"),
        (lambda d: d.update(snapshotAt=1763812800), "epoch numbers"),
        (lambda d: d.update(snapshotAt="1763812800"), "RFC 3339"),
        (lambda d: d.update(snapshotAt="2026-11-22 12:00:00Z"), "RFC 3339"),
        (lambda d: d.update(snapshotAt="2026-02-30T12:00:00Z"), "snapshotAt"),
        (lambda d: d.update(schemaVersion="1"), "valid integer"),
        (lambda d: d.update(schemaVersion=1.0), "valid integer"),
        (lambda d: d.update(schemaVersion=True), "valid integer"),
        (lambda d: d["volumes"][0].update(consumed=1000.0), "valid integer"),
        (lambda d: d.update(hardLimit={"type": "MinFreeBytes", "level": 1000.0}), "valid integer"),
        (lambda d: d.update(softLimit={"type": "MinFreePercentage", "level": "15"}), "number"),
        (lambda d: d.update(softLimit={"type": "MinFreePercentage", "level": True}), "number"),
        (lambda d: d["volumes"][0].update(volumeName=5), "valid string"),
        (lambda d: d["volumes"][0].update(path=5), "valid string"),
        (lambda d: d["volumes"][0].update(consumed=1001), "exceeds capacity"),
        (lambda d: d["volumes"][0].update(capacity=-1), "greater than or equal to 0"),
        (lambda d: d.update(softLimit={"type": "MinFreePercentage", "level": 101}), "100"),
        (lambda d: d.update(hardLimit={"type": "Bogus", "level": 1}), "Bogus"),
        (lambda d: d.update(volumes=[volume(), volume()]), "unique"),
        (lambda d: d.update(brokerId="3"), "valid integer"),
        (lambda d: d["volumes"][0].update(capacity=1.5), "valid integer"),
    ],
)
def test_invalid_documents_are_refused_with_a_reason(mutate: object, message: str) -> None:
    document = snapshot_document()
    mutate(document)  # type: ignore[operator]
    with pytest.raises(ValidationError, match=message):
        VolumeSnapshot.model_validate_json(json.dumps(document))


def test_key_is_the_decimal_broker_id() -> None:
    assert snapshot_key(42) == b"42"
