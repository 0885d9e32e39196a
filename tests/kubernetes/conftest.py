"""One real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) for the
whole session; see control_plane.py for what runs and what stands in for a kubelet."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kubernetes.control_plane import ControlPlane, install_control_plane


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    plane = ControlPlane(install_control_plane())
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()
