"""A coverage-guided fuzz run (atheris) of the decoder, in a subprocess, bounded in runs.

The fuzz target asserts the decoder's contract: it returns a snapshot or a Rejection and never
raises. A crash makes atheris exit non-zero and print the input that caused it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FUZZ_TARGET = Path(__file__).with_name("decode_fuzz_target.py")
CORPUS_SEEDS = [
    b'{"schemaVersion":1,"brokerId":3,"snapshotAt":"2026-11-22T12:00:00Z",'
    b'"softLimit":{"type":"MinFreePercentage","level":15},'
    b'"hardLimit":{"type":"MinFreeBytes","level":5},'
    b'"volumes":[{"volumeName":"/dev/a","capacity":10,"consumed":5}]}',
]


def test_atheris_fuzz_run_finds_no_crash(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for index, seed in enumerate(CORPUS_SEEDS):
        (corpus / f"seed{index}").write_bytes(seed)
    result = subprocess.run(
        [sys.executable, str(FUZZ_TARGET), "-runs=30000", "-max_len=4096", str(corpus)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Done 30000 runs" in result.stderr
