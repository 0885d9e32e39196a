"""One reader of topic configs per cluster, and what it publishes for the others (pure).

The upload backlog (``consumer.upload_backlog``) and the history job's forecast need each topic's
retention configs. Every sidecar asking DescribeConfigs every usage interval is N calls a
minute for a fact that changes when an operator changes it; one call every few minutes for the
whole cluster is enough. The rule, for a process publishing usage for broker ``b``:

- its **rank** is how many live brokers have a lower id than ``b`` (the lowest live broker has
  rank 0);
- it reads when the newest configs it has seen (its own, or a ``topicConfigs`` section on the
  usage topic) are older than ``(rank + 1) x interval``, and it tries at most once an interval;
  having seen none, it reads ``rank`` intervals after it learned the live brokers.

So rank 0 reads every interval and publishes the configs in its usage document; the others
read nothing while its sections keep coming. If rank 0's process stops, or cannot read (no
DescribeConfigs ACL), rank 1 reads once the newest section is two intervals old, rank 2 once it
is three, and so on: never without configs for long, and never all at once. The section in a
process's document is its own read, and only while it is the newest known (when rank 0 is back,
rank 1's section leaves its document at the next publication).

The section names the cluster's largest topics (as the usage documents report them), largest
first; its publisher trims the smallest until the document fits ``MAX_USAGE_DOCUMENT_BYTES``
(``fit_document``). A reader turns a section back into DescribeConfigs' ``name -> value``
(``configs_from_section``) for ``consumer.retention_outlook``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from consumer.topic_status import TopicConfigs
from schemas.usage import (
    MAX_CONFIG_TOPICS,
    MAX_USAGE_DOCUMENT_BYTES,
    TopicConfigsSection,
    TopicRetentionConfig,
    TopicUsageDocument,
)

DEFAULT_TOPIC_CONFIGS_INTERVAL_SECONDS = 300.0

# Kafka's config names, and the section's field for each.
CONFIG_FIELDS: Mapping[str, str] = {
    "cleanup.policy": "cleanupPolicy",
    "retention.ms": "retentionMs",
    "retention.bytes": "retentionBytes",
    "segment.bytes": "segmentBytes",
    "segment.ms": "segmentMs",
    "remote.storage.enable": "remoteStorageEnable",
    "local.retention.ms": "localRetentionMs",
    "local.retention.bytes": "localRetentionBytes",
}
"""DescribeConfigs names -> wire names: what one section entry holds of a topic."""


def reader_rank(broker_id: int, live_brokers: Iterable[int]) -> int:
    """How many live brokers have a lower id than ``broker_id`` (0: it reads for the cluster)."""
    return sum(1 for other in set(live_brokers) if other < broker_id)


def read_due(
    rank: int,
    *,
    newest_read_at: datetime | None,
    last_attempt_at: datetime | None,
    now: datetime,
    interval_seconds: float,
    started_at: datetime,
) -> bool:
    """Should the process of this ``rank`` read the cluster's topic configs now?

    ``started_at``: when it learned the live brokers. With no section known, it counts as if
    one had been read an interval before that: rank 0 reads at once, rank k k intervals later
    (by then it has read the usage topic, where rank 0's section is)."""
    if last_attempt_at is not None and (now - last_attempt_at).total_seconds() < interval_seconds:
        return False
    if newest_read_at is None:
        age = (now - started_at).total_seconds() + interval_seconds
    else:
        age = (now - newest_read_at).total_seconds()
    return age >= (rank + 1) * interval_seconds


def newest(*sections: TopicConfigsSection | None) -> TopicConfigsSection | None:
    """The section read last (None when there is none)."""
    known = [section for section in sections if section is not None]
    return max(known, key=lambda section: section.read_at, default=None)


def largest_topics(sizes: Iterable[Mapping[str, int]], limit: int = MAX_CONFIG_TOPICS) -> list[str]:
    """The names of the largest topics across ``sizes`` (topic -> bytes, one mapping per broker
    document), largest first, ties by name; at most ``limit``."""
    totals: dict[str, int] = {}
    for mapping in sizes:
        for topic, size in mapping.items():
            totals[topic] = totals.get(topic, 0) + size
    return sorted(totals, key=lambda topic: (-totals[topic], topic))[:limit]


def topic_sizes(document: TopicUsageDocument) -> dict[str, int]:
    """Each topic the document names, with its bytes summed over the broker's volumes."""
    sizes: dict[str, int] = {}
    for volume in document.volumes:
        for topic in volume.topics:
            sizes[topic.topic] = sizes.get(topic.topic, 0) + topic.bytes
    return sizes


def _policy(value: str) -> str:
    """``cleanup.policy`` as the section writes it: its parts sorted (``compact,delete``)."""
    parts = sorted({part.strip().lower() for part in value.split(",") if part.strip()})
    return ",".join(parts)


def retention_entry(topic: str, configs: Mapping[str, str | None]) -> TopicRetentionConfig | None:
    """A section entry from one topic's DescribeConfigs answer; None when a value is missing or
    not what Kafka allows (the topic is then left out of the section)."""
    values: dict[str, object] = {"topic": topic}
    for name, wire in CONFIG_FIELDS.items():
        raw = configs.get(name)
        if raw is None or not raw.strip():
            return None
        text = raw.strip()
        if name == "cleanup.policy":
            values[wire] = _policy(text)
        elif name == "remote.storage.enable":
            if text.lower() not in ("true", "false"):
                return None
            values[wire] = text.lower() == "true"
        else:
            try:
                values[wire] = int(text)
            except ValueError:
                return None
    try:
        return TopicRetentionConfig.model_validate(values)
    except ValueError:
        return None


def section_from_configs(
    configs: TopicConfigs, read_at: datetime, topics: Sequence[str]
) -> TopicConfigsSection | None:
    """The section for ``topics`` (largest first) from one DescribeConfigs answer: every topic
    whose configs were read and are valid, in that order; None when there is none."""
    entries = []
    for topic in topics[:MAX_CONFIG_TOPICS]:
        answer = configs.get(topic)
        if answer is None or isinstance(answer, str):
            continue
        entry = retention_entry(topic, answer)
        if entry is not None:
            entries.append(entry)
    if not entries:
        return None
    return TopicConfigsSection(read_at=read_at, topics=entries)


def configs_from_section(section: TopicConfigsSection | None) -> dict[str, dict[str, str | None]]:
    """DescribeConfigs' ``name -> value`` per topic, as ``consumer.retention_outlook`` reads it."""
    if section is None:
        return {}
    configs: dict[str, dict[str, str | None]] = {}
    for entry in section.topics:
        wire = entry.model_dump(by_alias=True)
        configs[entry.topic] = {
            name: str(wire[field]).lower() if isinstance(wire[field], bool) else str(wire[field])
            for name, field in CONFIG_FIELDS.items()
        }
    return configs


def fit_document(
    document: TopicUsageDocument, section: TopicConfigsSection | None
) -> TopicUsageDocument:
    """``document`` carrying as much of ``section`` (largest topics first) as fits
    ``MAX_USAGE_DOCUMENT_BYTES``; without it when not even one entry fits."""
    if section is None:
        return document.model_copy(update={"topic_configs": None})

    def carrying(count: int) -> TopicUsageDocument:
        trimmed = section.model_copy(update={"topics": section.topics[:count]})
        return document.model_copy(update={"topic_configs": trimmed})

    def fits(candidate: TopicUsageDocument) -> bool:
        return len(candidate.to_json_bytes()) <= MAX_USAGE_DOCUMENT_BYTES

    whole = carrying(len(section.topics))
    if fits(whole):
        return whole
    low, high = 0, len(section.topics)  # carrying(low) fits, carrying(high) does not
    while high - low > 1:
        middle = (low + high) // 2
        if fits(carrying(middle)):
            low = middle
        else:
            high = middle
    return carrying(low) if low > 0 else document.model_copy(update={"topic_configs": None})
