"""atheris fuzz targets: the snapshot decoder and the decision-file model.

Run as ``python THIS --target snapshot|decision [libFuzzer options] [corpus dirs]``; driven by
``tests/schemas/test_decode_fuzz.py`` (a short run in CI) and ``benchmarks/decoder_fuzz.py``
(a million executions). Every execution is counted by outcome: ``accepted``, a rejection reason
(the decoder) or pydantic error type (the decision model), or ``crash``. A crash is any exception
the contract does not allow, a verdict on which the hot path and the pydantic model differ, or
an accepted message that its own re-encoding does not reproduce; its input is saved to the
``FUZZ_CRASH_DIRECTORY`` and fuzzing goes on, so that every crash is counted. The counts are
written as JSON to ``FUZZ_COUNTS_FILE`` every 10,000 executions and at each of the last
executions when ``FUZZ_RUNS`` (the ``-runs`` given to libFuzzer) is set.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import atheris
from pydantic import ValidationError

from schemas import decision, decode, fast_decode, json_text, snapshot, wire_types
from schemas.decision import QuotaDecision
from schemas.decode import Rejection, decode_snapshot, decode_snapshot_reference
from schemas.snapshot import VolumeSnapshot
from tests.schemas.fuzz_mutator import structured_mutator

# Coverage feedback from our own modules, instrumented in place (the editable install's import
# hook hides them from ``atheris.instrument_imports``); pydantic validates in Rust, unseen.
for _module in (decode, decision, fast_decode, json_text, snapshot, wire_types):
    for _function in list(vars(_module).values()):
        if inspect.isfunction(_function) and _function.__module__ == _module.__name__:
            _function.__code__ = atheris.instrument_func(_function).__code__

COUNTS: Counter[str] = Counter()
_COUNTS_FILE = os.environ.get("FUZZ_COUNTS_FILE")
_RUNS = int(os.environ.get("FUZZ_RUNS", "0"))
"""libFuzzer ends the process without running ``atexit``: the last executions write counts."""
_CRASH_DIRECTORY = os.environ.get("FUZZ_CRASH_DIRECTORY")


def split_input(data: bytes) -> tuple[bytes | None, bytes]:
    """First byte: the key's length modulo 13 (0: no key); then the key; the rest is the value."""
    if not data:
        return None, b""
    length = data[0] % 13
    return data[1 : 1 + length] or None, data[1 + length :]


def snapshot_outcome(data: bytes) -> str:
    key, value = split_input(data)
    fast = decode_snapshot(value, key)
    reference = decode_snapshot_reference(value, key)
    if isinstance(fast, Rejection) or isinstance(reference, Rejection):
        if not (isinstance(fast, Rejection) and isinstance(reference, Rejection)):
            raise AssertionError(f"verdicts differ: hot path {fast!r}, model {reference!r}")
        if (fast.reason, fast.broker_id) != (reference.reason, reference.broker_id):
            raise AssertionError(f"rejections differ: hot path {fast}, model {reference}")
        return fast.reason.value
    if fast != reference or fast.to_json_bytes() != reference.to_json_bytes():
        raise AssertionError("the hot path and the model built different snapshots")
    if not isinstance(decode_snapshot(fast.to_json_bytes()), VolumeSnapshot):
        raise AssertionError("an accepted snapshot's re-encoding is refused")
    return "accepted"


def decision_outcome(data: bytes) -> str:
    try:
        decision = QuotaDecision.model_validate_json(data)
    except ValidationError as error:
        return f"rejected: {error.errors(include_url=False)[0]['type']}"
    written = decision.to_json_bytes()
    if QuotaDecision.model_validate_json(written).to_json_bytes() != written:
        raise AssertionError("an accepted decision's re-encoding does not read back the same")
    return "accepted"


TARGETS: dict[str, Callable[[bytes], str]] = {
    "snapshot": snapshot_outcome,
    "decision": decision_outcome,
}


def _write_counts() -> None:
    if _COUNTS_FILE:
        Path(_COUNTS_FILE).write_text(json.dumps(dict(COUNTS), sort_keys=True))


def _record_crash(data: bytes) -> None:
    COUNTS["crash"] += 1
    traceback.print_exc(file=sys.stderr)
    if _CRASH_DIRECTORY:
        name = "crash-" + hashlib.sha256(data).hexdigest()[:16]
        (Path(_CRASH_DIRECTORY) / name).write_bytes(data)


def fuzz_with(outcome: Callable[[bytes], str]) -> Callable[[bytes], None]:
    def fuzz_one(data: bytes) -> None:
        try:
            COUNTS[outcome(data)] += 1
        except Exception:  # every crash is counted and kept, and fuzzing goes on
            _record_crash(data)
        executions = sum(COUNTS.values())
        if executions % 10_000 == 0 or executions >= _RUNS - 1:
            _write_counts()

    return fuzz_one


def main(arguments: list[str]) -> None:
    target = "snapshot"
    if "--target" in arguments:
        position = arguments.index("--target")
        target = arguments[position + 1]
        del arguments[position : position + 2]
    mutator = structured_mutator(keyed=target == "snapshot")
    atheris.Setup(arguments, fuzz_with(TARGETS[target]), custom_mutator=mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
