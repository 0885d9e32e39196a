"""Reaction and recovery of a real 3-broker cluster: ``python -m benchmarks.e2e_reaction``.

Runs the end-to-end suite (tests/e2e: real Kafka, the quota callback, one sidecar per broker,
tmpfs volumes; needs root and the callback jar from `mvn -q package` in deploy/broker-plugin) and
prints the figures it measured: reaction (hard-limit breach on broker 2 -> every broker's
callback applies PAUSE), recovery (space freed -> producers back to 90 % of their base rate),
the fail-safe delay, and the producer rates in each state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.machine import describe_machine

TARGETS = {
    "reaction_seconds": "under 3 s (the nearest existing plugin checks every 60 s)",
    "recovery_seconds": "producers at >= 90 % within 30 s",
}


def main() -> int:
    with tempfile.TemporaryDirectory() as directory:
        timings_file = Path(directory) / "timings.json"
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "tests/e2e", "-q", "-p", "no:cacheprovider"],
            env={**os.environ, "VOLUME_QUOTA_E2E_TIMINGS": str(timings_file)},
            check=False,
        )
        if result.returncode != 0 or not timings_file.exists():
            print("the end-to-end suite failed: no figures", file=sys.stderr)
            return 1
        timings = json.loads(timings_file.read_text())
    print(f"machine: {describe_machine()}")
    print("| measure | result | target |")
    print("|---|---|---|")
    for name, value in timings.items():
        print(f"| {name} | {value:.2f} | {TARGETS.get(name, '-')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
