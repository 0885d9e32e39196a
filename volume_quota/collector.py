"""The cyclic garbage collector as a decider process runs it (process-wide: daemons only).

Decoding one 16-volume snapshot allocates about 70 tracked objects (the parsed document, one
model per volume), and CPython runs a young-generation collection every 700 allocations by
default: every ten snapshots. In a process that holds a large cluster state those collections,
and the older-generation passes they trigger, cost more than the decoding itself. The snapshots
have no reference cycles (reference counting frees them), so a larger young generation keeps no
more memory alive; it only collects less often. Measured in ``benchmarks/decision_speed.py``
(docs/benchmarks.md): decoding with a live 10,000-broker state ran at about 16,000/s per core
with the default threshold and about 26,000/s with this one.
"""

from __future__ import annotations

import gc

YOUNG_GENERATION_THRESHOLD = 5_000
"""Allocations between two young-generation collections (CPython's default is 700)."""


def tune_for_decoding() -> None:
    """Collect the young generation every ``YOUNG_GENERATION_THRESHOLD`` allocations; the older
    generations' thresholds are kept."""
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, oldest)
