"""Every recipe that creates volume-quota's topics caps their records at the value local_cluster
uses, which the broker is shown to enforce in test_topic_record_cap.py: the Strimzi KafkaTopics
and the systemd README's topic step (the Helm chart's: tests/chart/test_topic_job.py)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from local_cluster import TOPIC_CONFIGS, TOPIC_MAX_MESSAGE_BYTES

REPOSITORY = Path(__file__).resolve().parents[2]
STRIMZI_TOPICS = REPOSITORY / "deploy" / "strimzi" / "topics.yaml"
SYSTEMD_README = REPOSITORY / "deploy" / "systemd" / "README.md"


def test_every_strimzi_topic_has_the_cap() -> None:
    topics = {
        document["spec"]["topicName"]: document["spec"]["config"]
        for document in yaml.safe_load_all(STRIMZI_TOPICS.read_text())
        if document and document["kind"] == "KafkaTopic"
    }
    assert set(topics) == set(TOPIC_CONFIGS)
    assert {
        name: config.get("max.message.bytes") for name, config in topics.items()
    } == dict.fromkeys(TOPIC_CONFIGS, TOPIC_MAX_MESSAGE_BYTES)


def test_every_strimzi_topic_matches_local_clusters_settings() -> None:
    for document in yaml.safe_load_all(STRIMZI_TOPICS.read_text()):
        if document and document["kind"] == "KafkaTopic":
            config = {key: str(value) for key, value in document["spec"]["config"].items()}
            wanted = TOPIC_CONFIGS[document["spec"]["topicName"]]
            assert wanted.items() <= config.items(), document["spec"]["topicName"]


def test_the_systemd_topic_step_creates_the_topic_with_the_cap() -> None:
    text = re.sub(r"\\\n\s*", " ", SYSTEMD_README.read_text())
    [create] = [
        line for line in text.splitlines() if "kafka-topics.sh" in line and "--create" in line
    ]
    assert "--topic __volume_quota_snapshots" in create
    assert f"--config max.message.bytes={TOPIC_MAX_MESSAGE_BYTES}" in create
