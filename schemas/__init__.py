"""Wire formats of volume-quota: the volume snapshot and the cluster decision.

The pydantic models here are the single source of truth; the JSON Schema files beside them are
generated (``python -m schemas``) and checked by a test.
"""

from schemas.decision import (
    DecisionReason,
    OnMissing,
    QuotaDecision,
    QuotaState,
    ReasonKind,
)
from schemas.decode import Rejection, RejectionReason, decode_snapshot
from schemas.snapshot import (
    ConsumedSpaceLimit,
    Limit,
    LimitType,
    MinFreeBytesLimit,
    MinFreePercentageLimit,
    VolumeSnapshot,
    VolumeUsage,
    snapshot_key,
)
from schemas.wire_types import format_instant

__all__ = [
    "ConsumedSpaceLimit",
    "DecisionReason",
    "Limit",
    "LimitType",
    "MinFreeBytesLimit",
    "MinFreePercentageLimit",
    "OnMissing",
    "QuotaDecision",
    "QuotaState",
    "ReasonKind",
    "Rejection",
    "RejectionReason",
    "VolumeSnapshot",
    "VolumeUsage",
    "decode_snapshot",
    "format_instant",
    "snapshot_key",
]
