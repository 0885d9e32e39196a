"""A failing sidecar never holds a node drain back: the pod's readiness is the broker's alone, and
the PodDisruptionBudget lets not-ready brokers go."""

from __future__ import annotations

import pytest

from tests.chart.chart_tools import (
    PRODUCTION_VALUES,
    Manifest,
    container,
    find,
    pod_spec,
    render,
)


@pytest.mark.parametrize("values", ["default", "production"])
def test_no_container_but_the_broker_decides_readiness(values: str) -> None:
    manifests = render([PRODUCTION_VALUES] if values == "production" else [])
    spec = pod_spec(manifests)
    probed = [entry["name"] for entry in spec["containers"] if "readinessProbe" in entry]
    assert probed == ["kafka"]
    # The broker's readiness is its client port: nothing the sidecar does changes it.
    assert container(spec, "kafka")["readinessProbe"]["tcpSocket"] == {"port": "client"}
    sidecar = container(spec, "volume-quota")
    assert set(sidecar) & {"readinessProbe", "startupProbe"} == set()


def test_the_disruption_budget_lets_a_not_ready_broker_be_evicted(
    default_manifests: list[Manifest],
) -> None:
    budget = find(default_manifests, "PodDisruptionBudget")["spec"]
    assert budget["maxUnavailable"] == 1
    assert budget["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    changed = render(settings={"podDisruptionBudget.unhealthyPodEvictionPolicy": "IfHealthyBudget"})
    assert find(changed, "PodDisruptionBudget")["spec"]["unhealthyPodEvictionPolicy"] == (
        "IfHealthyBudget"
    )
