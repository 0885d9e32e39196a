"""The nodes the harness registers stay Ready and schedulable: its stand-in for the kubelet renews
their Leases, so the real node lifecycle controller never marks them unreachable. (This module
runs after the helm tests, so its wait is usually over before it starts.)"""

from __future__ import annotations

import time

import pytest

from tests.kubernetes.control_plane import ControlPlane

pytestmark = pytest.mark.kubernetes

NODE_MONITOR_GRACE_SECONDS = 50
"""kube-controller-manager's --node-monitor-grace-period default: a node whose Lease is not
renewed for this long is marked NotReady and tainted unschedulable."""


def test_nodes_stay_ready_and_untainted_past_the_grace_period(
    control_plane: ControlPlane,
) -> None:
    # Without the stand-in's Lease renewals the node lifecycle controller would mark every node
    # NotReady after the grace period and taint it node.kubernetes.io/unreachable.
    elapsed = time.monotonic() - control_plane.started_at
    time.sleep(max(0.0, NODE_MONITOR_GRACE_SECONDS + 15 - elapsed))
    for name in ("node-0", "node-1", "node-2"):
        node = control_plane.api.get(f"/api/v1/nodes/{name}")
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True", ready
        assert node["spec"].get("taints", []) == []
        assert node["metadata"]["labels"]["topology.kubernetes.io/zone"].startswith("zone-")
    assert control_plane.stand_in_errors == []
