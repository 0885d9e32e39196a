"""Which images a broker pod needs before its broker starts.

By default the init containers `install-broker-plugin` and `install-metrics-agent` copy the
callback jar and the JMX exporter agent from the volume-quota image: the kubelet starts no
container of the pod before every init container has run, so a failed pull of that image
keeps the broker down too. With `kafka.image.includesVolumeQuota` the broker image holds the
files (deploy/helm/broker-image/Dockerfile copies them from the volume-quota image, to the same
paths): no init container runs, and only the sidecar container uses the volume-quota image.
"""

from __future__ import annotations

import re
import shlex

from tests.chart.chart_tools import (
    REPO,
    Manifest,
    container,
    env_values,
    find,
    pod_spec,
    render,
)

BROKER_IMAGE_DOCKERFILE = REPO / "deploy" / "helm" / "broker-image" / "Dockerfile"
MONITORING = {"serviceMonitor.enabled": "true", "prometheusRule.enabled": "true"}
BUILT_IN = MONITORING | {
    "kafka.image.includesVolumeQuota": "true",
    "kafka.image.repository": "registry.example.com/platform/kafka-volume-quota",
    "kafka.image.tag": "4.3.1-vq-0.1.0",
}


def _images_before_the_broker_starts(spec: Manifest) -> set[str]:
    kafka = container(spec, "kafka")
    return {kafka["image"]} | {entry["image"] for entry in spec.get("initContainers", [])}


def _kafka_opts(manifests: list[Manifest]) -> str:
    script = find(manifests, "ConfigMap", "vq-volume-quota-kafka")["data"]["kafka-start.sh"]
    match = re.search(r'export KAFKA_OPTS="\$\{KAFKA_OPTS:\+\$KAFKA_OPTS \}([^"]+)"', script)
    assert match is not None, "kafka-start.sh loads no agent"
    return match[1]


def test_by_default_the_volume_quota_image_gates_the_broker() -> None:
    spec = pod_spec(render(settings=MONITORING))
    assert [entry["name"] for entry in spec["initContainers"]] == [
        "install-broker-plugin",
        "install-metrics-agent",
    ]
    assert "volume-quota:0.1.0" in _images_before_the_broker_starts(spec)


def test_a_broker_image_with_the_files_starts_without_the_volume_quota_image() -> None:
    manifests = render(settings=BUILT_IN)
    spec = pod_spec(manifests)
    assert "initContainers" not in spec
    assert _images_before_the_broker_starts(spec) == {
        "registry.example.com/platform/kafka-volume-quota:4.3.1-vq-0.1.0"
    }
    assert container(spec, "volume-quota")["image"] == "volume-quota:0.1.0"
    assert "broker-plugin" not in {volume["name"] for volume in spec["volumes"]}
    kafka = container(spec, "kafka")
    assert "broker-plugin" not in {mount["name"] for mount in kafka["volumeMounts"]}
    # The files where the broker image has them (the volume-quota image's paths).
    assert env_values(kafka)["CLASSPATH"] == "/opt/volume-quota/volume-quota-broker-plugin.jar"
    assert _kafka_opts(manifests) == (
        "-javaagent:/opt/volume-quota/jmx_prometheus_javaagent.jar=9404:"
        "/opt/volume-quota/jmx-exporter/volume-quota-callback.yaml"
    )


def test_with_the_files_in_the_broker_image_the_rack_init_container_still_runs() -> None:
    spec = pod_spec(render(settings=BUILT_IN | {"kafka.rack.enabled": "true"}))
    assert [entry["name"] for entry in spec["initContainers"]] == ["discover-rack"]


def _copied_paths(dockerfile: str) -> set[str]:
    """Paths that `COPY --from=volume-quota` puts where they were in the volume-quota image."""
    joined = re.sub(r"\\\n", " ", dockerfile)
    paths = set()
    for line in joined.splitlines():
        if not line.startswith("COPY --from=volume-quota "):
            continue
        *sources, destination = shlex.split(line)[2:]
        for source in sources:
            name = source.rstrip("/").rsplit("/", 1)[1]
            landed = source if source.endswith("/") else destination + name
            assert landed == source, f"{source} lands at {landed}: {line}"
            paths.add(source.rstrip("/"))
    return paths


def test_the_broker_image_recipe_puts_the_files_where_the_chart_looks() -> None:
    manifests = render(settings=BUILT_IN)
    kafka = container(pod_spec(manifests), "kafka")
    agent, config = _kafka_opts(manifests).removeprefix("-javaagent:").split("=", 1)
    config = config.split(":", 1)[1]
    wanted = {env_values(kafka)["CLASSPATH"], agent, config.rsplit("/", 1)[0]}
    copied = _copied_paths(BROKER_IMAGE_DOCKERFILE.read_text())
    assert wanted <= copied, f"{sorted(wanted)} not all copied ({sorted(copied)})"
