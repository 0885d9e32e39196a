"""Topic configs from one DescribeConfigs call: for ``volume-quota status``'s retention outlook
and for the cluster's topic configs that one sidecar (or the agent) reads for every broker
(``publisher.topic_config_share``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

from consumer.topic_status import NOT_AUTHORIZED, TopicConfigs
from publisher.topic_config_share import TopicConfigReader


class ConfigAdmin(Protocol):
    def describe_configs(
        self, resources: list[ConfigResource], **kwargs: Any
    ) -> Mapping[ConfigResource, Future[Any]]: ...


AUTHORIZATION_ERRORS = frozenset(
    {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED}
)


def describe_topic_configs(
    admin: ConfigAdmin, topics: Sequence[str], timeout_seconds: float
) -> TopicConfigs:
    """Each topic's configs (name -> value) from one DescribeConfigs call, or why not."""
    if not topics:
        return {}
    resources = [ConfigResource(ConfigResource.Type.TOPIC, topic) for topic in topics]
    answers: dict[str, Mapping[str, str | None] | str] = {}
    try:
        futures = admin.describe_configs(resources, request_timeout=timeout_seconds)
    except Exception as error:
        return dict.fromkeys(topics, f"configs not read: {error}")
    for resource, future in futures.items():
        try:
            entries = future.result(timeout=timeout_seconds)
        except KafkaException as error:
            kafka_error = error.args[0] if error.args else None
            code = kafka_error.code() if isinstance(kafka_error, KafkaError) else None
            answers[resource.name] = (
                NOT_AUTHORIZED if code in AUTHORIZATION_ERRORS else f"configs not read: {error}"
            )
            continue
        except Exception as error:
            answers[resource.name] = f"configs not read: {error}"
            continue
        answers[resource.name] = {name: entry.value for name, entry in entries.items()}
    return answers


def topic_config_reader(
    admin_factory: Callable[[], ConfigAdmin], timeout_seconds: float
) -> TopicConfigReader:
    """Reads topics' configs with one admin client, made at the first call (the usage thread's
    only): for the upload backlogs of the tiered topics (``publisher.upload_backlogs``)."""
    admins: list[ConfigAdmin] = []

    def read(topics: Sequence[str]) -> TopicConfigs:
        if not admins:
            admins.append(admin_factory())
        return describe_topic_configs(admins[0], topics, timeout_seconds)

    return read
