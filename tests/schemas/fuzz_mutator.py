"""A structure-aware mutator for the fuzz targets: half of the mutations edit the JSON document.

libFuzzer's byte mutations mostly break the JSON text, so that nine inputs in ten stop at the
parser. This mutator parses the input (after its key prefix), changes one node - removes it,
replaces it with a hostile value, duplicates or wraps it - and writes the text back; the other
half of the time, and whenever the input is not JSON, libFuzzer mutates the bytes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import atheris

HOSTILE_VALUES: list[Any] = [
    *(None, True, False, 0, -1, 1, 2, 1.0, 0.5, -0.0, 100, 101, 1000.0, 1e308),
    *(2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63), 10**40),
    *("", "1", "3", "1000", "NaN", "x" * 4097, "\ud800", "/dev/a"),
    *("2026-11-22T12:00:00Z", "2026-11-22T12:00:00.123456789+05:30", "2026-11-22 12:00:00Z"),
    *("1970-01-01T00:00:00+23:59", "2999-12-31T23:59:59-23:59", "2026-02-29T12:00:00Z"),
    *("MinFreePercentage", "MinFreeBytes", "ConsumedSpace", "OPEN", "THROTTLE", "PAUSE"),
    [],
    {},
    {"type": "MinFreeBytes", "level": 5},
    {"type": "MinFreePercentage", "level": 15},
    {"volumeName": "/dev/b", "capacity": 10, "consumed": 5},
]


def _nodes(document: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in ``document``, breadth first, at most 200."""
    found: list[tuple[Any, Any]] = []
    pending = [document]
    while pending and len(found) < 200:
        container = pending.pop(0)
        slots = container.keys() if isinstance(container, dict) else range(len(container))
        for slot in list(slots):
            found.append((container, slot))
            if isinstance(container[slot], dict | list):
                pending.append(container[slot])
    return found


def mutate_document(document: Any, rng: random.Random) -> Any:
    if not isinstance(document, dict | list) or not (nodes := _nodes(document)):
        return rng.choice(HOSTILE_VALUES)
    container, slot = rng.choice(nodes)
    action = rng.randrange(5)
    if action == 0:
        del container[slot]
    elif action == 1 and isinstance(container, list):
        container.insert(slot, json.loads(json.dumps(container[slot])))
    elif action == 2:
        container[slot] = [container[slot]]
    elif action == 3 and isinstance(container, dict):
        container[rng.choice(["x", "iops", str(slot).upper(), "softLimit"])] = container[slot]
    else:
        container[slot] = rng.choice(HOSTILE_VALUES)
    return document


def structured_mutator(keyed: bool) -> Callable[[bytes, int, int], bytes]:
    """atheris' ``custom_mutator``; with ``keyed``, byte 0 and the key it announces are kept."""

    def mutate(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        prefix = 1 + data[0] % 13 if keyed and data else 0
        try:
            if rng.random() < 0.5:
                raise ValueError("a byte mutation this time")
            document = json.loads(data[prefix:])
            text = json.dumps(mutate_document(document, rng), ensure_ascii=rng.random() < 0.5)
            return (data[:prefix] + text.encode("utf-8", "surrogatepass"))[:max_size]
        except (ValueError, RecursionError, TypeError, OverflowError):
            return bytes(atheris.Mutate(data, max_size))

    return mutate
