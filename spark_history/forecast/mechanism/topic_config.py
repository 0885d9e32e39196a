"""A topic's retention configs as the usage document carries them (``topicConfigs``), read
into ``consumer.retention_outlook.RetentionConfig`` by that module's own reader (pure).

The document states the effective values DescribeConfigs returned, by their JSON names
(``cleanupPolicy``, ``retentionMs``, ...); they are turned back into Kafka's config names and
read by ``retention_config``, so a missing value takes the same Kafka default ``volume-quota
status`` assumes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from consumer.retention_outlook import RetentionConfig, retention_config

KAFKA_NAMES: Mapping[str, str] = {
    "cleanupPolicy": "cleanup.policy",
    "retentionMs": "retention.ms",
    "retentionBytes": "retention.bytes",
    "segmentBytes": "segment.bytes",
    "segmentMs": "segment.ms",
    "remoteStorageEnable": "remote.storage.enable",
    "localRetentionMs": "local.retention.ms",
    "localRetentionBytes": "local.retention.bytes",
}
"""The eight values of one topic in ``topicConfigs.topics[]``, by JSON name."""


def _text(value: object) -> str | None:
    """A config value as DescribeConfigs would give it (a string), None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return str(int(value))
    return str(value)


def config_from_values(values: Mapping[str, object]) -> RetentionConfig:
    """The ``RetentionConfig`` of one topic's values (JSON names; absent or None: Kafka's
    default). Raises ``ValueError`` for a value that is no integer where one is due."""
    return retention_config({kafka: _text(values.get(name)) for name, kafka in KAFKA_NAMES.items()})
