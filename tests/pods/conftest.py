"""The control plane of tests/kubernetes, one per session."""

from tests.kubernetes.conftest import control_plane

__all__ = ["control_plane"]
