"""Building the usage document from volume summaries (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from publisher.topic_usage import OtherTopics, TopicTotals, VolumeTopicUsage
from publisher.usage_document import build_usage_document
from schemas.decode import decode_usage
from schemas.snapshot import snapshot_key
from schemas.usage import MAX_USAGE_VOLUME_NAME_LENGTH, MAX_USAGE_VOLUMES

AT = datetime(2026, 11, 26, 12, tzinfo=UTC)
NOTHING = OtherTopics(0, 0, 0, 0, 0)


def _summary(name: str, *topics: TopicTotals, unattributed: int = 0) -> VolumeTopicUsage:
    total = sum(topic.bytes for topic in topics) + unattributed
    return VolumeTopicUsage(name, total, topics, NOTHING, unattributed)


def test_the_document_decodes_back_with_the_same_figures() -> None:
    orders = TopicTotals("orders", 5000, 3, 1000, 0, 1_700_000_000.5)
    document = build_usage_document(7, AT, 0.25, [_summary("/dev/a", orders, unattributed=9)])
    decoded = decode_usage(document.to_json_bytes(), snapshot_key(7))
    assert decoded == document
    (volume,) = document.volumes
    (topic,) = volume.topics
    assert topic.oldest_segment_at == datetime.fromtimestamp(1_700_000_000.5, UTC)
    assert volume.total_bytes == 5009


def test_an_mtime_outside_the_wire_range_is_left_out() -> None:
    odd = TopicTotals("odd", 1, 1, 0, 0, -5.0)
    document = build_usage_document(1, AT, 0.1, [_summary("/dev/a", odd)])
    assert document.volumes[0].topics[0].oldest_segment_at is None


def test_volumes_over_the_document_bounds_are_left_out() -> None:
    summaries = [_summary(f"/dev/v{index:03d}") for index in range(MAX_USAGE_VOLUMES + 5)]
    summaries.append(_summary("/" + "x" * MAX_USAGE_VOLUME_NAME_LENGTH))
    document = build_usage_document(1, AT, 0.1, summaries)
    assert len(document.volumes) == MAX_USAGE_VOLUMES
    assert [v.volume_name for v in document.volumes][:2] == ["/dev/v000", "/dev/v001"]
