"""The upload backlogs of the tiered topics of a usage document (pure): what the sidecar exports
as ``volume_quota_topic_upload_backlog_bytes`` (``consumer.upload_backlog`` says what the
estimate assumes)."""

from __future__ import annotations

from collections.abc import Mapping

from consumer.retention_outlook import retention_config
from consumer.topic_status import TopicConfigs, topic_upload_backlog
from schemas.usage import TopicUsageDocument


def is_tiered(configs: Mapping[str, str | None]) -> bool:
    return (configs.get("remote.storage.enable") or "false").strip().lower() == "true"


def document_upload_backlogs(
    document: TopicUsageDocument, configs: TopicConfigs
) -> dict[tuple[str, str], int]:
    """Per (volume name, topic): the backlog of each tiered topic of the document whose configs
    were read and whose backlog is known; other topics are left out."""
    backlogs: dict[tuple[str, str], int] = {}
    for volume in document.volumes:
        for topic in volume.topics:
            entry = configs.get(topic.topic)
            if isinstance(entry, str) or entry is None or not is_tiered(entry):
                continue
            try:
                retention_config(entry)
            except ValueError:
                continue
            backlog = topic_upload_backlog(topic, entry)
            if backlog is not None:
                backlogs[(volume.volume_name, topic.topic)] = backlog
    return backlogs


def document_topics(document: TopicUsageDocument) -> list[str]:
    """The topics the document names, sorted: one DescribeConfigs call."""
    return sorted({topic.topic for volume in document.volumes for topic in volume.topics})
