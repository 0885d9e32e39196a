"""A short coverage-guided fuzz run of each decoder, in a subprocess, bounded in runs.

The atheris targets (``decode_fuzz_target.py``) check the Python contracts: the decoder never
raises and its hot path agrees with the pydantic model; the decision model raises nothing but
``ValidationError`` and reads back what it writes. The Jazzer target (``DecisionFileFuzzTarget``
in deploy/broker-plugin) checks the broker callback's reader: a decision or its own rejection,
never another exception, and an accepted decision maps to a quota between the floor and the
base. Each crash is counted and its input kept; none is allowed. The runner is the benchmark's
(``python -m benchmarks.decoder_fuzz --runs 1000000`` is the million-execution run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.decoder_fuzz import TARGETS, fuzz

RUNS = 30_000


@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_run_finds_no_crash(tmp_path: Path, target: str) -> None:
    report = fuzz(target, RUNS, tmp_path)
    assert report.exit_code == 0, report.stderr_tail
    assert report.executions == RUNS
    assert report.crashes == 0, (report.crash_inputs, report.stderr_tail)
    assert sum(report.outcomes.values()) >= RUNS - 1, report.outcomes
    accepted = [name for name in report.outcomes if name.startswith(("accepted", "applied"))]
    assert accepted, f"the fuzzer never reached a valid input: {report.outcomes}"
