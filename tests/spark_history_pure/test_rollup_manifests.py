"""Which dates' stored rollups are read, recomputed, or extended with appended files."""

from __future__ import annotations

from spark_history.rollup_manifests import Manifest, compare

RAW = "file:/data/date={date}/part-{n}.parquet"
COLUMNS = ("brokerId", "volumeName", "hourEnd", "minFree")


def _raw(date: str, *numbers: int) -> tuple[str, ...]:
    return tuple(RAW.format(date=date, n=n) for n in numbers)


def _manifest(
    date: str, *numbers: int, rollup: bool = True, columns: tuple[str, ...] = COLUMNS
) -> Manifest:
    files = (f"file:/data/_rollup/hourly/date={date}/r.parquet",) if rollup else ()
    return Manifest(date, _raw(date, *numbers), files, 10 if rollup else 0, columns)


def test_each_date_is_valid_stale_appended_or_gone() -> None:
    listed = {
        "2026-11-20": _raw("2026-11-20", 1, 2),  # unchanged since its rollup
        "2026-11-21": _raw("2026-11-21", 1, 2, 3),  # an ingest appended file 3
        "2026-11-22": _raw("2026-11-22", 9),  # compacted: 1 and 2 became 9
        "2026-11-23": _raw("2026-11-23", 1),  # never rolled up
        "2026-11-24": _raw("2026-11-24", 1, 2),  # tombstones only before: no rollup file
    }
    manifests = [
        _manifest("2026-11-20", 2, 1),
        _manifest("2026-11-21", 1, 2),
        _manifest("2026-11-22", 1, 2),
        _manifest("2026-11-24", 1, rollup=False),
        _manifest("2026-11-19", 1),  # its raw partition is gone
    ]
    state = compare(listed, manifests, COLUMNS)
    assert sorted(state.valid) == ["2026-11-20"]
    assert state.stale == ("2026-11-21", "2026-11-22", "2026-11-23", "2026-11-24")
    assert state.appended == {"2026-11-21": manifests[1]}
    assert state.gone == ("2026-11-19",)


def test_a_date_that_lost_a_file_and_gained_another_is_recomputed() -> None:
    listed = {"2026-11-21": _raw("2026-11-21", 1, 3)}
    state = compare(listed, [_manifest("2026-11-21", 1, 2)], COLUMNS)
    assert state.stale == ("2026-11-21",)
    assert state.appended == {}


def test_a_manifest_survives_its_json() -> None:
    manifest = _manifest("2026-11-21", 1, 2)
    assert Manifest.from_json(manifest.to_json()) == manifest


def test_a_rollup_of_other_columns_is_recomputed_whole() -> None:
    """A rollup an older release stored (its manifest names no columns, or others) is neither
    read nor extended: its rows lack what the code reads now."""
    listed = {"2026-11-20": _raw("2026-11-20", 1), "2026-11-21": _raw("2026-11-21", 1, 2)}
    older = [
        _manifest("2026-11-20", 1, columns=()),
        _manifest("2026-11-21", 1, columns=COLUMNS[:-1]),
        _manifest("2026-11-19", 1, columns=()),
    ]
    state = compare(listed, older, COLUMNS)
    assert state.valid == {}
    assert state.stale == ("2026-11-20", "2026-11-21")
    assert state.appended == {}
    assert state.gone == ("2026-11-19",)


def test_a_manifest_without_columns_reads_as_none() -> None:
    text = _manifest("2026-11-21", 1).to_json().replace('"columns"', '"ignored"')
    assert Manifest.from_json(text).columns == ()
