"""One broker's snapshot reduced to what the cluster decision needs: its worst volume."""

from __future__ import annotations

from dataclasses import dataclass

from consumer.limits import VolumeVerdict, judge_volume
from schemas.decision import QuotaState
from schemas.snapshot import VolumeSnapshot


@dataclass(frozen=True, slots=True)
class BrokerAssessment:
    """A broker's newest snapshot, judged; ``breaches``: its volumes past a limit, worst first."""

    snapshot: VolumeSnapshot
    snapshot_timestamp: float
    state: QuotaState
    throttle_factor: float
    breaches: tuple[VolumeVerdict, ...]

    @property
    def broker_id(self) -> int:
        return self.snapshot.broker_id


def assess_broker(snapshot: VolumeSnapshot) -> BrokerAssessment:
    """Judge every volume; the broker's factor is the smallest, its state the most severe."""
    breaches = []
    factor = 1.0
    for volume in snapshot.volumes:
        verdict = judge_volume(volume, snapshot.soft_limit, snapshot.hard_limit)
        if verdict.state is not QuotaState.OPEN:
            breaches.append(verdict)
            factor = min(factor, verdict.throttle_factor)
    breaches.sort(key=lambda verdict: verdict.throttle_factor)
    if not breaches:
        state = QuotaState.OPEN
    elif breaches[0].state is QuotaState.PAUSE:
        state = QuotaState.PAUSE
    else:
        state = QuotaState.THROTTLE
    return BrokerAssessment(
        snapshot=snapshot,
        snapshot_timestamp=snapshot.snapshot_at.timestamp(),
        state=state,
        throttle_factor=factor,
        breaches=tuple(breaches),
    )
