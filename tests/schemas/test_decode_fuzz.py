"""A short coverage-guided fuzz run (atheris) of each target, in a subprocess, bounded in runs.

The targets (``decode_fuzz_target.py``) check the contracts: the decoder never raises and its hot
path agrees with the pydantic model; the decision model raises nothing but ``ValidationError``
and reads back what it writes. Each crash is counted and its input kept; none is allowed. The
million-execution run is ``python -m benchmarks.decoder_fuzz --runs 1000000``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.schemas.differential_corpus import HAND_TABLE

FUZZ_TARGET = Path(__file__).with_name("decode_fuzz_target.py")
REPOSITORY = Path(__file__).resolve().parents[2]
RUNS = 30_000
DECISION_SEED = (
    b'{"schemaVersion":1,"decidedAt":"2026-11-22T12:00:00.000Z",'
    b'"validUntil":"2026-11-22T12:00:05.000Z","state":"THROTTLE","throttleFactor":0.5,'
    b'"causedByMissingData":false,"unknownBrokers":[4],"reasons":[{"kind":"limit",'
    b'"brokerId":3,"state":"THROTTLE","throttleFactor":0.5,"detail":"soft zone"}]}'
)


def _seeds(target: str) -> list[bytes]:
    if target == "decision":
        return [DECISION_SEED]
    return [b"\x00" + value for _, value, _ in HAND_TABLE if len(value) < 4096]


@pytest.mark.parametrize("target", ["snapshot", "decision"])
def test_atheris_fuzz_run_finds_no_crash(tmp_path: Path, target: str) -> None:
    corpus = tmp_path / "corpus"
    crashes = tmp_path / "crashes"
    corpus.mkdir()
    crashes.mkdir()
    for index, seed in enumerate(_seeds(target)):
        (corpus / f"seed{index}").write_bytes(seed)
    counts_file = tmp_path / "counts.json"
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPOSITORY),
        "FUZZ_RUNS": str(RUNS),
        "FUZZ_COUNTS_FILE": str(counts_file),
        "FUZZ_CRASH_DIRECTORY": str(crashes),
    }
    result = subprocess.run(
        [
            *(sys.executable, str(FUZZ_TARGET), "--target", target, f"-runs={RUNS}"),
            *("-max_len=4096", f"-artifact_prefix={crashes}/", str(corpus)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=environment,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"Done {RUNS} runs" in result.stderr
    counts = json.loads(counts_file.read_text())
    assert counts.get("crash", 0) == 0, (sorted(crashes.iterdir()), result.stderr[-4000:])
    assert sum(counts.values()) >= RUNS - 1, counts
    assert counts.get("accepted", 0) > 0, f"the fuzzer never reached a valid input: {counts}"
