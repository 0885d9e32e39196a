"""Fuzzing at scale: ``python -m benchmarks.decoder_fuzz --runs 1000000`` (a few minutes).

Runs the atheris targets of ``tests/schemas/decode_fuzz_target.py`` - the snapshot decoder (hot
path and pydantic reference side by side) and the decision-file model
(``QuotaDecision.model_validate_json``) - and the Jazzer target of the broker callback's
decision-file reader (``DecisionFileFuzzTarget`` in deploy/broker-plugin: parse, validity, quota),
each for ``--runs`` executions, seeded with the differential test's hand-written corpus (or a
decision file) and a JSON token dictionary, and reports executions, crashes (must be 0) and every
outcome counted. Exits 1 on any crash. The Java target needs the plugin built
(``mvn -q package`` in deploy/broker-plugin writes its class path).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.machine import describe_machine
from schemas.decision import DecisionReason, QuotaDecision, QuotaState, ReasonKind
from tests.schemas.differential_corpus import HAND_TABLE

REPOSITORY = Path(__file__).resolve().parents[1]
TARGET = REPOSITORY / "tests" / "schemas" / "decode_fuzz_target.py"
PLUGIN = REPOSITORY / "deploy" / "broker-plugin" / "target"
JAVA_TARGET = "io.volumequota.broker.DecisionFileFuzzTarget"
TARGETS = ("snapshot", "decision", "java-decision")
MAX_LENGTH = 8192
NAMES = [
    *("schemaVersion", "brokerId", "snapshotAt", "softLimit", "hardLimit", "volumes"),
    *("volumeName", "path", "capacity", "consumed", "type", "level"),
    *("MinFreePercentage", "MinFreeBytes", "ConsumedSpace"),
    *("decidedAt", "validUntil", "state", "throttleFactor", "causedByMissingData"),
    *("unknownBrokers", "reasons", "reasonsOmitted", "kind", "OPEN", "THROTTLE", "PAUSE"),
]
TOKENS = [
    *(f'"{name}"' for name in NAMES),
    *("{", "}", "[", "]", ":", ",", "true", "false", "null", "NaN", "Infinity", "-0", "1e400"),
    *("9223372036854775807", "2147483648", "1.0", "\\ud800", "\\u0000"),
    '"2026-11-22T12:00:00Z"',
    '"2026-11-22T12:00:00.123456789+23:59"',
]


@dataclass(frozen=True)
class FuzzReport:
    target: str
    exit_code: int
    executions: int
    seconds: float
    crashes: int
    outcomes: dict[str, int]
    crash_inputs: list[str]
    stderr_tail: str


def _decision_seeds() -> list[bytes]:
    moment = datetime(2026, 11, 22, 12, tzinfo=UTC)
    reason = DecisionReason(
        kind=ReasonKind.LIMIT,
        broker_id=3,
        state=QuotaState.THROTTLE,
        throttle_factor=0.5,
        volume_name="/dev/a",
        free_bytes=10,
        capacity_bytes=100,
        soft_threshold_bytes=20.0,
        hard_threshold_bytes=5.0,
        snapshot_at=moment,
        detail="volume /dev/a is in its soft zone",
    )
    decision = QuotaDecision(
        decided_at=moment,
        valid_until=moment,
        state=QuotaState.THROTTLE,
        throttle_factor=0.5,
        caused_by_missing_data=False,
        unknown_brokers=[4],
        reasons=[reason],
    )
    written = decision.to_json_bytes()
    return [written, written.replace(b'"THROTTLE"', b'"PAUSE"', 1), b"{}"]


def write_seeds(directory: Path, target: str) -> None:
    if target in {"decision", "java-decision"}:
        seeds = _decision_seeds()
    else:
        # Byte 0 is the key's length (0: none); "3" is the broker the table's documents claim.
        values = [value for _, value, _ in HAND_TABLE if len(value) < MAX_LENGTH]
        seeds = [b"\x00" + value for value in values] + [b"\x01" + b"3" + values[0]]
    for index, seed in enumerate(seeds):
        (directory / f"seed-{index:04d}").write_bytes(seed)


def _runner(target: str) -> list[str]:
    """The fuzzer's command line before libFuzzer's own options."""
    if target != "java-decision":
        return [sys.executable, str(TARGET), "--target", target]
    classpath_file = PLUGIN / "test-classpath.txt"
    if not classpath_file.exists():
        raise SystemExit(f"{classpath_file} is missing: `mvn -q package` in deploy/broker-plugin")
    classpath = [
        *(str(PLUGIN / "classes"), str(PLUGIN / "test-classes")),
        classpath_file.read_text().strip(),
    ]
    return [
        *("java", "-cp", os.pathsep.join(classpath), "com.code_intelligence.jazzer.Jazzer"),
        f"--target_class={JAVA_TARGET}",
        "--instrumentation_includes=io.volumequota.**:com.fasterxml.jackson.**",
    ]


def fuzz(target: str, runs: int, work: Path) -> FuzzReport:
    corpus = work / f"corpus-{target}"
    crashes = work / f"crashes-{target}"
    corpus.mkdir()
    crashes.mkdir()
    write_seeds(corpus, target)
    dictionary = work / "json.dict"
    dictionary.write_text("".join(f"{json.dumps(token)}\n" for token in TOKENS))
    counts_file = work / f"counts-{target}.json"
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPOSITORY),
        "FUZZ_RUNS": str(runs),
        "FUZZ_COUNTS_FILE": str(counts_file),
        "FUZZ_CRASH_DIRECTORY": str(crashes),
    }
    command = [*_runner(target), f"-runs={runs}", f"-max_len={MAX_LENGTH}"]
    command += [f"-dict={dictionary}", f"-artifact_prefix={crashes}/"]
    started = time.perf_counter()
    result = subprocess.run(
        [*command, str(corpus)], capture_output=True, text=True, env=environment, check=False
    )
    seconds = time.perf_counter() - started
    done = re.search(r"Done (\d+) runs", result.stderr)
    counts: dict[str, int] = json.loads(counts_file.read_text()) if counts_file.exists() else {}
    return FuzzReport(
        target=target,
        exit_code=result.returncode,
        executions=int(done.group(1)) if done else 0,
        seconds=round(seconds, 1),
        crashes=counts.get("crash", 0) + (result.returncode != 0),
        outcomes=dict(sorted(counts.items(), key=lambda item: -item[1])),
        crash_inputs=sorted(path.name for path in crashes.iterdir()),
        stderr_tail=result.stderr[-2000:] if result.returncode else "",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1_000_000, help="executions per target")
    parser.add_argument(
        "--targets", default=",".join(TARGETS), help=f"comma-separated, of {', '.join(TARGETS)}"
    )
    arguments = parser.parse_args()
    print(f"machine: {describe_machine()}; load average {os.getloadavg()[0]:.1f}", flush=True)
    reports = []
    with tempfile.TemporaryDirectory(prefix="decoder-fuzz-") as work:
        for target in arguments.targets.split(","):
            reports.append(fuzz(target, arguments.runs, Path(work)))
            print(json.dumps(asdict(reports[-1]), indent=2), flush=True)
    print("\n| target | executions | seconds | executions/s | crashes | outcomes |")
    print("|---|---|---|---|---|---|")
    for report in reports:
        outcomes = ", ".join(f"{name} {count:,}" for name, count in report.outcomes.items())
        rate = report.executions / max(report.seconds, 0.1)
        print(
            f"| {report.target} | {report.executions:,} | {report.seconds} | "
            f"{rate:,.0f} | {report.crashes} | {outcomes} |"
        )
    sys.exit(1 if any(report.crashes for report in reports) else 0)


if __name__ == "__main__":
    main()
