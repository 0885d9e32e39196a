"""atheris fuzz target for ``decode_snapshot``: run directly, e.g. ``python THIS -runs=100000``."""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from schemas.decode import Rejection, decode_snapshot
    from schemas.snapshot import VolumeSnapshot


def fuzz_one(data: bytes) -> None:
    provider = atheris.FuzzedDataProvider(data)
    key = provider.ConsumeBytes(provider.ConsumeIntInRange(0, 12)) or None
    value = provider.ConsumeBytes(provider.remaining_bytes())
    decoded = decode_snapshot(value, key)
    if not isinstance(decoded, VolumeSnapshot | Rejection):
        raise AssertionError(f"decoder returned {type(decoded)!r}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, fuzz_one)
    atheris.Fuzz()
