"""Which dates of a history dataset have a valid stored rollup (pure: no Spark, no I/O).

A date's **manifest** (``rollup_store`` keeps one per date, as JSON) lists the raw files its
rollup was computed from, as the dataset's log listed them, and the rollup files that hold it.
:func:`compare` sets the manifests against the files the log lists now.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Manifest:
    """What one date's rollup was computed from, and where it is."""

    date: str
    raw_files: tuple[str, ...]
    """The raw partition's files, as the dataset's log listed them, sorted."""
    rollup_files: tuple[str, ...]
    """The rollup's files of the date (URIs), sorted."""
    rows: int
    """Rollup rows of the date."""
    columns: tuple[str, ...] = ()
    """The rollup's columns when it was computed (none in manifests older than this field): a
    rollup whose columns are not the ones the code computes now is stale."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "date": self.date,
                "rawFiles": list(self.raw_files),
                "rollupFiles": list(self.rollup_files),
                "rows": self.rows,
                "columns": list(self.columns),
            },
            indent=1,
        )

    @staticmethod
    def from_json(text: str) -> Manifest:
        data = json.loads(text)
        return Manifest(
            date=str(data["date"]),
            raw_files=tuple(str(path) for path in data["rawFiles"]),
            rollup_files=tuple(str(path) for path in data["rollupFiles"]),
            rows=int(data["rows"]),
            columns=tuple(str(name) for name in data.get("columns", ())),
        )


@dataclass(frozen=True, slots=True)
class RollupState:
    """The rollup of a dataset against its raw partitions now."""

    valid: dict[str, Manifest]
    """Dates whose manifest matches the raw partition: their rollup files are read."""
    stale: tuple[str, ...]
    """Dates with raw files and no matching manifest: computed from raw."""
    gone: tuple[str, ...]
    """Dates with a manifest and no raw files any more."""
    appended: dict[str, Manifest] = field(default_factory=dict)
    """The stale dates whose manifest's raw files are all still listed and whose rollup has
    files: raw files were only added since, so the refresh extends that rollup with the new
    files' rows (a date of tombstones only, with no rollup file, is simply recomputed)."""


def compare(
    listed: dict[str, tuple[str, ...]], manifests: Iterable[Manifest], columns: tuple[str, ...]
) -> RollupState:
    """Pure: which dates' rollups match their raw partitions, of those with ``columns`` (a
    rollup of other columns, from an older release, is recomputed whole)."""
    every = {manifest.date: manifest for manifest in manifests}
    known = {date: manifest for date, manifest in every.items() if manifest.columns == columns}
    valid = {
        date: manifest
        for date, manifest in known.items()
        if listed.get(date) == tuple(sorted(manifest.raw_files))
    }
    stale = tuple(date for date in listed if date not in valid)
    gone = tuple(date for date in every if date not in listed)
    appended = {
        date: known[date]
        for date in stale
        if date in known
        and known[date].rollup_files
        and set(known[date].raw_files) < set(listed[date])
    }
    return RollupState(valid, stale, gone, appended)
