"""``status``'s upload backlog: a tiered topic whose segments wait for the remote store shows
its backlog in an UPLOAD BACKLOG column, its volume the total under the table, and both in
``--json``; a volume without backlog keeps the usual table."""

from __future__ import annotations

from typing import Any

from consumer.status_report import cluster_status, render_status_table, status_as_json
from consumer.topic_status import NOT_AUTHORIZED, TopicConfigs, UsageCollection, volume_topics
from tests.consumer.test_topic_status import GIB, MIB, cluster, usage_topic, usage_value
from tests.snapshot_factory import NOON

# 3 GiB on 2 partitions, growing 1 MiB/s; local.retention.ms 60 s keeps about 60 MiB + a
# 100 MiB segment each: 3 GiB - 260 MiB wait for the remote store.
STALLED = usage_topic("events", 3 * GIB, growth24h={"bytes": 600 * MIB, "seconds": 600.0})
HEALTHY = usage_topic("audit", 200 * MIB, growth24h={"bytes": 0, "seconds": 600.0})
PLAIN = usage_topic("clicks", GIB)
TIERED = {"remote.storage.enable": "true", "segment.bytes": str(100 * MIB)}
CONFIGS: TopicConfigs = {
    "events": {**TIERED, "local.retention.ms": "60000", "retention.ms": "604800000"},
    "audit": {**TIERED, "local.retention.ms": "60000"},
    "clicks": {"retention.ms": "-1"},
}
EVENTS_BACKLOG = 3 * GIB - (60 * MIB + 2 * 100 * MIB)


def _status(configs: TopicConfigs, *topics: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    state, decision = cluster()
    status = cluster_status(state, decision, NOON)
    usage = UsageCollection()
    usage.apply(b"1", usage_value(1, "/dev/b", *topics), [], NOON)
    shown = volume_topics(status.volumes, usage.documents, configs, NOON, every_volume=False, top=5)
    status = status.model_copy(update={"topics": shown})
    return render_status_table(status), status_as_json(status)


def _volume(document: dict[str, Any]) -> dict[str, Any]:
    (volume,) = document["topics"]
    assert isinstance(volume, dict)
    return volume


def test_a_stalled_tiered_topic_shows_its_backlog_and_the_volume_its_total() -> None:
    text, document = _status(CONFIGS, STALLED, PLAIN, HEALTHY)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("TOPIC"))
    assert "UPLOAD BACKLOG" in header
    assert header.index("UPLOAD BACKLOG") < header.index("RETENTION")
    events = next(line for line in lines if line.startswith("events"))
    assert "2.7 GiB" in events
    audit = next(line for line in lines if line.startswith("audit"))
    assert "  -  " in audit
    assert "upload backlog: 2.7 GiB that local retention cannot free" in text
    volume = _volume(document)
    by_topic = {topic["topic"]: topic for topic in volume["topics"]}
    assert by_topic["events"]["uploadBacklogBytes"] == EVENTS_BACKLOG
    assert by_topic["audit"]["uploadBacklogBytes"] == 0
    assert by_topic["clicks"]["uploadBacklogBytes"] == 0
    assert volume["uploadBacklogBytes"] == EVENTS_BACKLOG


def test_without_backlog_the_table_is_unchanged() -> None:
    text, document = _status(CONFIGS, PLAIN, HEALTHY)
    assert "UPLOAD BACKLOG" not in text
    assert "upload backlog" not in text
    volume = _volume(document)
    assert volume["uploadBacklogBytes"] == 0


def test_a_backlog_not_known_is_absent_from_json_and_a_question_mark_in_the_table() -> None:
    unmeasured = usage_topic("fresh", 2 * GIB)  # no growth yet: time-bounded, not known
    configs: TopicConfigs = {**CONFIGS, "fresh": {**TIERED, "local.retention.ms": "60000"}}
    text, document = _status(configs, STALLED, unmeasured)
    fresh = next(line for line in text.splitlines() if line.startswith("fresh"))
    assert " ? " in fresh
    volume = _volume(document)
    by_topic = {topic["topic"]: topic for topic in volume["topics"]}
    assert "uploadBacklogBytes" not in by_topic["fresh"]
    assert volume["uploadBacklogBytes"] == EVENTS_BACKLOG
    _, refused = _status({"events": NOT_AUTHORIZED}, STALLED)
    volume = _volume(refused)
    assert "uploadBacklogBytes" not in volume["topics"][0]
    assert volume["uploadBacklogBytes"] == 0
