"""The consumer side of volume-quota: every broker's snapshot in, one cluster decision out.

The decision rule is pure (``limits``, ``broker_assessment``, ``cluster_state``); reading the
topic, the Admin client and the clock live in the shell modules.
"""

from consumer.cluster_state import ClusterState
from consumer.policy import DecisionPolicy

__all__ = ["ClusterState", "DecisionPolicy"]
