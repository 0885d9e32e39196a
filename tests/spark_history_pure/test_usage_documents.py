"""Usage messages are judged by the decider's strict decoder and become rows of three kinds."""

from __future__ import annotations

from datetime import UTC, datetime

from spark_history.usage_documents import (
    CONFIG,
    OTHER,
    TOMBSTONE,
    TOPIC,
    USAGE_ROW_COLUMNS,
    usage_rows,
    usage_verdict,
)
from tests.spark_history_pure.usage_factory import (
    GB,
    encoded,
    topic_configs_entry,
    usage_document,
)

AT = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def _document(**options: object) -> dict[str, object]:
    return usage_document(3, AT, [("logs", 5 * GB, 4), ("audit", GB, 1)], **options)  # type: ignore[arg-type]


def test_a_record_keyed_by_its_broker_is_accepted_and_any_other_key_refused() -> None:
    value = encoded(_document())
    assert usage_verdict(b"3", value, check_key=True).rejection is None
    assert usage_verdict(b"4", value, check_key=True).rejection == "key_mismatch"
    assert usage_verdict(b"03", value, check_key=True).rejection == "invalid_key"
    assert usage_verdict(None, value, check_key=True).rejection == "invalid_key"
    assert usage_verdict(b"3", None, check_key=True).rejection == TOMBSTONE


def test_a_jsonl_value_is_judged_alone() -> None:
    assert usage_verdict(None, encoded(_document()), check_key=False).rejection is None
    assert usage_verdict(None, b'{"schemaVersion": 1', check_key=False).rejection == (
        "malformed_json"
    )
    broken = _document()
    broken["brokerId"] = "three"
    assert usage_verdict(None, encoded(broken), check_key=False).rejection == "invalid_field"
    newer = _document()
    newer["schemaVersion"] = 2
    assert usage_verdict(None, encoded(newer), check_key=False).rejection == ("unsupported_version")


def test_parts_that_do_not_add_up_to_the_total_are_refused() -> None:
    document = _document()
    document["volumes"][0]["totalBytes"] += 1  # type: ignore[index]
    assert usage_verdict(b"3", encoded(document), check_key=True).rejection == "invalid_field"


def test_each_topic_is_a_row_and_the_other_topics_one_more() -> None:
    verdict = usage_verdict(b"3", encoded(_document()), check_key=True)
    assert verdict.document is not None
    rows = usage_rows(verdict.document)
    assert [(row["kind"], row["topic"]) for row in rows] == [
        (TOPIC, "logs"),
        (TOPIC, "audit"),
        (OTHER, None),
    ]
    assert all(set(row) == set(USAGE_ROW_COLUMNS[:-1]) for row in rows)
    logs, _, other = rows
    assert logs["bytes"] == 5 * GB
    assert logs["partitions"] == 4
    assert logs["surveyedAt"] == AT
    assert logs["totalBytes"] == 7 * GB + 1_000_000
    assert other["otherTopics"] == 3
    assert other["bytes"] == GB
    assert other["unattributedBytes"] == 1_000_000


def test_topic_configs_become_config_rows_with_the_eight_values() -> None:
    configs = [topic_configs_entry("logs", retentionMs=3_600_000, remoteStorageEnable=True)]
    verdict = usage_verdict(b"3", encoded(_document(configs=configs)), check_key=True)
    assert verdict.document is not None
    rows = [row for row in usage_rows(verdict.document) if row["kind"] == CONFIG]
    assert len(rows) == 1
    (row,) = rows
    assert row["topic"] == "logs"
    assert row["volumeName"] is None
    assert row["configReadAt"] == AT
    assert row["retentionMs"] == 3_600_000
    assert row["retentionBytes"] == -1
    assert row["remoteStorageEnable"] is True
    assert row["localRetentionMs"] == -2


def test_a_document_with_a_topic_configs_section_out_of_contract_is_refused() -> None:
    document = _document(configs=[topic_configs_entry("logs")])
    document["topicConfigs"]["topics"][0]["retentionMs"] = "7d"  # type: ignore[index]
    assert usage_verdict(b"3", encoded(document), check_key=True).rejection == "invalid_field"
