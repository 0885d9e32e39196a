"""The decision library of volume-quota: every broker's snapshot in, one cluster decision out.

The public API is this module's ``__all__`` (see docs/library.md, whose examples run as tests):

- ``ClusterState(policy)``: feed it snapshots (``apply_snapshot``), tombstones (``retire``) and
  the live brokers (``set_live_brokers``); ``decide(now)`` returns a ``QuotaDecision``.
- ``DecisionPolicy``: freshness, clock skew, the on-missing action.
- ``judge_volume``: one volume's verdict under its limits.
- ``decode_snapshot``: bytes from the topic to a ``VolumeSnapshot`` or a typed ``Rejection``.

Everything is pure: the time is an argument. Reading Kafka, the Admin client and the clock live
in the shell modules (``decision_service`` and its parts), which are not part of this API.
"""

from consumer.cluster_state import ClusterState
from consumer.limits import VolumeVerdict, judge_volume
from consumer.policy import DecisionPolicy
from schemas.decision import DecisionReason, OnMissing, QuotaDecision, QuotaState, ReasonKind
from schemas.decode import Rejection, decode_snapshot
from schemas.snapshot import VolumeSnapshot, VolumeUsage

__all__ = [
    "ClusterState",
    "DecisionPolicy",
    "DecisionReason",
    "OnMissing",
    "QuotaDecision",
    "QuotaState",
    "ReasonKind",
    "Rejection",
    "VolumeSnapshot",
    "VolumeUsage",
    "VolumeVerdict",
    "decode_snapshot",
    "judge_volume",
]
