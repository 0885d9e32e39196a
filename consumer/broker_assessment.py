"""One broker's snapshot reduced to what the cluster decision needs: its worst volumes."""

from __future__ import annotations

from dataclasses import dataclass

from consumer.limits import ResolvedVolume, VolumeVerdict, judge_free_space, resolve_volume
from schemas.decision import QuotaState
from schemas.snapshot import VolumeSnapshot


@dataclass(frozen=True, slots=True)
class BrokerAssessment:
    """A broker's newest snapshot, judged; ``breaches`` are volumes past a limit, worst first."""

    snapshot: VolumeSnapshot
    snapshot_timestamp: float
    resolved: tuple[ResolvedVolume, ...]
    state: QuotaState
    throttle_factor: float
    breaches: tuple[VolumeVerdict, ...]

    @property
    def broker_id(self) -> int:
        return self.snapshot.broker_id


def assess_broker(snapshot: VolumeSnapshot) -> BrokerAssessment:
    """Resolve every volume's limits, then judge them (see ``judge_resolved``)."""
    soft, hard = snapshot.soft_limit, snapshot.hard_limit
    resolved = tuple(resolve_volume(volume, soft, hard) for volume in snapshot.volumes)
    return judge_resolved(snapshot, snapshot.snapshot_at.timestamp(), resolved)


def judge_resolved(
    snapshot: VolumeSnapshot, snapshot_timestamp: float, resolved: tuple[ResolvedVolume, ...]
) -> BrokerAssessment:
    """Judge each volume: the broker's factor is the smallest, its state the most severe.

    This is the loop a full recompute runs 160,000 times for a 10,000 x 16 cluster, so the common
    case (an OPEN volume) is one inlined comparison and no allocation.
    """
    breaches: list[VolumeVerdict] = []
    for index, (free, soft, hard) in enumerate(resolved):
        if free > hard and (free > soft or soft <= hard):
            continue
        state, factor = judge_free_space(free, soft, hard)
        breaches.append(VolumeVerdict(snapshot.volumes[index], state, factor, soft, hard))
    if not breaches:
        return BrokerAssessment(snapshot, snapshot_timestamp, resolved, QuotaState.OPEN, 1.0, ())
    breaches.sort(key=lambda verdict: verdict.throttle_factor)
    worst = breaches[0]
    state = QuotaState.PAUSE if worst.state is QuotaState.PAUSE else QuotaState.THROTTLE
    return BrokerAssessment(
        snapshot, snapshot_timestamp, resolved, state, worst.throttle_factor, tuple(breaches)
    )
