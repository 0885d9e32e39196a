"""deploy/strimzi/Dockerfile takes the callback jar from the volume-quota image, where
deploy/container/Dockerfile puts it, and puts it where each route's broker looks for it."""

from __future__ import annotations

import re

from tests.strimzi.recipe import IMAGE_DOCKERFILE, KAFKA_IMAGE_VOLUME, RECIPE, kafka_spec

STRIMZI_DOCKERFILE = RECIPE / "Dockerfile"


def copies_from_volume_quota() -> dict[str, tuple[str, str]]:
    """Stage name -> (source, destination) of its COPY --from=volume-quota."""
    copies: dict[str, tuple[str, str]] = {}
    stage = ""
    text = STRIMZI_DOCKERFILE.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if match := re.match(r"FROM \S+ AS (\S+)", line):
            stage = match[1]
        if line.startswith("COPY --from=volume-quota"):
            source, destination = line.split()[-2:]
            copies[stage] = (source, destination)
    return copies


def test_the_jar_comes_from_where_the_volume_quota_image_puts_it() -> None:
    image = IMAGE_DOCKERFILE.read_text().replace("\\\n", " ")
    destinations = re.findall(r"^COPY --from=plugin \S+ \S+ +(\S+)$", image, re.MULTILINE)
    sources = {source for source, _ in copies_from_volume_quota().values()}
    assert sources == {"/opt/volume-quota/volume-quota-broker-plugin.jar"}
    assert sources <= set(destinations)


def test_each_target_puts_the_jar_on_its_routes_classpath() -> None:
    copies = copies_from_volume_quota()
    # Route 1: next to Kafka's own jars (kafka-run-class.sh adds libs/*).
    assert copies["broker"][1] == "/opt/kafka/libs/volume-quota-broker-plugin.jar"
    # Route 2: at the image's root, which the image volume mounts where CLASSPATH points.
    plugin_jar = copies["plugin"][1]
    assert plugin_jar == "/volume-quota-broker-plugin.jar"
    container = kafka_spec(KAFKA_IMAGE_VOLUME)["template"]["kafkaContainer"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "volume-quota-plugin"]
    (classpath,) = [v["value"] for v in container["env"] if v["name"] == "CLASSPATH"]
    assert classpath == mount["mountPath"] + "/*"
    assert "FROM scratch AS plugin" in STRIMZI_DOCKERFILE.read_text()
    # The last stage is the default target: the broker image.
    stages = re.findall(r"^FROM \S+ AS (\S+)$", STRIMZI_DOCKERFILE.read_text(), re.MULTILINE)
    assert stages[-1] == "broker"
