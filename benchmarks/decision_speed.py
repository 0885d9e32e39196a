"""Speed of the decision path: ``python -m benchmarks.decision_speed`` (about a minute).

Targets (issue 2): reading the current decision < 1 us; one broker's new snapshot in a
10,000-broker x 16-volume cluster < 100 us; a full recompute of that cluster < 100 ms; decoding
and validating >= 20,000 snapshots per second on one core. Each figure comes with the baseline it
is compared with, measured in the same run.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial

from benchmarks.machine import describe_machine
from consumer.cluster_state import ClusterState
from consumer.current_decision import CurrentDecision
from consumer.policy import DecisionPolicy
from schemas.decode import decode_snapshot
from schemas.snapshot import VolumeSnapshot

BROKERS = 10_000
VOLUMES = 16
CAPACITY = 4 * 1024**4
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def snapshot_bytes(
    broker_id: int, rng: random.Random, at: datetime, volumes: int = VOLUMES
) -> bytes:
    """A realistic snapshot: most volumes well below the soft limit, about 1 % in the soft zone."""
    volume_documents = []
    for index in range(volumes):
        free_share = rng.uniform(0.15, 0.18) if rng.random() < 0.01 else rng.uniform(0.3, 0.9)
        volume_documents.append(
            {
                "volumeName": f"/dev/nvme{index}n1",
                "path": f"/var/lib/kafka/data-{index}",
                "capacity": CAPACITY,
                "consumed": int(CAPACITY * (1 - free_share)),
            }
        )
    return json.dumps(
        {
            "schemaVersion": 1,
            "brokerId": broker_id,
            "snapshotAt": at.isoformat(),
            "softLimit": {"type": "MinFreePercentage", "level": 20},
            "hardLimit": {"type": "MinFreeBytes", "level": 100 * 1024**3},
            "volumes": volume_documents,
        }
    ).encode()


def per_call_seconds(action: Callable[[], object], calls: int, repeats: int = 5) -> float:
    """Best-of-``repeats`` mean time per call (the minimum filters scheduler noise)."""
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            action()
        timings.append((time.perf_counter() - start) / calls)
    return min(timings)


def decoded(value: bytes) -> VolumeSnapshot:
    snapshot = decode_snapshot(value)
    assert isinstance(snapshot, VolumeSnapshot), snapshot
    return snapshot


def decode_all(values: list[bytes]) -> object:
    return [decode_snapshot(value) for value in values]


def json_loads_all(values: list[bytes]) -> object:
    return [json.loads(value) for value in values]


def main() -> None:
    rng = random.Random(20261122)
    print(f"machine: {describe_machine()}")
    print(f"building a {BROKERS}-broker x {VOLUMES}-volume cluster ...", flush=True)
    values = [snapshot_bytes(broker, rng, NOW) for broker in range(BROKERS)]
    snapshots = [decoded(value) for value in values]
    # Stale-after of a day: the updates below are dated up to ~2,000 s after NOW, and every
    # broker must stay fresh, or the benchmark would measure a cluster of 10,000 unknown brokers.
    state = ClusterState(DecisionPolicy(stale_after_seconds=86_400))
    for snapshot in snapshots:
        state.apply_snapshot(snapshot)
    state.set_live_brokers(range(BROKERS))
    decision = state.decide(NOW)
    print(f"cluster decision: {decision.state} factor {decision.throttle_factor:.3f}")

    results: dict[str, float] = {}

    # 1. Reading the decision in force, against an empty function call.
    current = CurrentDecision(decision)

    def read_decision() -> object:
        return current.decision

    def empty_call() -> object:
        return None

    results["read_us"] = per_call_seconds(read_decision, 1_000_000) * 1e6
    results["empty_call_us"] = per_call_seconds(empty_call, 1_000_000) * 1e6

    # 2. One broker's new snapshot -> new decision, against a full recompute.
    updates = [
        decoded(snapshot_bytes(rng.randrange(BROKERS), rng, NOW + timedelta(seconds=1 + i)))
        for i in range(2_000)
    ]
    update_iter = iter(updates * 5)

    def incremental_update() -> object:
        state.apply_snapshot(next(update_iter))
        return state.decide(NOW + timedelta(seconds=3_000))

    results["incremental_us"] = per_call_seconds(incremental_update, 2_000) * 1e6

    def full_recompute() -> object:
        state.rebuild()
        return state.decide(NOW + timedelta(seconds=3_000))

    full_runs = [per_call_seconds(full_recompute, 1, repeats=1) for _ in range(5)]
    results["full_recompute_ms"] = min(full_runs) * 1e3
    results["full_recompute_median_ms"] = statistics.median(full_runs) * 1e3

    # 3. Decoding + validation, against the standard library's bare json.loads (no validation).
    sample = values[:5_000]
    one_volume = [snapshot_bytes(broker, rng, NOW, volumes=1) for broker in range(5_000)]
    for label, batch in (("16_volumes", sample), ("1_volume", one_volume)):
        decode_seconds = per_call_seconds(partial(decode_all, batch), 1)
        loads_seconds = per_call_seconds(partial(json_loads_all, batch), 1)
        results[f"decode_per_second_{label}"] = len(batch) / decode_seconds
        results[f"json_loads_per_second_{label}"] = len(batch) / loads_seconds

    print(json.dumps(results, indent=2))
    print()
    print("| measure | result | target | baseline (same run) |")
    print("|---|---|---|---|")
    print(
        f"| read the current decision | {results['read_us'] * 1000:.0f} ns | < 1 us | "
        f"empty function call {results['empty_call_us'] * 1000:.0f} ns "
        f"(x{results['read_us'] / results['empty_call_us']:.2f}) |"
    )
    print(
        f"| one broker's new snapshot -> new decision (10k x 16) | "
        f"{results['incremental_us']:.1f} us | < 100 us | full recompute is "
        f"x{results['full_recompute_ms'] * 1000 / results['incremental_us']:.0f} slower |"
    )
    print(
        f"| full recompute (10k x 16 = 160k volumes) | {results['full_recompute_ms']:.1f} ms "
        f"(median {results['full_recompute_median_ms']:.1f}) | < 100 ms | - |"
    )
    for label in ("16_volumes", "1_volume"):
        rate = results[f"decode_per_second_{label}"]
        baseline = results[f"json_loads_per_second_{label}"]
        print(
            f"| decode + validate, {label.replace('_', ' ')} per snapshot | {rate:,.0f}/s | "
            f">= 20,000/s | json.loads without validation {baseline:,.0f}/s "
            f"(x{baseline / rate:.2f} faster) |"
        )


if __name__ == "__main__":
    main()
