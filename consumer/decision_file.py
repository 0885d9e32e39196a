"""Writing the decision where the broker's quota callback reads it: atomically, never torn."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from schemas.decision import QuotaDecision


def write_decision_atomically(path: Path, decision: QuotaDecision) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over ``path``.

    A reader sees either the old decision or the new one, never half of one, and a crash leaves
    the old file in place.
    """
    payload = decision.to_json_bytes()
    descriptor, temporary_name = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    try:
        with os.fdopen(descriptor, "wb") as temporary:
            temporary.write(payload)
            temporary.flush()
            os.fsync(temporary.fileno())
        os.chmod(temporary_name, 0o644)
        os.replace(temporary_name, path)
    except BaseException:
        Path(temporary_name).unlink(missing_ok=True)
        raise
